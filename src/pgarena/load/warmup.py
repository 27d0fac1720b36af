"""Warm-up until steady: the same rule for every runtime, instead of a fixed long warm-up for JIT stacks.

Before each cell the generator runs in short windows of WINDOW_S with the cell's own load. The warm-up
ends at the first window after which (a) at least the minimum warm-up has passed and (b) the last
STEADY_WINDOWS windows' throughputs lie within ±STEADY_TOLERANCE of their mean; or at the cap, which is
recorded as not steady. Separate short generator runs are used because neither engine's summary has a
per-second series (oha's JSON has none; k6's would need its streaming output), and a window boundary
costs the engine's start-up only (a few milliseconds for oha, under a second for k6), which falls
outside every window's own duration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pgarena.config.defaults import DEFAULT_WARMUP_CAP_S
from pgarena.results.models import Warmup

WINDOW_S = 1.0
"""Length of one warm-up window (seconds)."""
STEADY_WINDOWS = 3
"""Consecutive windows that must agree."""
STEADY_TOLERANCE = 0.05
"""... each within ±5 % of their mean."""


def is_steady(rps: list[float], *, windows: int = STEADY_WINDOWS, tolerance: float = STEADY_TOLERANCE) -> bool:
    """Whether the last `windows` throughputs (requests/s) all lie within ±`tolerance` of their mean.

    Fewer values than `windows` is not steady. All zero is steady (nothing is changing, e.g. a stack
    that fails every request: warming it longer would not help).
    """
    if windows < 1 or len(rps) < windows:
        return False
    last = rps[-windows:]
    mean = sum(last) / windows
    if mean == 0:
        return all(value == 0 for value in last)
    return all(abs(value - mean) <= tolerance * mean for value in last)


@dataclass(frozen=True)
class WindowResult:
    """One warm-up window as the generator saw it."""

    rps: float
    duration_s: float
    answered_2xx: int


@dataclass(frozen=True)
class WarmupOutcome:
    """The warm-up's record and the 2xx answers it got (tx cells count them in their invariants)."""

    record: Warmup
    answered_2xx: int


def warm_up(run_window: Callable[[float], WindowResult], *, minimum_s: float, cap_s: float = DEFAULT_WARMUP_CAP_S,
            window_s: float = WINDOW_S) -> WarmupOutcome:
    """Run `run_window(seconds)` until steady (see the module docstring) or until `cap_s` seconds.

    The minimum is raised to the cap if it exceeds it. The loop is bounded: at most
    ceil(cap_s / window_s) + 1 windows run.
    """
    minimum_s = min(minimum_s, cap_s)
    rps: list[float] = []
    elapsed = 0.0
    answered = 0
    max_windows = int(cap_s / window_s) + 1
    steady = False
    for _ in range(max_windows):
        window = run_window(window_s)
        rps.append(window.rps)
        elapsed += window.duration_s if window.duration_s > 0 else window_s
        answered += window.answered_2xx
        steady = is_steady(rps)
        if (elapsed >= minimum_s and steady) or elapsed >= cap_s:
            break
    record = Warmup(seconds=round(elapsed, 3), steady=steady, minimum_seconds=minimum_s, cap_seconds=cap_s,
                    windows_rps=[round(value, 1) for value in rps])
    return WarmupOutcome(record=record, answered_2xx=answered)
