"""Exact CPU time of a process tree through Linux cgroups (preferred over resources.py's psutil polling).

The kernel charges every nanosecond a task runs to the cgroup the task is in, and a cgroup's counter
keeps what its processes used after they exit. So pgarena makes one group per measured tree
(`<mount>/pgarena/<name>-<pid>-<serial>`), puts the tree's root in it before exec (a `preexec_fn`) or
moves an existing tree in (`add_tree`), and reads the counter: children forked later inherit the
group, short-lived helpers are counted in full, and nothing is sampled. CPU seconds of a window =
counter after − counter before.

Two counters, both user + system time of everything that has run in the group:

- cgroup v1, `cpuacct` controller: `cpuacct.usage`, nanoseconds;
- cgroup v2: `usage_usec` in `cpu.stat`, microseconds. It is the kernel's base accounting (Linux
  ≥ 4.15), present whether or not the `cpu` controller is enabled; pgarena enables no controller,
  because that would make each group a scheduling entity with its own weight and change how the
  stack and PostgreSQL share the CPUs being measured.

`probe()` looks for, in this order: a pure v2 mount at /sys/fs/cgroup; a v1 hierarchy with `cpuacct`
mounted on its own; any other v2 mount (a hybrid host's /sys/fs/cgroup/unified); a v1 hierarchy where
`cpuacct` is co-mounted with `cpu` (last, since its groups are also CPU-scheduling groups). Each
candidate must prove itself: a test group is created, a short child process is moved in, its CPU time
must show up, and the group is removed. In a container without a writable cgroupfs, without root, or
off Linux, `probe()` says why in plain words and the caller falls back to psutil sampling.

Leaving a group moves any processes still in it back to where they came from (or to pgarena's own
group, or the hierarchy's root) and removes its directory; the `pgarena` parent group is kept, since
concurrent runs share it.
"""

from __future__ import annotations

import errno
import itertools
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Self

import psutil

PARENT_GROUP = "pgarena"
"""Every group pgarena makes lives under this group of the hierarchy's root."""
MOUNTS_FILE = Path("/proc/self/mounts")
PURE_V2_MOUNT = Path("/sys/fs/cgroup")
RMDIR_RETRIES = 5
"""A group whose last process is still exiting is busy for a moment: retries before giving up."""
RMDIR_RETRY_DELAY_S = 0.02

_USAGE_FILE = {1: "cpuacct.usage", 2: "cpu.stat"}
_SERIAL = itertools.count(1)
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_PROBE_CHILD = "import sys; sys.stdin.read(); sum(range(300_000))"


def _parse_cpuacct_usage(text: str) -> float:
    """Seconds in a v1 `cpuacct.usage` file (one integer, nanoseconds)."""
    return int(text.strip()) / 1e9


def _parse_cpu_stat(text: str) -> float:
    """Seconds of `usage_usec` in a v2 `cpu.stat` file (`key value` lines, microseconds)."""
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "usage_usec":
            return int(value) / 1e6
    raise ValueError("cpu.stat has no usage_usec line (Linux older than 4.15?)")


def _safe_name(name: str) -> str:
    """`name` as one path component: letters, digits, '_' and '-' only, at most 48 characters."""
    return _UNSAFE.sub("_", name).strip("_")[:48] or "group"


def _write_pid(group: Path, pid: int) -> None:
    """Move process `pid` (all its threads) into `group`; raises OSError (ESRCH: it has exited)."""
    fd = os.open(group / "cgroup.procs", os.O_WRONLY)
    try:
        os.write(fd, str(pid).encode())
    finally:
        os.close(fd)


def _why(exc: OSError) -> str:
    """An OSError from cgroupfs in plain words, with the usual cause."""
    hints = {
        errno.EROFS: " (the cgroup filesystem is mounted read-only, as in most containers)",
        errno.EACCES: " (not root, and this part of the hierarchy is not delegated to this user)",
        errno.EPERM: " (not root, and this part of the hierarchy is not delegated to this user)",
        errno.ENOENT: " (the mount point or an interface file is missing)",
    }
    return f"{exc.strerror or exc}{hints.get(exc.errno or 0, '')}"


@dataclass(frozen=True)
class _Mount:
    path: Path
    fstype: str
    options: frozenset[str]


def _parse_mounts(text: str) -> list[_Mount]:
    """The cgroup and cgroup2 entries of a /proc/self/mounts text (octal escapes such as \\040 undone)."""
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4 or fields[2] not in ("cgroup", "cgroup2"):
            continue
        path = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[1])
        mounts.append(_Mount(Path(path), fields[2], frozenset(fields[3].split(","))))
    return mounts


def _candidates(mounts_text: str, parent: str = PARENT_GROUP) -> list[CgroupBackend]:
    """The hierarchies that could account CPU time, in the order `probe()` tries them."""
    mounts = _parse_mounts(mounts_text)
    v2 = [m for m in mounts if m.fstype == "cgroup2"]
    v1 = [m for m in mounts if m.fstype == "cgroup" and "cpuacct" in m.options]
    ordered = (
        [(2, m) for m in v2 if m.path == PURE_V2_MOUNT]
        + [(1, m) for m in v1 if "cpu" not in m.options]
        + [(2, m) for m in v2 if m.path != PURE_V2_MOUNT]
        + [(1, m) for m in v1 if "cpu" in m.options]
    )
    backends: list[CgroupBackend] = []
    for version, mount in ordered:
        if all(b.mount != mount.path for b in backends):
            backends.append(CgroupBackend(version, mount.path, parent))
    return backends


@dataclass(frozen=True)
class CgroupBackend:
    """One mounted cgroup hierarchy that accounts CPU time: its version and where it is mounted.

    `mount` is the root of the hierarchy as this process sees it; tests point it at a temporary
    directory.
    """

    version: Literal[1, 2]
    mount: Path
    parent: str = PARENT_GROUP

    @property
    def description(self) -> str:
        """E.g. 'cgroup v1 cpuacct at /sys/fs/cgroup/cpuacct'."""
        kind = "cgroup v1 cpuacct" if self.version == 1 else "cgroup v2"
        return f"{kind} at {self.mount}"

    def create(self, name: str) -> CpuGroup:
        """A new, empty group `<mount>/<parent>/<name>-<pid>-<serial>`; raises OSError if it cannot be made.

        `name` is made safe (no slashes or dots) and the serial keeps two groups of one name in one
        process apart.
        """
        parent = self.mount / self.parent
        parent.mkdir(parents=True, exist_ok=True)
        safe = _safe_name(name)
        while True:
            path = parent / f"{safe}-{os.getpid()}-{next(_SERIAL)}"
            try:
                path.mkdir()
            except FileExistsError:  # left over by an earlier process with the same pid
                continue
            return CpuGroup(self, path)

    def sweep_stale(self) -> list[Path]:
        """Remove empty groups left by pgarena processes that no longer exist (a run killed with SIGKILL
        cannot clean up); return the removed paths. Groups of live processes and non-empty groups stay."""
        removed: list[Path] = []
        parent = self.mount / self.parent
        if not parent.is_dir():
            return removed
        for path in parent.iterdir():
            parts = path.name.rsplit("-", 2)
            if not path.is_dir() or len(parts) != 3 or not parts[1].isdigit():
                continue
            if psutil.pid_exists(int(parts[1])):
                continue
            try:
                path.rmdir()  # fails (EBUSY / ENOTEMPTY) if processes are still in it
            except OSError:
                continue
            removed.append(path)
        return removed

    def check(self) -> str | None:
        """None if groups can be made, joined, read and removed here; else why not, in plain words.

        Creates a test group, moves a short-lived child process into it, requires its CPU time to
        show up, and removes the group.
        """
        try:
            group = self.create("probe")
        except OSError as exc:
            return f"{self.description}: cannot create a group under {self.mount / self.parent}: {_why(exc)}"
        with group:
            try:
                child = subprocess.Popen(
                    [sys.executable, "-c", _PROBE_CHILD],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            except OSError as exc:
                return f"{self.description}: cannot start a test process ({sys.executable}): {_why(exc)}"
            try:
                group.add(child.pid)
            except OSError as exc:
                return f"{self.description}: cannot move a process into a group: {_why(exc)}"
            finally:
                child.communicate(timeout=30)
            try:
                cpu = group.cpu_seconds()
            except (OSError, ValueError) as exc:
                return f"{self.description}: cannot read {_USAGE_FILE[self.version]}: {exc}"
            if cpu <= 0:
                return f"{self.description}: the group reports no CPU time for a process that ran in it"
        if group.cleanup_error:
            return f"{self.description}: {group.cleanup_error}"
        return None


class CpuGroup:
    """One cgroup whose CPU counter measures a process tree; a context manager that removes it on exit.

    Made by `CgroupBackend.create`. Every process put in the group is charged from then on, and so is
    every process it forks later.
    """

    def __init__(self, backend: CgroupBackend, path: Path) -> None:
        self.backend = backend
        self.path = path
        self.cleanup_error: str | None = None
        """Why the group could not be removed on exit (None: removed, or not closed yet)."""
        self._home = _group_of(backend, os.getpid())
        self._origins: dict[int, Path] = {}
        self._closed = False

    def add(self, pid: int) -> None:
        """Move process `pid` (all its threads) into the group; raises OSError (ProcessLookupError if gone)."""
        origin = _group_of(self.backend, pid)
        _write_pid(self.path, pid)
        if origin != self.path:
            self._origins.setdefault(pid, origin)

    def add_tree(self, pid: int) -> list[int]:
        """Move `pid` and all its current descendants into the group; return the pids moved.

        Descendants that exit meanwhile are skipped. A child forked while the tree is being moved
        may stay outside: prefer `preexec_fn`, which has no such race.
        """
        self.add(pid)
        moved = [pid]
        try:
            descendants = psutil.Process(pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return moved
        for proc in descendants:
            try:
                self.add(proc.pid)
            except ProcessLookupError:
                continue
            moved.append(proc.pid)
        return moved

    def preexec_fn(self, then: Callable[[], None] | None = None) -> Callable[[], None]:
        """A subprocess `preexec_fn` that moves the child into the group before exec, then calls `then`.

        The child's whole tree is then accounted from its first instruction. `then` chains another
        preexec step (such as CPU pinning). If the move fails, Popen raises SubprocessError.
        """
        procs = os.fsencode(self.path / "cgroup.procs")

        def join() -> None:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, b"0")  # "0": the writing process itself (v1 and v2)
            finally:
                os.close(fd)
            if then is not None:
                then()

        return join

    def cpu_seconds(self) -> float:
        """User + system CPU seconds of every process that has been in the group, exited ones included."""
        text = (self.path / _USAGE_FILE[self.backend.version]).read_text()
        return _parse_cpuacct_usage(text) if self.backend.version == 1 else _parse_cpu_stat(text)

    def pids(self) -> list[int]:
        """The processes in the group now, sorted (for debugging)."""
        text = (self.path / "cgroup.procs").read_text()
        return sorted({int(word) for word in text.split()})

    def close(self) -> None:
        """Move remaining processes out and remove the group (idempotent; never raises).

        Processes go back to the group they were added from, else to pgarena's own group, else to the
        hierarchy's root. If the directory cannot be removed, `cleanup_error` says why.
        """
        if self._closed:
            return
        self._closed = True
        for attempt in range(RMDIR_RETRIES + 1):
            self._evacuate()
            try:
                self.path.rmdir()
            except FileNotFoundError:
                pass
            except OSError as exc:
                self.cleanup_error = f"cannot remove {self.path}: {_why(exc)}"
                if exc.errno != errno.EBUSY or attempt == RMDIR_RETRIES:
                    return
                time.sleep(RMDIR_RETRY_DELAY_S)
                continue
            self.cleanup_error = None
            return

    def _evacuate(self) -> None:
        try:
            pids = self.pids()
        except (OSError, ValueError):
            return
        for pid in pids:
            for target in (self._origins.get(pid), self._home, self.backend.mount):
                if target is None or target == self.path:
                    continue
                try:
                    _write_pid(target, pid)
                except ProcessLookupError:
                    break
                except OSError:
                    continue
                break

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _group_of(backend: CgroupBackend, pid: int) -> Path:
    """The group of `pid` in `backend`'s hierarchy (per /proc/<pid>/cgroup), else the hierarchy's root."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return backend.mount
    for line in lines:
        hierarchy_id, _, rest = line.partition(":")
        controllers, _, relative = rest.partition(":")
        if backend.version == 2:
            ours = hierarchy_id == "0" and controllers == ""
        else:
            ours = "cpuacct" in controllers.split(",")
        if ours:
            path = Path(os.path.normpath(backend.mount / relative.lstrip("/")))
            if path.is_relative_to(backend.mount) and path.is_dir():
                return path
    return backend.mount


def probe(mounts_file: Path = MOUNTS_FILE, parent: str = PARENT_GROUP) -> CgroupBackend | str:
    """The cgroup backend that works on this machine, or why none does, in plain words.

    Tries, in order: pure v2 at /sys/fs/cgroup, v1 cpuacct, other v2 mounts, v1 cpuacct co-mounted
    with cpu; each must pass `CgroupBackend.check` (a test group is really created and removed).
    """
    if not sys.platform.startswith("linux"):
        return f"cgroups exist only on Linux (this is {sys.platform})"
    try:
        text = mounts_file.read_text()
    except OSError as exc:
        return f"cannot read {mounts_file}: {_why(exc)}"
    candidates = _candidates(text, parent)
    if not candidates:
        return "no cgroup filesystem is mounted (neither cgroup2 nor a cgroup v1 hierarchy with cpuacct)"
    reasons = []
    for backend in candidates:
        reason = backend.check()
        if reason is None:
            backend.sweep_stale()
            return backend
        reasons.append(reason)
    return "; ".join(reasons)
