"""Max sustainable throughput under an SLO: the highest load level whose p99 and error rate stay within a
stated target, found by a deterministic search over levels (issue 5).

The search is pure: it calls `measure(level)` — which the runner drives with open-model load (an arrival
rate) or a number of VUs — and decides from the returned `LevelResult`s alone. No I/O, no clock, no
randomness; the time budget is a number of measured steps (one step = one measured window at one level,
so budget_steps × window length bounds the search's time).

Method: exponential growth from `start` (level × `growth`, capped at `max_level`) until a level breaks the
SLO — or, when `start` itself breaks it, exponential descent (level ÷ `growth`, down to `min_level`) until
a level meets it — then bisection between the last passing and the first failing level until the bracket is narrower
than `rel_precision` of the passing level (or one unit, with integer levels) or the budget is spent.
Bisection, not interpolation: one noisy p99 near the knee moves the bracket by at most one halving.

The answer is the highest level measured that passed, with its measured RPS; its uncertainty is the
bracket [last pass, first fail]: if p99 and the error rate grow with the level and the measurements are
exact, the true limit lies in [last pass, first fail). Each level is measured once, so measurement noise
near the knee can move the answer by its size there; a caller that needs more can make `measure`
repeat a level (e.g. until `stats.should_stop`) and return the repetitions' median.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from pgarena.config.defaults import DEFAULT_MAX_ERROR_RATE

DEFAULT_REL_PRECISION = 0.05
"""Bisection stops once first-fail − last-pass ≤ 5 % of last-pass."""

# stop reasons of a search
CONVERGED = "converged"
"""The bracket [last pass, first fail] is within the requested precision."""
BUDGET = "budget"
"""The step budget ran out; the bracket (or the growth phase) is unfinished."""
MAX_LEVEL = "max-level"
"""`max_level` itself passed: the limit is at or above it (no failing level, no upper bound)."""
START_FAILS = "start-fails"
"""`start` and every level down to `min_level` broke the SLO: no passing level, the limit is below them."""


@dataclass(frozen=True)
class SloTarget:
    """The SLO a level must meet: p99 request latency at most `p99_ms` milliseconds, a failed-request
    share at most `max_error_rate` (both inclusive) and no request that timed out (a timeout is a user
    left without an answer, whatever the share). A NaN p99 or error rate (e.g. no request answered)
    fails."""

    p99_ms: float
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE

    def __post_init__(self) -> None:
        if not self.p99_ms > 0:
            raise ValueError(f"p99_ms must be positive, got {self.p99_ms}")
        if not 0 <= self.max_error_rate < 1:
            raise ValueError(f"max_error_rate must be in [0, 1), got {self.max_error_rate}")

    def passes(self, result: LevelResult) -> bool:
        """True when `result` meets the SLO (written so that NaN fails)."""
        return result.p99_ms <= self.p99_ms and result.error_rate <= self.max_error_rate and result.timeouts == 0


@dataclass(frozen=True)
class LevelResult:
    """One measured level: the offered `level` (arrival rate in requests/s, or VUs), the achieved `rps`
    (2xx answers per second), the p99 request latency in ms (failed requests counted at the timeout),
    the failed-request share in [0, 1] and the requests that timed out."""

    level: float
    rps: float
    p99_ms: float
    error_rate: float
    timeouts: int = 0


@dataclass(frozen=True)
class SloSearch:
    """The outcome of `search_max_sustainable`.

    curve: every measured level, in measurement order (growth phase, then bisection);
    verdicts: target.passes(...) for each point of `curve`;
    best: the highest passing level's result — the answer (None when `start` already failed);
    first_failure: the lowest failing level above `best` (None when no level failed);
    stop_reason: CONVERGED, BUDGET, MAX_LEVEL or START_FAILS.
    """

    target: SloTarget
    curve: tuple[LevelResult, ...]
    verdicts: tuple[bool, ...]
    best: LevelResult | None
    first_failure: LevelResult | None
    stop_reason: str

    @property
    def steps_used(self) -> int:
        return len(self.curve)

    @property
    def answer_level(self) -> float | None:
        """The highest level that met the SLO."""
        return self.best.level if self.best else None

    @property
    def answer_rps(self) -> float | None:
        """The throughput achieved at `answer_level`."""
        return self.best.rps if self.best else None

    @property
    def bracket(self) -> tuple[float, float]:
        """[last pass, first fail] in level units: where the limit lies. 0 when nothing passed; +inf when
        nothing failed."""
        low = self.best.level if self.best else 0.0
        high = self.first_failure.level if self.first_failure else math.inf
        return low, high

    @property
    def rel_uncertainty(self) -> float:
        """(first fail − last pass) / last pass; +inf when either end is missing."""
        low, high = self.bracket
        return (high - low) / low if low > 0 and math.isfinite(high) else math.inf


def search_max_sustainable(measure: Callable[[float], LevelResult], *, start: float, max_level: float,
                           target: SloTarget, budget_steps: int, growth: float = 2.0,
                           rel_precision: float = DEFAULT_REL_PRECISION,
                           integer_levels: bool = False, min_level: float | None = None) -> SloSearch:
    """Search the highest level in [start, max_level] that meets `target`, measuring at most
    `budget_steps` levels.

    1. Growth: measure start, start·growth, start·growth², … (the last one capped at `max_level`) until a
       level fails (→ 2), `max_level` passes (stop: MAX_LEVEL) or the budget is spent (stop: BUDGET).
       Levels in this phase strictly increase. If `start` fails, descend instead: start/growth,
       start/growth², … (the last one raised to `min_level`, default start/growth⁴) until a level passes
       (→ 2), `min_level` fails too (stop: START_FAILS) or the budget is spent (stop: BUDGET).
    2. Bisection: while first_fail − last_pass > rel_precision · last_pass (and, with integer levels,
       > 1), measure the midpoint; a pass raises the lower end, a failure lowers the upper end. Stops
       CONVERGED, or BUDGET when the steps run out first.

    `integer_levels=True` (VUs, connections) rounds every level to an integer: growth steps by at least
    1, the midpoint is floor((low + high) / 2). `measure` is called with the level (a float, integral
    when integer_levels) and must return a LevelResult whose `level` is that level (the search brackets
    the levels it asked for; `SloSearch.bracket` reads them back from the results).
    """
    if not start > 0:
        raise ValueError(f"start must be positive, got {start}")
    if not max_level >= start:
        raise ValueError(f"max_level ({max_level}) must be >= start ({start})")
    if budget_steps < 1:
        raise ValueError(f"budget_steps must be >= 1, got {budget_steps}")
    if not growth > 1:
        raise ValueError(f"growth must be > 1, got {growth}")
    if not rel_precision > 0:
        raise ValueError(f"rel_precision must be positive, got {rel_precision}")
    if min_level is None:
        min_level = start / growth**4
    if not 0 < min_level <= start:
        raise ValueError(f"min_level must be in (0, start], got {min_level}")
    if integer_levels:
        start, max_level = float(math.ceil(start)), float(math.floor(max_level))
        min_level = float(max(1, math.ceil(min_level)))
        if max_level < start:
            raise ValueError("no integer level between start and max_level")

    curve: list[LevelResult] = []
    verdicts: list[bool] = []
    best: LevelResult | None = None
    failure: LevelResult | None = None

    def step(level: float) -> bool:
        result = measure(level)
        passed = target.passes(result)
        curve.append(result)
        verdicts.append(passed)
        return passed

    def done(reason: str) -> SloSearch:
        return SloSearch(target=target, curve=tuple(curve), verdicts=tuple(verdicts), best=best,
                         first_failure=failure, stop_reason=reason)

    # 1. growth
    low = high = None  # the bracket in requested levels (the results' own `level` may be rounded)
    level = start
    while True:
        if len(curve) >= budget_steps:
            return done(BUDGET)
        if step(level):
            best, low = curve[-1], level
            if level >= max_level:
                return done(MAX_LEVEL)
            nxt = level * growth
            if integer_levels:
                nxt = max(float(math.floor(nxt)), level + 1)
            level = min(nxt, max_level)
        else:
            failure, high = curve[-1], level
            break
    while best is None:  # descent: `start` failed
        if level <= min_level:
            return done(START_FAILS)
        if len(curve) >= budget_steps:
            return done(BUDGET)
        nxt = level / growth
        level = max(float(math.floor(nxt)) if integer_levels else nxt, min_level)
        if step(level):
            best, low = curve[-1], level
        else:
            failure, high = curve[-1], level

    # 2. bisection
    assert low is not None and high is not None
    while True:
        gap = high - low
        if gap <= rel_precision * low or (integer_levels and gap <= 1):
            return done(CONVERGED)
        if len(curve) >= budget_steps:
            return done(BUDGET)
        mid = float(math.floor((low + high) / 2)) if integer_levels else (low + high) / 2
        if step(mid):
            best, low = curve[-1], mid
        else:
            failure, high = curve[-1], mid
