"""The machine's speed during every window: a reference probe on the server CPUs (duet benchmarking).

A child process pinned to the run's server CPU set (where the stack and PostgreSQL run) does one fixed
unit of work every PROBE_INTERVAL_S — a pure-Python integer loop of UNIT_ITERATIONS iterations, about
0.5 ms — and times it by its own thread CPU time (`time.thread_time_ns`), so time spent waiting for the
CPU is not counted: what is left is how fast the CPU executed the same instructions. It writes one line
per unit, `monotonic_ns cpu_ns` (CLOCK_MONOTONIC, shared with the parent, at the unit's start; CPU
nanoseconds of the unit), to its stdout; a thread of the parent reads them. The median over a measured
window is that window's reading: higher = the machine was slower then. The method is Bulej et al.,
"Duet Benchmarking: Improving Measurement Accuracy in the Cloud", Empirical Software Engineering 25 (2020):
a reference workload run beside the measured one on the same CPUs sees the same slow-downs.

NOTE: UNIT_ITERATIONS is a constant, never calibrated at run time, so readings compare across runs made
with the same Python (the unit's cost depends on the interpreter's version).

The child dies with pgarena: it asks for a parent-death signal (process.py), exits when its stdout
pipe closes or its parent changes, and is tracked in the run's pid registry for the reaper.
"""

from __future__ import annotations

import bisect
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pgarena.system.process import ProcessTracker, _preexec, kill_tree, popen_guarded

UNIT_ITERATIONS = 10_000
"""Iterations of the reference unit of work (about 0.5 ms of CPython 3.11 on a 2020s server CPU).
A module constant: changing it makes readings incomparable with earlier runs."""
PROBE_INTERVAL_S = 0.1
"""Seconds between the starts of two units of work."""
MIN_SAMPLES = 3
"""A window with fewer samples has no reading (None)."""
PROBE_ROLE = "speed-probe"
"""The probe's role in the run's pid registry (reaper.py)."""


def unit_of_work(iterations: int = UNIT_ITERATIONS) -> int:
    """The reference unit: a pure-Python integer loop (a multiply, an add and a mask per iteration).
    Returns its result so the loop cannot be skipped."""
    x = 0
    for i in range(iterations):
        x = (x * 31 + i) & 0xFFFF
    return x


@dataclass(frozen=True)
class ProbeReading:
    """The probe over one window: how many units started inside it, and the median CPU nanoseconds of one
    unit (None when fewer than MIN_SAMPLES; higher = the machine was slower)."""

    samples: int
    unit_ns: float | None


def reading_between(times_ns: Sequence[int], cpu_ns: Sequence[int], start_ns: int, end_ns: int) -> ProbeReading:
    """The reading of the samples whose unit started in [start_ns, end_ns] (monotonic nanoseconds).

    `times_ns` must be sorted ascending and `cpu_ns` aligned with it. The median is the robust centre
    (one unit interrupted by a page fault or a timer does not move it)."""
    low = bisect.bisect_left(times_ns, start_ns)
    high = bisect.bisect_right(times_ns, end_ns)
    values = cpu_ns[low:high]
    if len(values) < MIN_SAMPLES:
        return ProbeReading(samples=len(values), unit_ns=None)
    return ProbeReading(samples=len(values), unit_ns=float(statistics.median(values)))


def parse_line(line: str) -> tuple[int, int] | None:
    """`monotonic_ns cpu_ns` → the pair; None for anything else (a partial line at exit)."""
    parts = line.split()
    if len(parts) != 2:
        return None
    try:
        return int(parts[0]), int(parts[1])
    except ValueError:
        return None


class SpeedProbe:
    """The running probe: a child pinned to `cpus`, its samples read by a thread; `reading()` per window.

    A context manager: leaving (or `stop()`) kills the child and reaps it. `tracker` (the run's
    pidregistry.PidRegistry) records it so that a killed run's probe is stopped by the reaper.
    """

    def __init__(self, cpus: Sequence[int], *, tracker: ProcessTracker | None = None,
                 log_path: Path | None = None, interval_s: float = PROBE_INTERVAL_S,
                 iterations: int = UNIT_ITERATIONS) -> None:
        self.cpus = list(cpus)
        self.interval_s = interval_s
        self.iterations = iterations
        self._tracker = tracker
        self._log_path = log_path
        self._times: list[int] = []
        self._cpu: list[int] = []
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._proc: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None

    @property
    def pid(self) -> int | None:
        """The child's pid (None before start)."""
        return self._proc.pid if self._proc is not None else None

    def start(self) -> SpeedProbe:
        """Start the child and the reader thread."""
        argv = [sys.executable, "-m", "pgarena.system.speedprobe", str(self.interval_s), str(self.iterations)]
        death = signal.SIGKILL if threading.current_thread() is threading.main_thread() else None
        stderr = open(self._log_path, "ab") if self._log_path is not None else subprocess.DEVNULL  # noqa: SIM115
        try:
            self._proc = popen_guarded(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
                                       process_group=0, preexec_fn=_preexec(self.cpus, death_signal=death))
        finally:
            if self._log_path is not None:
                stderr.close()  # type: ignore[union-attr]
        if self._tracker is not None:
            try:
                self._tracker.track(self._proc.pid, PROBE_ROLE)
            except BaseException:
                self._kill()
                raise
        self._thread = threading.Thread(target=self._read, name="pgarena-speedprobe", daemon=True)
        self._thread.start()
        return self

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for raw in self._proc.stdout:
            sample = parse_line(raw.decode(errors="replace"))
            if sample is None:
                continue
            with self._arrived:
                if self._times and sample[0] < self._times[-1]:
                    continue  # never happens with one monotonic clock; keeps the list sorted regardless
                self._times.append(sample[0])
                self._cpu.append(sample[1])
                self._arrived.notify_all()

    def samples(self) -> list[tuple[int, int]]:
        """Every (monotonic_ns, cpu_ns) sample read so far."""
        with self._lock:
            return list(zip(self._times, self._cpu))

    def reading(self, start_ns: int, end_ns: int, *, wait_s: float | None = None) -> ProbeReading:
        """The window [start_ns, end_ns] (time.monotonic_ns) as the probe saw it.

        Waits up to `wait_s` (default: two intervals) for a sample after `end_ns`, so the window's last
        unit is not lost in the pipe; a dead probe yields what it read."""
        limit = time.monotonic() + (2 * self.interval_s if wait_s is None else wait_s)
        with self._arrived:
            while not (self._times and self._times[-1] >= end_ns) and self.running():
                left = limit - time.monotonic()
                if left <= 0:
                    break
                self._arrived.wait(left)
            return reading_between(self._times, self._cpu, start_ns, end_ns)

    def running(self) -> bool:
        """The child is alive."""
        return self._proc is not None and self._proc.poll() is None

    def _kill(self) -> None:
        if self._proc is None:
            return
        if self._proc.poll() is None:
            kill_tree(self._proc.pid, grace_s=1.0)
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass

    def stop(self) -> None:
        """Kill and reap the child, join the reader (idempotent)."""
        self._kill()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self._proc is not None and self._proc.stdout is not None:
            self._proc.stdout.close()
        if self._tracker is not None and self._proc is not None:
            self._tracker.untrack(self._proc.pid)
            self._tracker = None

    def __enter__(self) -> SpeedProbe:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _probe_loop(interval_s: float, iterations: int) -> int:
    """The child: one timed unit per interval to stdout until the pipe closes or the parent changes."""
    parent = os.getppid()
    out = sys.stdout.buffer
    next_start = time.monotonic_ns()
    step = int(interval_s * 1e9)
    while True:
        started = time.monotonic_ns()
        before = time.thread_time_ns()
        unit_of_work(iterations)
        used = time.thread_time_ns() - before
        try:
            out.write(f"{started} {used}\n".encode())
            out.flush()
        except (BrokenPipeError, OSError):
            return 0
        if os.getppid() != parent:
            return 0
        next_start += step
        pause = next_start - time.monotonic_ns()
        if pause > 0:
            time.sleep(pause / 1e9)
        else:
            next_start = time.monotonic_ns()  # late (the CPU was busy): keep the pace, no catch-up burst


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(_probe_loop(float(sys.argv[1]), int(sys.argv[2])))
