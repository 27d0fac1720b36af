"""Commands run to completion and measured: one (`run_measured`), or several at once (`MeasuredChild`).

`run_measured` blocks on one child; several load generators that must start together need their processes
spawned first and waited for afterwards. A `MeasuredChild` is that: started in its own process group,
pinned, with the parent-death signal (process.py), its CPU seconds sampled while it runs (psutil) and read
exactly from the kernel's rusage when it is reaped (wait4).
"""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import psutil

from pgarena.system.process import _preexec, kill_tree, popen_guarded


def run_measured(
    argv: Sequence[str], *, stdout_path: Path, stderr_path: Path, cpus: Sequence[int] | None, timeout_s: float,
    cpu_samples: list[tuple[float, float]] | None = None,
) -> tuple[int, float]:
    """Run a command to completion pinned to `cpus`; return (exit code, CPU seconds it used).

    The CPU time comes from the kernel's rusage of the reaped child (wait4), so it is exact and
    includes every thread of the generator — and its start-up and its work after the window. When
    `cpu_samples` is given, (wall-clock time.time(), CPU seconds so far) pairs are appended to it about
    every `CPU_SAMPLE_INTERVAL_S` while the command runs, the last one from wait4 at its exit, so that
    `cpu_between` can read the CPU of a part of its run (the measured window).
    """
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        if cpu_samples is not None:
            cpu_samples.append((time.time(), 0.0))  # before the process exists it has used nothing
        proc = popen_guarded(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            process_group=0,
            preexec_fn=_preexec(cpus),
        )
        deadline = time.monotonic() + timeout_s
        watched = _watch(proc.pid) if cpu_samples is not None else None
        wait_exit = _ExitWaiter(proc.pid)
        try:
            while True:
                if watched is not None:
                    _sample_cpu(watched, cpu_samples)  # type: ignore[arg-type]
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() > deadline:
                    kill_tree(proc.pid, grace_s=2.0)
                    pid, status, usage = os.wait4(proc.pid, 0)
                    break
                wait_exit(CPU_SAMPLE_INTERVAL_S)
        except BaseException:  # Ctrl-C: the generator has its own process group, so stop it here
            kill_tree(proc.pid, grace_s=2.0)
            raise
        finally:
            wait_exit.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    total = usage.ru_utime + usage.ru_stime
    if cpu_samples is not None:
        cpu_samples.append((time.time(), total))
    return proc.returncode, total


CPU_SAMPLE_INTERVAL_S = 0.02
"""How often run_measured polls the generator (exit and, when asked, its CPU seconds so far)."""


class _ExitWaiter:
    """Sleeps up to a timeout, waking as soon as the process exits (a pidfd; without one, a plain sleep): the
    window's generator is reaped the moment it is done rather than up to a poll interval later, every window."""

    def __init__(self, pid: int) -> None:
        self._poll: select.poll | None = None
        self._fd: int | None = None
        try:
            self._fd = os.pidfd_open(pid)
        except (AttributeError, OSError):  # Linux before 5.3, or not Linux
            return
        self._poll = select.poll()
        self._poll.register(self._fd, select.POLLIN)

    def __call__(self, timeout_s: float) -> None:
        if self._poll is None:
            time.sleep(timeout_s)
        else:
            self._poll.poll(timeout_s * 1000)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None



def _watch(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


def _sample_cpu(process: psutil.Process, samples: list[tuple[float, float]]) -> None:
    try:
        times = process.cpu_times()
    except psutil.Error:  # exited between polls: wait4 gives the last value
        return
    samples.append((time.time(), times.user + times.system))


def cpu_between(samples: Sequence[tuple[float, float]], start: float, end: float) -> float | None:
    """CPU seconds used between wall-clock times `start` and `end`, linearly interpolated between the
    (time, cumulative CPU seconds) samples around each end; None when the samples do not cover both."""
    if len(samples) < 2 or not samples[0][0] <= start <= end <= samples[-1][0]:
        return None

    def at(moment: float) -> float:
        for (t0, c0), (t1, c1) in zip(samples, samples[1:]):
            if t0 <= moment <= t1:
                return c0 if t1 == t0 else c0 + (c1 - c0) * (moment - t0) / (t1 - t0)
        return samples[-1][1]

    return max(0.0, at(end) - at(start))


class MeasuredChild:
    """One command running to completion; `poll` reaps it, `samples` are (wall-clock time, CPU seconds so
    far) pairs for `cpu_between`, the last one from wait4 at its exit."""

    def __init__(self, argv: Sequence[str], *, stdout_path: Path, stderr_path: Path,
                 cpus: Sequence[int] | None) -> None:
        self.argv = list(argv)
        self.samples: list[tuple[float, float]] = [(time.time(), 0.0)]
        self.exit_code: int | None = None
        self.cpu_seconds: float | None = None
        """Exact CPU seconds of the whole process (every thread), known once it is reaped."""
        with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
            self._proc = popen_guarded(self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                       process_group=0, preexec_fn=_preexec(cpus))
        self._watched = _watch(self._proc.pid)

    @property
    def pid(self) -> int:
        return self._proc.pid

    def poll(self) -> int | None:
        """Sample its CPU; reap it if it exited. Its exit code, or None while it runs."""
        if self.exit_code is not None:
            return self.exit_code
        if self._watched is not None:
            _sample_cpu(self._watched, self.samples)
        pid, status, usage = os.wait4(self._proc.pid, os.WNOHANG)
        if pid:
            self._reaped(status, usage)
        return self.exit_code

    def _reaped(self, status: int, usage) -> None:
        self.exit_code = self._proc.returncode = os.waitstatus_to_exitcode(status)
        self.cpu_seconds = usage.ru_utime + usage.ru_stime
        self.samples.append((time.time(), self.cpu_seconds))

    def stop(self) -> None:
        """Kill its process tree and reap it (idempotent)."""
        if self.exit_code is not None:
            return
        kill_tree(self._proc.pid, grace_s=2.0)
        _, status, usage = os.wait4(self._proc.pid, 0)
        self._reaped(status, usage)


def wait_all(children: Sequence[MeasuredChild], *, timeout_s: float, interval_s: float = 0.02) -> bool:
    """Poll every child until all exited; kill the rest at the deadline. True if all exited by themselves."""
    deadline = time.monotonic() + timeout_s
    while True:
        codes = [child.poll() for child in children]  # every child sampled on every pass
        if all(code is not None for code in codes):
            return True
        if time.monotonic() > deadline:
            for child in children:
                child.stop()
            return False
        time.sleep(interval_s)
