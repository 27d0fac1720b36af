"""What one generator window yields: the Window record (outcome, the generator's CPU over the measured
window, raw output) and how that CPU is read. Shared by the single generator (window.py) and the several
processes of a distributed window (distributed.py), which both return a Window."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pgarena.load.engines import LoadOutcome, LoadSpec
from pgarena.results.models import DistributedLoad
from pgarena.system.children import cpu_between


def offered_requests(spec: LoadSpec, seconds: float) -> int | None:
    """Requests an open-model window of `seconds` schedules (rate × seconds); None in the closed model."""
    return None if spec.rate is None else round(spec.rate * seconds)


@dataclass(frozen=True)
class Window:
    """One generator run: its outcome, the generator's CPU seconds over the measured window and its raw
    output file."""

    outcome: LoadOutcome
    generator_cpu_seconds: float | None
    """None: not measured (a generator on another host)."""
    raw_output: Path
    generator_cpu_seconds_process: float | None = None
    """The generator's CPU over its whole process (start-up and post-window work included)."""
    generators: DistributedLoad | None = None
    """Several generators (distributed.py): each one's figures; None with one generator."""

    def dropped(self, spec: LoadSpec, nominal_s: float) -> tuple[int | None, int]:
        """(offered, dropped) of an open-model window; (None, 0) in the closed model."""
        offered = offered_requests(spec, nominal_s)
        if offered is None:
            return None, 0
        reported = self.outcome.dropped
        return offered, reported if reported is not None else max(0, offered - self.outcome.requests)


def window_cpu_seconds(samples: list[tuple[float, float]], raw_output: Path, duration_s: float,
                       process_cpu_s: float) -> float:
    """The generator's CPU seconds over [end − duration, end], end = the raw output's modification time;
    its whole-process CPU when the samples do not cover that span."""
    try:
        end = raw_output.stat().st_mtime
    except OSError:
        return process_cpu_s
    window = cpu_between(samples, end - duration_s, end)
    return process_cpu_s if window is None else window
