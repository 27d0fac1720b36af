"""Nothing of a killed run is left behind: a pid registry in the run folder, a watchdog, and the reaper.

Three layers, because no single one reaches every process (docs/methodology.md, "A killed run"):

1. **Parent-death signal** (process.py): every child pgarena starts gets SIGTERM/SIGKILL from the kernel
   when pgarena dies, even by SIGKILL. It does not reach grandchildren (a shell's children, a pooler
   started by a stack's script) nor PostgreSQL, which `pg_ctl` daemonizes.
2. **The registry** (`PidRegistry` in pidregistry.py, `run_dir/pids.json`): pgarena's own pid and start time, a random
   token that every process it starts inherits in its environment (`PGARENA_RUN_TOKEN`), the process
   groups of stacks and builds (pid + start time of each leader), and the managed cluster's data
   directory (its `postmaster.pid` names the server).
3. **The reaper** (`reap`): stops everything the registry names that is still alive: the postmaster
   named by `postmaster.pid` (checked against its start time), every process whose environment holds
   the token, and the members of the recorded process groups. A process is recognised by its start time
   or by the token, never by its pid alone, so a reused pid is never killed. It runs
   - in the **watchdog**, a small process in its own session that pgarena starts with a pipe: when the
     pipe closes (pgarena ended, however it ended), the watchdog reaps;
   - at the start of the **next run** (`reap_abandoned`) for every run folder whose pgarena is dead,
     and for the folder given to `--resume` (`reap_run`), which also refuses a folder whose pgarena is
     still running.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from pgarena.system.pidregistry import (
    DEFAULT_GRACE_S,
    PIDS_FILE,
    START_TIME_TOLERANCE_S,
    TOKEN_VARIABLE,
    is_alive,
    read_state,
    same_machine,
    start_time_of,
    write_state,
)

POSTMASTER_START_TOLERANCE_S = 2.0
"""postmaster.pid stores the server's start in whole seconds, written just after the process started."""


class RunInUse(Exception):
    """The run folder belongs to a pgarena that is still running."""


def postmaster_of(data_dir: Path) -> psutil.Process | None:
    """The live PostgreSQL server that uses `data_dir` (from its postmaster.pid), or None.

    The pid in the file counts only if that process started when the file says (a reused pid does not).
    """
    try:
        lines = (data_dir / "postmaster.pid").read_text(encoding="utf-8", errors="replace").splitlines()
        pid, started = int(lines[0]), float(lines[2])
    except (OSError, ValueError, IndexError):
        return None
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        if abs(proc.create_time() - started) > POSTMASTER_START_TOLERANCE_S:
            return None
    except psutil.Error:
        return None
    return proc


def _is_private_cluster(data_dir: Path) -> bool:
    """A managed cluster in a private temporary folder (`pgarena-pg-*/data`, used when the postgres user
    cannot enter the run folder), nothing else.

    NOTE: `<run>/postgres` is left to the resumed run (cluster.ManagedCluster replaces it once no server
    uses it): the watchdog removing it could race with a resume that is already creating its new cluster.
    """
    home = data_dir.parent
    return data_dir.name == "data" and home.name.startswith("pgarena-pg-") and (data_dir / "PG_VERSION").is_file()


def _stop(procs: list[psutil.Process], first: signal.Signals, grace_s: float) -> None:
    for proc in procs:
        try:
            proc.send_signal(first)
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=2.0)


def _spared() -> set[int]:
    """This process and its ancestors: never reaped (a resumed run started from inside an old one)."""
    spared = {os.getpid()}
    try:
        spared.update(p.pid for p in psutil.Process().parents())
    except psutil.Error:
        pass
    return spared


def _members(state: dict) -> dict[int, psutil.Process]:
    """Live processes of a registry: carrying its token, or in one of its recorded process groups.

    NOTE: a group is recognised by its leader, never by its id alone. With the leader alive and started when
    recorded, the id is still that group's (Linux does not reuse an id while its group has members). With the
    leader gone, the id may be a later, unrelated group's (once every member of ours ended): its members
    count only if one of them carries the run's token, which proves the group is the run's own (a group
    cannot mix old and new members); then its members without the token (a cleared environment) count too.
    """
    needle = f"{TOKEN_VARIABLE}={state.get('token')}" if state.get("token") else None
    groups: dict[int, tuple[float, bool]] = {}  # group id → (its leader's start, leader alive)
    for record in state.get("processes", []):
        if start_time_of(record["pid"]) is not None:
            if not is_alive(record):
                continue  # the leader's pid belongs to another process now: so does its group id
            groups[record["pid"]] = (record["start_time"], True)
        elif record.get("start_time") is not None and needle:
            groups[record["pid"]] = (record["start_time"], False)
    spared = _spared()
    watchdog = state.get("watchdog") or {}
    found: dict[int, psutil.Process] = {}
    orphans: dict[int, list[psutil.Process]] = {}  # members of groups whose leader is gone
    proven: set[int] = set()  # of those, groups with a token carrier
    for proc in psutil.process_iter():
        if proc.pid in spared or proc.pid == watchdog.get("pid"):
            continue
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
            pgid = os.getpgid(proc.pid)
            carrier = bool(needle) and _has_in_environment(proc.pid, needle)  # type: ignore[arg-type]
            if carrier:
                found[proc.pid] = proc
            if pgid in groups and proc.create_time() >= groups[pgid][0] - START_TIME_TOLERANCE_S:
                if groups[pgid][1]:
                    found[proc.pid] = proc
                else:
                    orphans.setdefault(pgid, []).append(proc)
                    if carrier:
                        proven.add(pgid)
        except (psutil.Error, OSError):
            continue
    for pgid in proven:
        found.update({proc.pid: proc for proc in orphans[pgid]})
    return found


def _has_in_environment(pid: int, entry: str) -> bool:
    """True if `NAME=value` is one of the process's environment entries (as it was at exec)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return entry.encode() in handle.read().split(b"\0")
    except OSError:
        return False


def reap(state: dict, *, grace_s: float = DEFAULT_GRACE_S) -> list[str]:
    """Stop every live process a registry names; return one line per thing stopped."""
    lines = []
    for cluster in state.get("postgres", []):
        data_dir = Path(cluster["data_dir"])
        postmaster = postmaster_of(data_dir)
        if postmaster is not None:
            try:
                children = postmaster.children(recursive=True)
            except psutil.Error:
                children = []
            _stop([postmaster], signal.SIGQUIT, grace_s)  # SIGQUIT: PostgreSQL's immediate shutdown
            _stop([c for c in children if c.is_running()], signal.SIGKILL, 0.0)
            lines.append(f"stopped PostgreSQL (pid {postmaster.pid}) left running on {data_dir}")
        if cluster.get("socket_dir"):
            shutil.rmtree(cluster["socket_dir"], ignore_errors=True)
        if postmaster_of(data_dir) is None and _is_private_cluster(data_dir):
            shutil.rmtree(data_dir.parent, ignore_errors=True)  # as the run's own stop would have done
    members = _members(state)
    if members:
        described = []
        for proc in members.values():
            try:
                described.append(f"{proc.pid} {proc.name()}")
            except psutil.Error:
                described.append(str(proc.pid))
        _stop(list(members.values()), signal.SIGTERM, grace_s)
        lines.append(f"stopped {len(members)} process(es): {', '.join(sorted(described))}")
    return lines


def _elsewhere(state: dict) -> str:
    recorded = state.get("machine") or {}
    if not recorded:
        return "its registry does not say which machine it ran on (an older pgarena's)"
    return f"it ran on {recorded.get('hostname')} (boot {recorded.get('boot_id')}), not on this machine in this boot"


def _owner_running(state: dict) -> bool:
    owner = state.get("owner")
    return bool(owner) and owner["pid"] != os.getpid() and is_alive(owner)


def reap_run(run_dir: Path, *, grace_s: float = DEFAULT_GRACE_S) -> list[str]:
    """Stop what a run folder's dead pgarena left behind (RunInUse if that pgarena still runs)."""
    state = read_state(run_dir)
    if state is None:
        return []
    if not same_machine(state):  # a copied folder: its pids name nothing of its own here
        return [f"{run_dir.name}: nothing stopped: {_elsewhere(state)}"]
    if _owner_running(state):
        pid = state["owner"]["pid"]
        raise RunInUse(f"{run_dir} is still being run by pgarena (pid {pid}); wait for it or stop it "
                       f"(kill {pid}) first")
    lines = reap(state, grace_s=grace_s) + reap_ssh(run_dir) + reap_namespaces(run_dir)
    _mark_reaped(run_dir, state)
    return [f"{run_dir.name}: {line}" for line in lines]


NETNS_STATE_FILE = "netns.json"
"""A --netns run's namespaces (pipeline/placement.py writes it through netns.create)."""


SSH_STATE_FILE = "ssh.json"
"""A run's processes on SSH hosts (pipeline/remote.py records them through system/ssh)."""


def _reap_state_file(path: Path, reap_file: Callable[[Path], list[str]], in_use: type[Exception],
                     failed: type[Exception], what: str) -> list[str]:
    """`reap_file(path)`'s lines for a state file a run left (ssh.json, netns.json); [] without the file or
    when its owner still runs (`in_use`), one line saying it could not `what` on `failed`."""
    if not path.exists():
        return []
    try:
        return reap_file(path)
    except in_use:
        return []
    except failed as exc:
        return [f"could not {what}: {exc}"]


def reap_ssh(run_dir: Path) -> list[str]:
    """Stop what a dead run started on SSH hosts (a host it cannot reach keeps its record for a later try)."""
    from pgarena.system.ssh.host import reap_state_file
    from pgarena.system.ssh.transport import SshError, SshInUse

    return _reap_state_file(run_dir / SSH_STATE_FILE, reap_state_file, SshInUse, SshError,
                            "stop its processes on SSH hosts")


def reap_namespaces(run_dir: Path) -> list[str]:
    """Remove the network namespaces a dead run left (after its processes: a namespace's removal also stops
    what still runs inside); lines saying what was removed or why it could not be."""
    from pgarena.system import netns, netns_plan

    return _reap_state_file(run_dir / NETNS_STATE_FILE, netns.reap_state_file, netns_plan.NetnsInUse,
                            netns_plan.NetnsError, "remove its network namespaces")


def reap_abandoned(results_dir: Path, *, grace_s: float = DEFAULT_GRACE_S) -> list[str]:
    """Stop what every run folder in `results_dir` whose pgarena died without finishing left behind."""
    lines = []
    try:
        registries = sorted(results_dir.glob(f"*/{PIDS_FILE}"))
    except OSError:
        return []
    for path in registries:
        state = read_state(path.parent)
        if state is None or state.get("finished") or not same_machine(state) or _owner_running(state):
            continue
        lines += reap_run(path.parent, grace_s=grace_s)
    return lines


def _mark_reaped(run_dir: Path, state: dict) -> None:
    state.update(finished=True, processes=[], postgres=[],
                 reaped_at=dt.datetime.now(dt.timezone.utc).isoformat())
    try:
        write_state(run_dir / PIDS_FILE, state)
    except OSError:
        pass


def watch(run_dir: Path) -> int:
    """The watchdog's body: wait until pgarena closes the pipe on stdin (or dies), then reap its run."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    while sys.stdin.buffer.read(4096):
        pass
    state = read_state(run_dir)
    if state is None:
        return 0
    finished = state.get("finished")
    for line in reap(state) + reap_ssh(run_dir) + reap_namespaces(run_dir):
        print(f"{time.strftime('%H:%M:%S')} watchdog: {line}", flush=True)
    if not finished:
        _mark_reaped(run_dir, state)
    return 0


if __name__ == "__main__":
    sys.exit(watch(Path(sys.argv[1])))
