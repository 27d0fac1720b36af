"""The machine's speed during every window: a reference probe on the server CPUs (duet benchmarking).

A child process pinned to the run's server CPU set (where the stack and PostgreSQL run), at the lowest
real-time priority (SCHED_FIFO, below), does one fixed unit of work every PROBE_INTERVAL_S — UNIT_ITERATIONS
random reads (numpy gather and sum) from a UNIT_ARRAY_BYTES array that lives in the L3 cache the cores share, and
UNIT_SYSCALLS one-byte reads of /dev/zero (the kernel's entry and exit), about 0.3 ms together — and times it by
its own thread CPU time (`time.thread_time_ns`, user and system), so time spent waiting for the CPU is not
counted: what is left is how fast the CPU executed the same instructions, cache reads and system calls. After a
first line saying how it is scheduled (`policy …`) it writes one line per unit, `monotonic_ns cpu_ns`
(CLOCK_MONOTONIC, shared with the parent, at the unit's start; CPU nanoseconds of the unit), to its stdout;
a thread of the parent reads them. The **mean** over a measured window is that window's reading: higher =
the machine was slower then. The method is Bulej et al., "Duet Benchmarking: Improving Measurement Accuracy
in the Cloud", Empirical Software Engineering 25 (2020): a reference workload run beside the measured one on
the same CPUs sees the same slow-downs.

Why this rate and the mean (measured 2026-11-26, docs/methodology.md "The noise budget"): the machine's slow
spells are short, so the median of a few units a window (the first probe: a pure-Python loop every 100 ms)
often missed them (its correlation with a window's throughput ranged from −0.76 to −0.03 across runs); 50 units
a window and their mean follow them. Why this unit (measured 2026-11-29, the same section): the slow spells
reach a stack's work through the shared L3 cache and the kernel more than through the core's own L2. Beside
8-stack headlines, timed alike at the same priority, reads from an 8 MiB array and a loop of system calls each
explained more of the windows' scatter than the earlier unit (20,000 reads from a 256 KiB array, in L2), and the
two together more than either.

Why SCHED_FIFO (measured 2026-11-27, docs/methodology.md "The probe must read the machine, not the stack"): as a
normal task the probe's unit is preempted mid-way by the stack's threads when they wake — in a quarter of its
units beside a stack of many threads, almost never beside a single-threaded one — and the stack's work in the
middle of the unit costs the unit its caches: the probe then read the stack beside it (F 13 on 5 and 110 df,
+7.8 % beside go-nethttp-libpq), and the verdict must leave out a correction that reads the stack. As the lowest
real-time priority (PROBE_RT_PRIORITY) nothing of the stack's preempts the unit; the same unit, alternated on the
same CPU in the same run, read no stack (F 0.36, p 0.88) and followed the windows' throughput more closely. Its
cost to the stack is the normal task's (the unit is as long and as frequent; a waking stack thread waits out the
unit, a fraction of a millisecond, where it would have interrupted it): scripts/probe_cost.py saw none either way,
to within ±15 %.
Where the system refuses real-time scheduling (no CAP_SYS_NICE and no RLIMIT_RTPRIO) the probe runs as a normal
task and says so (`SpeedProbe.policy`, the run's environment).

The idle gaps (2026-11-30, docs/methodology.md "The idle gaps between windows"): the window's reading can depend
on the stack beside it, and the verdict then leaves it out. Between two loads no stack is under load, so the
parent marks each load's end and the next one's start (`load_ended`, `load_starts`, over the child's stdin); in
between the child times a unit every GAP_INTERVAL_S, and each interleaved window records the gap before and after
it (`Repetition.reference_gap_before_ns`, `reference_gap_after_ns`).

NOTE: the unit is a constant, never calibrated at run time, so readings compare across runs made with the
same numpy on the same machine; within a run only their changes are used (the verdict's covariate).

The child dies with pgarena: it asks for a parent-death signal (process.py), exits when its stdout
pipe closes or its parent changes, and is tracked in the run's pid registry for the reaper.
"""

from __future__ import annotations

import bisect
import os
import select
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pgarena.system.process import ProcessTracker, _preexec, kill_tree, popen_guarded

UNIT_ITERATIONS = 5_000
"""Random reads of the reference unit's array (about 0.14 ms on a 2020s server CPU).
A module constant: changing it makes readings incomparable with earlier runs."""
UNIT_ARRAY_BYTES = 8 * 1024 * 1024
"""Size of the array the unit reads from: beyond a core's L2 cache (1 MiB here), within the L3 the cores share, so
the unit is slowed, as the stacks are, by whatever else uses the L3; not DRAM (a 64 MiB array followed the
windows less: docs/methodology.md)."""
UNIT_SYSCALLS = 250
"""One-byte reads of /dev/zero per unit (about 0.14 ms): the kernel's entry and exit, which a stack's requests and
their database round trips cross many times each."""
UNIT_SEED = 1
"""Seed of the unit's fixed random read positions."""
PROBE_INTERVAL_S = 0.02
"""Seconds between the starts of two units of work (about 1 % of one CPU)."""
GAP_INTERVAL_S = 0.002
"""Seconds between two units while the parent says the server CPUs are idle between two loads (`load_ended` to
`load_starts`): a gap lasts ~0.1 s, at PROBE_INTERVAL_S it would hold too few units to read."""
MIN_PAUSE_NS = 1_000_000
"""The shortest sleep between two units (1 ms)."""
GAP_BEGINS, LOAD_BEGINS = b"g", b"l"
"""What the parent writes to the child's stdin: the units' pace becomes GAP_INTERVAL_S, or PROBE_INTERVAL_S again."""
MIN_SAMPLES = 3
"""A window with fewer samples has no reading (None)."""
PROBE_RT_PRIORITY = 1
"""The probe's SCHED_FIFO priority: the lowest real-time one, above every normal task (module docstring)."""
POLICY_PREFIX = "policy "
"""The child's first line: `policy <how it is scheduled>`, then only samples."""
PROBE_ROLE = "speed-probe"
"""The probe's role in the run's pid registry (reaper.py)."""
GAP_MARGIN_NS = 10_000_000
"""An idle gap's reading leaves out this much (10 ms) at each end: a load's last requests and the next one's
generator start."""
GAP_MAX_NS = 1_000_000_000
"""An idle gap's reading covers at most its last second before the next load (an older part may hold other work:
a phase's database levelling, a verification)."""


class UnitOfWork:
    """The reference unit: `iterations` reads at fixed random positions of an int64 array of
    UNIT_ARRAY_BYTES (numpy gather, then a sum), then `syscalls` one-byte reads of /dev/zero. Calling it returns
    the sum plus the bytes read, so no read can be skipped. `close()` (or the process's end) closes /dev/zero."""

    def __init__(self, iterations: int = UNIT_ITERATIONS, syscalls: int = UNIT_SYSCALLS) -> None:
        import numpy as np

        size = UNIT_ARRAY_BYTES // 8
        self.values = np.arange(size, dtype=np.int64)
        self.positions = np.random.default_rng(UNIT_SEED).integers(0, size, iterations)
        self.syscalls = syscalls
        self._zero = os.open("/dev/zero", os.O_RDONLY)

    def __call__(self) -> int:
        total, read, zero = int(self.values[self.positions].sum()), os.read, self._zero
        for _ in range(self.syscalls):
            total += len(read(zero, 1))
        return total

    def close(self) -> None:
        """Close /dev/zero (idempotent)."""
        if self._zero >= 0:
            os.close(self._zero)
            self._zero = -1


GapHandler = Callable[["ProbeReading"], None]
"""Told the reading of the idle gap that followed a load (`SpeedProbe.load_ended`)."""


@dataclass(frozen=True)
class ProbeReading:
    """The probe over one window: how many units started inside it, and the median CPU nanoseconds of one
    unit (None when fewer than MIN_SAMPLES; higher = the machine was slower)."""

    samples: int
    unit_ns: float | None


def reading_between(times_ns: Sequence[int], cpu_ns: Sequence[int], start_ns: int, end_ns: int) -> ProbeReading:
    """The reading of the samples whose unit started in [start_ns, end_ns] (monotonic nanoseconds).

    `times_ns` must be sorted ascending and `cpu_ns` aligned with it. The mean, not the median: the slow
    spells the reading is for are short, and a centre that ignores a few slow units ignores them (module
    docstring)."""
    low = bisect.bisect_left(times_ns, start_ns)
    high = bisect.bisect_right(times_ns, end_ns)
    values = cpu_ns[low:high]
    if len(values) < MIN_SAMPLES:
        return ProbeReading(samples=len(values), unit_ns=None)
    return ProbeReading(samples=len(values), unit_ns=float(statistics.fmean(values)))


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
                 iterations: int = UNIT_ITERATIONS, real_time: bool = True) -> None:
        self.cpus = list(cpus)
        self.real_time = real_time
        """Ask for SCHED_FIFO (the run's probe always does; False: a normal task, for scripts/probe_cost.py)."""
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
        self._load_end_ns: int | None = None
        self._after_gap: GapHandler | None = None
        self.policy: str | None = None
        """How the child is scheduled: 'SCHED_FIFO priority 1', or 'normal (SCHED_FIFO refused: …)'; None
        before start or when the child said nothing."""

    @property
    def pid(self) -> int | None:
        """The child's pid (None before start)."""
        return self._proc.pid if self._proc is not None else None

    def start(self) -> SpeedProbe:
        """Start the child and the reader thread."""
        argv = [sys.executable, "-m", "pgarena.system.speedprobe", str(self.interval_s), str(self.iterations),
                "fifo" if self.real_time else "normal"]
        death = signal.SIGKILL if threading.current_thread() is threading.main_thread() else None
        stderr = open(self._log_path, "ab") if self._log_path is not None else subprocess.DEVNULL  # noqa: SIM115
        try:
            self._proc = popen_guarded(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
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
        assert self._proc.stdout is not None
        first = self._proc.stdout.readline().decode(errors="replace").strip()  # written before numpy is imported
        if first.startswith(POLICY_PREFIX):
            self.policy = first[len(POLICY_PREFIX):]
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

    def load_starts(self, start_ns: int) -> ProbeReading | None:
        """A load on the server CPUs starts at `start_ns`: the probe's reading of the idle gap since the last load
        ended (`load_ended`), also handed to that load's `after` handler; None when no load ended before.

        The gap is the machine with no stack under load, so a stack cannot shift its reading the way it can shift
        a window's (analysis/probecheck.py); its mean is the machine's speed between two loads. The gap excludes
        GAP_MARGIN_NS at each end and covers at most its last GAP_MAX_NS."""
        end, handler = self._load_end_ns, self._after_gap
        self._load_end_ns, self._after_gap = None, None
        if end is None:
            return None
        self._tell(LOAD_BEGINS)
        # a gap shorter than its two margins is an empty span: no samples, no reading
        reading = self.reading(max(end + GAP_MARGIN_NS, start_ns - GAP_MAX_NS), start_ns - GAP_MARGIN_NS, wait_s=0.0)
        if handler is not None:
            handler(reading)
        return reading

    def load_ended(self, end_ns: int, after: GapHandler | None = None) -> None:
        """A load on the server CPUs ended at `end_ns`; `after` will be told the reading of the idle gap that
        follows it (at the next `load_starts`). Until then the child times a unit every GAP_INTERVAL_S."""
        self._load_end_ns, self._after_gap = end_ns, after
        self._tell(GAP_BEGINS)

    def _tell(self, command: bytes) -> None:
        """Write `command` to the child (nothing when it is not running: its samples are all there are)."""
        if self._proc is None or self._proc.stdin is None or self._proc.poll() is not None:
            return
        try:
            self._proc.stdin.write(command)
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass

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
        if self._proc is not None:
            for pipe in (self._proc.stdin, self._proc.stdout):
                if pipe is not None:
                    try:
                        pipe.close()
                    except OSError:
                        pass
        if self._tracker is not None and self._proc is not None:
            self._tracker.untrack(self._proc.pid)
            self._tracker = None

    def __enter__(self) -> SpeedProbe:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def real_time() -> str:
    """Make this process SCHED_FIFO at PROBE_RT_PRIORITY; how it is scheduled now, in words."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(PROBE_RT_PRIORITY))
    except (AttributeError, OSError) as exc:
        return f"normal (SCHED_FIFO refused: {getattr(exc, 'strerror', None) or exc})"
    return f"SCHED_FIFO priority {PROBE_RT_PRIORITY}"


def _pause(pause_ns: int, commands: int | None, fast: bool) -> bool | None:
    """Sleep `pause_ns`, or less when the parent writes to `commands` (the child's stdin): the pace asked for last
    (True: GAP_INTERVAL_S); None when the parent closed it (it is gone)."""
    if commands is None:
        time.sleep(pause_ns / 1e9)
        return fast
    ready, _, _ = select.select([commands], [], [], pause_ns / 1e9)
    if not ready:
        return fast
    data = os.read(commands, 64)
    if not data:
        return None
    last = data.rstrip()[-1:]
    return True if last == GAP_BEGINS else False if last == LOAD_BEGINS else fast


def _probe_loop(interval_s: float, iterations: int, real_time_asked: bool = True, commands: int | None = None) -> int:
    """The child: its scheduling policy, then one timed unit per interval to stdout until the pipe closes or the
    parent changes. It sleeps at least MIN_PAUSE_NS per unit, so a real-time probe can never hold the CPU.
    `commands` (its stdin): GAP_BEGINS makes the interval GAP_INTERVAL_S for at most GAP_MAX_NS (a gap's reading
    covers no more), LOAD_BEGINS `interval_s` again."""
    out = sys.stdout.buffer
    out.write(f"{POLICY_PREFIX}{real_time() if real_time_asked else 'normal (asked)'}\n".encode())
    out.flush()
    unit_of_work = UnitOfWork(iterations)
    unit_of_work()  # the array's pages touched once before the first timed unit
    unit_of_work()  # and its read positions brought into the L3 the unit is meant to read from
    parent = os.getppid()
    next_start = time.monotonic_ns()
    fast: bool | None = False
    fast_until = 0
    while True:
        started = time.monotonic_ns()
        before = time.thread_time_ns()
        unit_of_work()
        used = time.thread_time_ns() - before
        try:
            out.write(f"{started} {used}\n".encode())
            out.flush()
        except (BrokenPipeError, OSError):
            return 0
        if os.getppid() != parent:
            return 0
        next_start += int((GAP_INTERVAL_S if fast else interval_s) * 1e9)
        pause = next_start - time.monotonic_ns()
        if pause < MIN_PAUSE_NS:
            pause = MIN_PAUSE_NS  # late (the CPU was busy): keep the pace, no catch-up burst
            next_start = time.monotonic_ns() + pause
        was = fast
        fast = _pause(pause, commands, fast)
        if fast is None:
            return 0
        now = time.monotonic_ns()
        if fast and not was:
            fast_until = now + GAP_MAX_NS
        elif fast and now > fast_until:
            fast = False  # no load said it began: the window pace again (a load nobody marked never meets the fast one)
        if fast != was:  # a new pace starts now
            next_start = now


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(_probe_loop(float(sys.argv[1]), int(sys.argv[2]), sys.argv[3:4] != ["normal"], sys.stdin.fileno()))
