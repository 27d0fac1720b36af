"""CPU time and memory of process trees (the stack, PostgreSQL) during a measured window.

A sampler thread walks each tree every SAMPLE_INTERVAL_S and keeps, per process, the CPU time last seen
and the tree's summed RSS and (for the trees named in `pss_trees`, the stack by default) summed PSS.
Memory is reported as PSS: summed RSS counts a page shared by the workers of a multi-process server once
per worker, PSS splits it among its sharers, so the sum is the tree's real footprint (Linux; psutil
reads /proc/<pid>/smaps_rollup). Where PSS cannot be read, it is None and only RSS is recorded. CPU seconds of the window = Σ over processes of (last seen − first seen),
with processes born inside the window counted from zero. Time burnt by a process between its last
sample and its exit is not seen (short-lived helpers); cgroup accounting would be exact.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import psutil

if TYPE_CHECKING:
    from pgarena.system.speedprobe import SpeedProbe

SAMPLE_INTERVAL_S = 0.2


def own_cpu_seconds() -> float:
    """CPU seconds (user + system) this process has used so far, every thread included (the answer sampler,
    the resource samplers, the connection poller), its children (the load generator) not: psutil's
    `Process.cpu_times()`, from /proc/self/stat."""
    times = psutil.Process().cpu_times()
    return times.user + times.system


class OwnCpuSampler:
    """(wall-clock time.time(), `own_cpu_seconds()`) pairs every SAMPLE_INTERVAL_S while the block runs, so
    pgarena's own CPU can be read over exactly the generator's measured window (`children.cpu_between`), not
    over the parsing of its output afterwards. Use as a context manager; `samples` holds the pairs."""

    def __init__(self, interval_s: float = SAMPLE_INTERVAL_S) -> None:
        self.samples: list[tuple[float, float]] = []
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pgarena-own-cpu", daemon=True)

    def _sample(self) -> None:
        self.samples.append((time.time(), own_cpu_seconds()))

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self._sample()

    def __enter__(self) -> OwnCpuSampler:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def total(self) -> float:
        """CPU seconds from the first sample to the last."""
        return self.samples[-1][1] - self.samples[0][1] if len(self.samples) >= 2 else 0.0


@dataclass
class _TreeState:
    root_pid: int
    baseline: dict[int, float] = field(default_factory=dict)
    last: dict[int, float] = field(default_factory=dict)
    rss_peak_bytes: int = 0
    pss: bool = False
    pss_peak_bytes: int | None = None


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _pss_bytes(proc: psutil.Process) -> int | None:
    try:
        return getattr(proc.memory_full_info(), "pss", None)
    except (psutil.AccessDenied, NotImplementedError, AttributeError):
        return None


def _sample(state: _TreeState, *, first: bool) -> None:
    rss = 0
    pss: int | None = 0
    for proc in _tree(state.root_pid):
        try:
            with proc.oneshot():
                times = proc.cpu_times()
                cpu = times.user + times.system
                rss += proc.memory_info().rss
                if state.pss and pss is not None:
                    one = _pss_bytes(proc)
                    pss = None if one is None else pss + one
        except psutil.Error:
            continue
        key = proc.pid
        if first:
            state.baseline[key] = cpu
        else:
            state.baseline.setdefault(key, 0.0)
        state.last[key] = cpu
    state.rss_peak_bytes = max(state.rss_peak_bytes, rss)
    if state.pss and pss:
        state.pss_peak_bytes = max(state.pss_peak_bytes or 0, pss)


@dataclass(frozen=True)
class TreeUsage:
    """CPU seconds used, peak summed RSS and peak summed PSS (bytes; None: not read) of one process tree
    during a window."""

    cpu_seconds: float
    rss_peak_bytes: int
    pss_peak_bytes: int | None = None


class TreeSampler:
    """Sample several process trees for the duration of a `with` block."""

    def __init__(self, root_pids: dict[str, int | None], interval_s: float = SAMPLE_INTERVAL_S,
                 pss_trees: Collection[str] = ("stack",), cpu_after_s: float = 0.0) -> None:
        self._states = {name: _TreeState(pid, pss=name in pss_trees) for name, pid in root_pids.items() if pid}
        self._interval_s = interval_s
        self._cpu_after_s = cpu_after_s
        """CPU counts from this long after the block starts (a window's lead-in left out; memory peaks do not)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="pgarena-sampler", daemon=True)
        self.usage: dict[str, TreeUsage] = {}

    def _loop(self) -> None:
        rebase_at = time.monotonic() + self._cpu_after_s if self._cpu_after_s > 0 else None
        while True:
            wait = self._interval_s
            if rebase_at is not None:
                wait = max(0.0, min(wait, rebase_at - time.monotonic()))
            if self._stop.wait(wait):
                return
            rebase = rebase_at is not None and time.monotonic() >= rebase_at
            if rebase:
                rebase_at = None
            for state in self._states.values():
                _sample(state, first=rebase)

    def __enter__(self) -> TreeSampler:
        for state in self._states.values():
            _sample(state, first=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        for name, state in self._states.items():
            _sample(state, first=False)
            cpu = sum(state.last[pid] - state.baseline.get(pid, 0.0) for pid in state.last)
            self.usage[name] = TreeUsage(cpu_seconds=max(cpu, 0.0), rss_peak_bytes=state.rss_peak_bytes,
                                         pss_peak_bytes=state.pss_peak_bytes)


class CpuMeters:
    """Exact cumulative CPU counters (cgroups) by name; `window()` yields their deltas over a block.

    Each meter is a callable returning cumulative CPU seconds (e.g. `CpuGroup.cpu_seconds`). Names without
    a meter are absent from the yielded dict, so callers fall back to the psutil sampler for them.
    `probe`: the run's reference probe on the server CPUs (speedprobe.py), read per window; None when the
    stack does not run on this machine (its windows' machine speed is not measured).
    """

    def __init__(self, meters: Mapping[str, Callable[[], float]], source: str = "psutil",
                 probe: SpeedProbe | None = None) -> None:
        self._meters = dict(meters)
        self.source = source if self._meters else "psutil"
        self.probe = probe

    def exact(self, name: str) -> bool:
        """Whether `name`'s CPU seconds come from an exact meter (no psutil sampling needed for them)."""
        return name in self._meters

    @contextmanager
    def window(self, after_s: float = 0.0) -> Iterator[dict[str, float]]:
        """The meters' deltas over the block, from `after_s` after it starts (a window's lead-in left out); a
        block that ends before then yields none."""
        deltas: dict[str, float] = {}
        start: dict[str, float] = {}

        def read_start() -> None:
            start.update({name: meter() for name, meter in self._meters.items()})

        timer = threading.Timer(after_s, read_start) if after_s > 0 else None
        if timer is None:
            read_start()
        else:
            timer.daemon = True
            timer.start()
        try:
            yield deltas
        finally:
            if timer is not None:
                timer.cancel()
                timer.join()
            for name, meter in self._meters.items():
                if name in start:
                    deltas[name] = max(0.0, meter() - start[name])
