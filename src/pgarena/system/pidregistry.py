"""The registry of one pgarena invocation (`PidRegistry`, `run_dir/pids.json`): pgarena's own pid and start
time, the machine and boot it runs on, a random token that every process it starts inherits in its
environment (`PGARENA_RUN_TOKEN`), the process groups of stacks and builds (pid + start time of each
leader), and the managed cluster's data directory (its `postmaster.pid` names the server). The registry
starts the watchdog; system/reaper.py stops what a registry names (its docstring has the three layers).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path

import psutil

from pgarena.results.atomic import write_text_atomic

PIDS_FILE = "pids.json"
TOKEN_VARIABLE = "PGARENA_RUN_TOKEN"
"""Environment variable carrying the run's token to every process pgarena starts (and their children)."""
DEFAULT_GRACE_S = 5.0
"""Seconds between SIGTERM (SIGQUIT for PostgreSQL) and SIGKILL when reaping."""
START_TIME_TOLERANCE_S = 0.05
"""Two start times (psutil's create_time, seconds since the epoch) closer than this are the same process."""


def start_time_of(pid: int) -> float | None:
    """The start of process `pid` (psutil's create_time, seconds since the epoch); None if it is gone."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def record_of(pid: int, role: str) -> dict:
    """A registry's record of process `pid`: its pid, start time and `role`."""
    return {"pid": pid, "start_time": start_time_of(pid), "role": role}


def is_alive(record: dict) -> bool:
    """True if the process of a `{"pid", "start_time"}` record still runs (same pid and same start time)."""
    started = start_time_of(record["pid"])
    if started is None or record.get("start_time") is None:
        return False
    if abs(started - record["start_time"]) > START_TIME_TOLERANCE_S:
        return False
    try:
        return psutil.Process(record["pid"]).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def write_state(path: Path, data: dict) -> None:
    """Write a registry (atomically) to `path`."""
    write_text_atomic(path, json.dumps(data, indent=2))


def read_state(run_dir: Path) -> dict | None:
    """The registry of a run folder (None: none, or unreadable)."""
    try:
        data = json.loads((run_dir / PIDS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class PidRegistry:
    """The processes of one pgarena invocation in `run_dir/pids.json`, and its watchdog.

    A context manager: entering records pgarena itself, puts the run's token into the environment that
    children inherit and starts the watchdog; leaving restores the environment, marks the registry
    finished and closes the watchdog's pipe (the watchdog then reaps whatever is still alive).
    `track`/`untrack` are what process.py calls for the process groups it starts.
    """

    def __init__(self, run_dir: Path, *, watchdog: bool = True) -> None:
        self.run_dir = run_dir
        self.path = run_dir / PIDS_FILE
        self.token = secrets.token_hex(16)
        self._watchdog_enabled = watchdog
        self._watchdog: subprocess.Popen | None = None
        self._saved_token: str | None = None
        self._state: dict = {}

    def __enter__(self) -> PidRegistry:
        self._state = {
            "owner": record_of(os.getpid(), "pgarena"),
            "machine": machine_identity(),
            "token": self.token,
            "started_at": dt.datetime.now(dt.timezone.utc).isoformat(),
            "finished": False,
            "watchdog": None,
            "processes": [],
            "postgres": [],
        }
        self._save()
        if self._watchdog_enabled:
            self._start_watchdog()
        # NOTE: the token goes into pgarena's own environment for as long as the run lasts, so that every
        # child (stacks, builds, generators, pg_ctl) and their children inherit it without each call site
        # passing it on; it is removed again on exit.
        self._saved_token = os.environ.get(TOKEN_VARIABLE)
        os.environ[TOKEN_VARIABLE] = self.token
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start_watchdog(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != TOKEN_VARIABLE}
        logs = self.run_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        with open(logs / "watchdog.log", "ab") as log:
            self._watchdog = subprocess.Popen(
                [sys.executable, "-m", "pgarena.system.reaper", str(self.run_dir)], stdin=subprocess.PIPE,
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self._state["watchdog"] = record_of(self._watchdog.pid, "watchdog")
        self._save()

    def _save(self) -> None:
        write_state(self.path, self._state)

    def _save_forgetting(self) -> None:
        """Save after forgetting a stopped process: a stale entry is harmless (its start time no longer
        matches anything), so a full disk here is not an error."""
        try:
            self._save()
        except OSError:
            pass

    def track(self, pid: int, role: str) -> None:
        """Record a process-group leader pgarena started (a stack, a build)."""
        self._state["processes"].append(record_of(pid, role))
        self._save()

    def untrack(self, pid: int) -> None:
        """Forget a process group once pgarena has stopped it."""
        self._state["processes"] = [p for p in self._state["processes"] if p["pid"] != pid]
        self._save_forgetting()

    def track_postgres(self, data_dir: Path, socket_dir: str | None) -> None:
        """Record a managed cluster's data directory before its server starts."""
        self._state["postgres"].append({"data_dir": str(data_dir), "socket_dir": socket_dir})
        self._save()

    def untrack_postgres(self, data_dir: Path) -> None:
        """Forget a managed cluster once its server has stopped."""
        self._state["postgres"] = [p for p in self._state["postgres"] if p["data_dir"] != str(data_dir)]
        self._save_forgetting()

    def close(self) -> None:
        """Restore the environment, mark the registry finished and let the watchdog reap and exit."""
        if self._saved_token is None:
            os.environ.pop(TOKEN_VARIABLE, None)
        else:
            os.environ[TOKEN_VARIABLE] = self._saved_token
        self._state["finished"] = True
        self._save_forgetting()  # a full disk: the watchdog still reaps from the last registry it read
        if self._watchdog is not None:
            self._watchdog.stdin.close()  # type: ignore[union-attr]
            try:
                self._watchdog.wait(timeout=DEFAULT_GRACE_S * 3)
            except subprocess.TimeoutExpired:
                pass
            self._watchdog = None


BOOT_ID_PATH = Path("/proc/sys/kernel/random/boot_id")
"""Linux's identifier of the current boot: a registry written before a reboot or on another machine has another."""


def machine_identity() -> dict:
    """This machine and boot as a registry records them: `{"boot_id", "hostname"}` (boot_id None off Linux)."""
    try:
        boot_id: str | None = BOOT_ID_PATH.read_text(encoding="ascii").strip() or None
    except OSError:
        boot_id = None
    return {"boot_id": boot_id, "hostname": socket.gethostname()}


def same_machine(state: dict) -> bool:
    """True if the registry was written on this machine in this boot: only then can its pids and start times
    name live processes here. A registry without the record (written before pgarena kept it) or copied from
    another machine is not acted on."""
    recorded, here = state.get("machine") or {}, machine_identity()
    if recorded.get("boot_id") and here["boot_id"]:
        return recorded["boot_id"] == here["boot_id"]
    return bool(recorded) and recorded.get("hostname") == here["hostname"] and not recorded.get("boot_id")

