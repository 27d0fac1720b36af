"""Warm-up until steady: the same rule for every runtime, instead of a fixed long warm-up for JIT stacks.

Before a cell's first window the generator runs in short windows of WINDOW_S with the cell's own load. The
warm-up ends at the first window after which (a) at least the minimum warm-up has passed and (b) the
throughput has stopped rising: across the last STEADY_SPAN windows the Theil–Sen slope of ln(requests/s)
(scipy's `theilslopes`, the median of the pairwise slopes) rises by at most STEADY_TOLERANCE; or at the cap,
which is recorded as not steady. The rule looks at a trend, not at a spread: on this kind of machine one-second
windows scatter by a log-sd of 0.15–0.2, so three windows within ±5 % of each other were rare for a steady stack
and common for one still climbing (a JVM whose rate doubled over the next two minutes passed it after 8 s); and
a robust slope over all the span, not two medians of five, so that three slow windows of the machine cannot
hide a climb (a JVM called steady at 345 2xx/s went on to 1,324 in the rounds: docs/methodology.md, "Warm-up
until steady"). A falling rate ends a warm-up too: more of the same load would not bring it back.

The machine's speed is taken out where the run's reference probe read each window (system/speedprobe.py): the
rule then judges ln(requests/s) + ln(the probe's unit time), the rate in units of the machine's speed at the time,
as the verdict's model does with its fitted slope (analysis/noise.py; the slope here is 1: a CPU k times slower
serves k times fewer requests). A machine slow for a few minutes at the start of the warm-up otherwise reads as a
climb to every stack warming then: in bench24 (`make bench`, 2026-11-29 10:51) the 22 stacks' first eight
one-second windows read 0.74 of their last five (median over the stacks), the ninth and after 0.95, and stacks
with no JIT warmed 16–26 s instead of 10–11 — about 3½ more minutes of warm-up than bench23 an hour before. A
window the probe did not read is judged on its rate alone (the whole span, then).

`Warming` takes the windows one at a time, so the interleaved schedule can warm its stacks in turn (a JIT's
compiler threads get the CPU between a stack's windows, as they will between its measured ones); `warm_up`
runs one cell's windows back to back. Separate short generator runs are used because neither engine's summary
has a per-second series (oha's JSON has none; k6's would need its streaming output), and a window boundary
costs the engine's start-up only (a few milliseconds for oha, under a second for k6), which falls outside every
window's own duration.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pgarena.config.defaults import DEFAULT_WARMUP_CAP_S
from pgarena.results.models import Warmup

WINDOW_S = 1.0
"""Length of one warm-up window (seconds)."""
STEADY_SPAN = 10
"""Windows whose trend is judged."""
STEADY_TOLERANCE = 0.05
"""... their fitted rise across the span at most this (5 %)."""


def is_steady(rps: list[float], *, span: int = STEADY_SPAN, tolerance: float = STEADY_TOLERANCE,
              units_ns: Sequence[float | None] | None = None) -> bool:
    """Whether the throughput (requests/s per window, in order) has stopped rising: the Theil–Sen slope of
    ln(requests/s) over the last `span` windows, times the span's `span` − 1 steps, is at most ln(1 + `tolerance`).
    `units_ns`: the speed probe's unit time in each window (aligned with `rps`); when it read all of the last
    `span`, ln(unit time) is added to each window's ln(requests/s) (the module docstring).

    Fewer than `span` values is not steady. All zero is steady (nothing is changing, e.g. a stack that fails
    every request: warming it longer would not help); a zero among others counts as a very slow window.
    """
    from scipy.stats import theilslopes  # NOTE: here, not at the top: scipy.stats costs ~1 s of every CLI start

    if span < 2 or len(rps) < span:
        return False
    last = rps[-span:]
    if all(value == 0 for value in last):
        return True
    floor = min((value for value in last if value > 0), default=1.0) / 10
    logs = [math.log(max(value, floor)) for value in last]
    units = list(units_ns[-span:]) if units_ns is not None and len(units_ns) == len(rps) else []
    if len(units) == span and all(unit is not None and unit > 0 for unit in units):
        logs = [log + math.log(unit) for log, unit in zip(logs, units)]  # type: ignore[arg-type]
    return float(theilslopes(logs)[0]) * (span - 1) <= math.log(1 + tolerance)


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


class Warming:
    """One cell's warm-up, a window at a time (the module docstring's rule): `add` each window's result until
    `done`, then `outcome`. At most ceil(cap_s / window_s) + 1 windows; the minimum is lowered to the cap."""

    def __init__(self, *, minimum_s: float, cap_s: float = DEFAULT_WARMUP_CAP_S, window_s: float = WINDOW_S) -> None:
        self.minimum_s, self.cap_s, self.window_s = min(minimum_s, cap_s), cap_s, window_s
        self.rps: list[float] = []
        self.units_ns: list[float | None] = []
        self.elapsed = 0.0
        self.answered = 0
        self.steady = False
        self._max_windows = int(cap_s / window_s) + 1

    @property
    def done(self) -> bool:
        return ((self.elapsed >= self.minimum_s and self.steady) or self.elapsed >= self.cap_s
                or len(self.rps) >= self._max_windows)

    def add(self, window: WindowResult, unit_ns: float | None = None) -> None:
        """One window's result; `unit_ns`: the speed probe's reading of it (None: not read)."""
        self.rps.append(window.rps)
        self.units_ns.append(unit_ns)
        self.elapsed += window.duration_s if window.duration_s > 0 else self.window_s
        self.answered += window.answered_2xx
        self.steady = is_steady(self.rps, units_ns=self.units_ns)

    def outcome(self) -> WarmupOutcome:
        record = Warmup(seconds=round(self.elapsed, 3), steady=self.steady, minimum_seconds=self.minimum_s,
                        cap_seconds=self.cap_s, windows_rps=[round(value, 1) for value in self.rps],
                        windows_unit_ns=[None if unit is None else round(unit, 1) for unit in self.units_ns]
                        if any(unit is not None for unit in self.units_ns) else [])
        return WarmupOutcome(record=record, answered_2xx=self.answered)


def warm_up(run_window: Callable[[float], WindowResult], *, minimum_s: float, cap_s: float = DEFAULT_WARMUP_CAP_S,
            window_s: float = WINDOW_S) -> WarmupOutcome:
    """Run `run_window(seconds)` back to back until steady (see the module docstring) or until `cap_s` seconds."""
    warming = Warming(minimum_s=minimum_s, cap_s=cap_s, window_s=window_s)
    while not warming.done:
        warming.add(run_window(window_s))
    return warming.outcome()
