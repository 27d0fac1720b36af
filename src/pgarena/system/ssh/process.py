"""A process started on an SSH host (`RemoteProcess`: its status, CPU and memory, log, and stop by token and
session over a new connection), and the local state file that records every started process before it
starts, so that `ssh.host.reap_state_file` finds what a crashed run left."""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import psutil

from pgarena.results.atomic import write_text_atomic
from pgarena.system.pidregistry import is_alive
from pgarena.system.ssh.shell import (
    CLEAN_SH,
    LOG_SH,
    STATUS_SH,
    STOP_SH,
    USAGE_SH,
    RemoteUsage,
    parse_usage,
    remote_command,
)
from pgarena.system.ssh.transport import (
    DEFAULT_COMMAND_TIMEOUT_S,
    DEFAULT_COPY_TIMEOUT_S,
    SshError,
    SshTransport,
)

DEFAULT_STOP_GRACE_S = 10.0
"""Seconds between SIGTERM and SIGKILL when stopping a remote process tree."""
STATE_VERSION = 1
"""Version of the local state file (1: `owner` and `processes`, each with its host and id)."""

_ID_RE = re.compile(r"^[0-9a-f]{32}$")
_STATE_LOCK = threading.Lock()


class RemoteProcess:
    """A command `ssh.host.SshHost.start` started on a host: its session leader's pid `pgid` (= process group and
    session id; None until known) and the `id` (token) its processes carry."""

    def __init__(self, host: SshTransport, process_id: str, *, command: str, cwd: str, log_path: Path | None,
                 pgid: int | None = None) -> None:
        if not _ID_RE.match(process_id):
            raise ValueError(f"process id {process_id!r}: 32 hexadecimal digits")
        self.host = host
        self.id = process_id
        self.command = command
        self.cwd = cwd
        self.log_path = log_path
        self.pgid = pgid
        self.started_at = time.monotonic()
        """When `start` was called (time.monotonic(), as `process.ServerProcess.started_at`)."""
        self.started_wall_s = time.time()
        self._log_offset = 0
        self._stopped = False

    def __repr__(self) -> str:
        return f"RemoteProcess({self.host.destination!r}, pgid={self.pgid}, command={self.command!r})"

    def as_dict(self) -> dict:
        """The state file's record: how to reach the host, the id, the pid and where its log goes."""
        return {"id": self.id, "host": self.host.as_dict(), "pgid": self.pgid, "command": self.command,
                "cwd": self.cwd, "log_path": str(self.log_path) if self.log_path else None,
                "started_at": self.started_wall_s}

    def _script(self, script: str, *args: str, what: str, timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S) -> str:
        command = remote_command(script, self.host.remote_state_dir, self.id, *args)
        return self.host._call(command, timeout_s=timeout_s, what=what).stdout

    def _status(self) -> tuple[int, int | None]:
        members, code = 0, None
        for line in self._script(STATUS_SH, what="look at the started process").splitlines():
            key, _, value = line.partition(" ")
            if key == "members":
                members = int(value)
            elif key == "exit" and value.strip().lstrip("-").isdigit():
                code = int(value)
        return members, code

    def alive(self) -> bool:
        """True while any process of the tree runs on the host."""
        return self._status()[0] > 0

    def exit_code(self) -> int | None:
        """None while the tree runs; then the run command's exit status (128 + N: killed by signal N), or -1
        if none was recorded (its wrapper shell was killed, e.g. by `stop`)."""
        members, code = self._status()
        if members:
            return None
        return code if code is not None else -1

    def usage(self) -> RemoteUsage | None:
        """CPU seconds so far and resident memory now of the tree (`RemoteUsage`); None: not measured."""
        try:
            return parse_usage(self._script(USAGE_SH, what="read CPU and memory"))
        except (SshError, ValueError):
            return None

    def cpu_seconds(self) -> float | None:
        """CPU seconds the tree has used so far (`RemoteUsage.cpu_seconds`); None: not measured."""
        usage = self.usage()
        return usage.cpu_seconds if usage else None

    def rss_bytes(self) -> int | None:
        """Summed resident memory of the tree now (`RemoteUsage.rss_bytes`); None: not measured."""
        usage = self.usage()
        return usage.rss_bytes if usage else None

    def fetch_log(self) -> Path | None:
        """Append what the remote log gained since the last fetch to `log_path` (returned)."""
        if self.log_path is None:
            return None
        text = self._script(LOG_SH, str(self._log_offset + 1), what="fetch the log",
                            timeout_s=DEFAULT_COPY_TIMEOUT_S)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "a", encoding="utf-8") as log:
            log.write(text)
        self._log_offset += len(text.encode("utf-8", errors="replace"))
        return self.log_path

    def stop(self, grace_s: float = DEFAULT_STOP_GRACE_S) -> None:
        """SIGTERM every process of the tree, SIGKILL what is left after `grace_s`, fetch the log, remove the
        remote files and the state file's record (idempotent). SshError if the host cannot be reached (the
        record stays for `reap_state_file`) or a process survived SIGKILL."""
        if self._stopped:
            return
        _, _, left = stop_remote(self.host, self.id, grace_s)
        if left:
            raise SshError(f"{left} process(es) of {self.command!r} survived SIGKILL",
                           destination=self.host.destination)
        try:
            self.fetch_log()
        finally:
            self._script(CLEAN_SH, what="remove the pid and log files")
        if self.host.state_file is not None:
            untrack(self.host.state_file, self.id)
        self._stopped = True

    def __enter__(self) -> RemoteProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def stop_remote(host: SshTransport, process_id: str, grace_s: float) -> tuple[int, int, int]:
    """(found, killed with SIGKILL, left) after stopping the tree of `process_id` on `host`."""
    tries = max(1, math.ceil(grace_s * 10))
    command = remote_command(STOP_SH, host.remote_state_dir, process_id, str(tries))
    out = host._call(command, timeout_s=grace_s + 2 * DEFAULT_COMMAND_TIMEOUT_S, what="stop a started process").stdout
    for line in out.splitlines():
        fields = line.split()
        if fields[:1] == ["stopped"] and len(fields) == 4:
            return int(fields[1]), int(fields[2]), int(fields[3])
    raise SshError("the stop command printed no result", destination=host.destination, stderr=out)


def read_state(path: Path) -> dict | None:
    """The state file's content (None if there is none; SshError naming the file if it is unreadable)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise SshError(f"cannot read the SSH state file {path}: {exc}", destination="(state file)") from exc
    if not isinstance(data, dict) or not isinstance(data.get("processes"), list):
        raise SshError(f"{path} is not an SSH state file", destination="(state file)")
    return data


def _write_state(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(data, indent=2))


def _owner() -> dict:
    try:
        return {"pid": os.getpid(), "start_time": psutil.Process().create_time()}
    except psutil.Error:
        return {"pid": os.getpid(), "start_time": None}


def track(path: Path, record: dict) -> None:
    """Add (or replace) a started process's record."""
    with _STATE_LOCK:
        data = read_state(path) or {"version": STATE_VERSION, "owner": _owner(), "processes": []}
        data["processes"] = [p for p in data["processes"] if p.get("id") != record["id"]] + [record]
        _write_state(path, data)


def untrack(path: Path, process_id: str) -> None:
    """Forget a stopped process; the file goes with the last one."""
    with _STATE_LOCK:
        data = read_state(path)
        if data is None:
            return
        data["processes"] = [p for p in data["processes"] if p.get("id") != process_id]
        if data["processes"]:
            _write_state(path, data)
        else:
            path.unlink(missing_ok=True)


def owner_alive(owner: Mapping) -> bool:
    """True if the state file's `owner` (pid and start time) is a pgarena process still running."""
    try:
        pid = int(owner.get("pid", 0))
    except ValueError:
        return False
    return is_alive({"pid": pid, "start_time": owner.get("start_time")})


