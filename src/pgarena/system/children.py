"""Several commands run at once to completion, each measured like `process.run_measured` measures one.

`run_measured` blocks on one child; several load generators that must start together need their processes
spawned first and waited for afterwards. A `MeasuredChild` is that: started in its own process group,
pinned, with the parent-death signal (process.py), its CPU seconds sampled while it runs (psutil) and read
exactly from the kernel's rusage when it is reaped (wait4).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from pgarena.system.process import _preexec, _sample_cpu, _watch, kill_tree, popen_guarded


class MeasuredChild:
    """One command running to completion; `poll` reaps it, `samples` are (wall-clock time, CPU seconds so
    far) pairs for `process.cpu_between`, the last one from wait4 at its exit."""

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
