"""How many more rounds a pair of a table needs before its interval decides (the race's forecast).

The scheduler (load/scheduler.py) lets a pair leave the race when the rounds it would need do not fit in the cap
or the time budget left, and gives its rounds to the pairs that can still be decided. The report tells, for each
neighbouring pair left open, what a run of its two stacks alone would need (`rounds_alone`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from statistics import NormalDist

from pgarena.analysis.probecheck import ProbeCheck, charge_relative_se
from pgarena.analysis.sequential import (
    DEFAULT_TIGHTEST_AT,
    FINAL_SHARE,
    Inference,
    PairInterval,
    fixed_half_width,
    half_width,
)


BENEFIT_SE = 1.0
"""The race's forecast takes a pair's centre this many standard errors closer to the outcome it is nearer to. Of
0, 0.5, 1, 2 and 3 in races shaped like bench27's headline, 1 resolved the most pairs in the time it used
(`scripts/race_allocation.py`; docs/methodology.md, "A race, within a budget")."""


def rounds_to_resolve(inference: Inference, a: str, b: str, tightest_at: int = DEFAULT_TIGHTEST_AT,
                      horizon: int = 400, final: bool = True, benefit: float = BENEFIT_SE) -> int | None:
    """The paired rounds pair (a, b) would need, at its present estimate and variance, for its interval to
    exclude 1 or fit within the margin (None: not within `horizon` rounds, or nothing to go on), its centre taken
    `benefit` standard errors closer to the nearer outcome (no pair is given up on a chance low estimate) and the
    probe shifts' floor `benefit` of its standard errors lower (`charge_with_benefit`: nor on a chance high one) — at
    the final look where the table has one and the pair can still get it (`final`: both stacks measured in every
    round so far; raced until the time runs out, that is the interval the pair gets)."""
    found = inference.interval(a, b)
    if found is None or found.rounds == 0 or not math.isfinite(found.variance):
        return None
    centre = abs(math.log(found.ratio))
    error = benefit * math.sqrt(found.variance / found.rounds)
    target = max(centre + error, math.log(1 + inference.margin) - max(0.0, centre - error))
    found = charge_with_benefit(found, inference.fit.probe_check, benefit)
    return rounds_until(found, inference.alpha, target, tightest_at, horizon, inference.final_alpha if final else None)


def charge_with_benefit(found: PairInterval, check: ProbeCheck | None, benefit: float) -> PairInterval:
    """`found` with the part of its variance the rounds do not average away (the probe's shifts, 2β²τ̂²) taken
    `benefit` of its standard errors lower (`probecheck.charge_relative_se`), not below 0. τ̂² from a few stacks'
    effects is mostly noise — four identical copies read F 1.6 and 2.9 by chance after 10 and 5 rounds (`pgarena
    calibrate`, 2026-11-30) — and where the shifts are not real it shrinks as the windows grow; kept whole, a chance
    high estimate gave the pair up for good. A shift the check shows clearly keeps most of its floor."""
    if not found.fixed:
        return found
    fixed = found.fixed * max(0.0, 1 - benefit * charge_relative_se(check))
    return replace(found, variance=found.variance_at(0) + found.rounds * fixed, fixed=fixed)


def rounds_until(found: PairInterval, alpha: float, half: float, tightest_at: int = DEFAULT_TIGHTEST_AT,
                 horizon: int = 400, final_alpha: float | None = None) -> int | None:
    """The first round count ≤ `horizon` at which `found`'s log half-width, at its present variance (the part the
    rounds do not average away, `found.fixed`, kept whole) and with degrees of freedom growing as the pair's own do,
    falls below `half` (None: not within the horizon); with
    `final_alpha`, the narrower of the confidence sequence's and the final look's. Both half-widths shrink as the
    rounds grow (the boundary's radius over n falls while ln(1/α) > ½, and Student's critical value with the degrees
    of freedom), so the count is bisected: the race asks this of every open pair after every round."""

    def fits(n: int) -> bool:
        df, variance = found.df + (n - found.rounds), found.variance_at(n)
        width = half_width(n, variance, alpha, df, tightest_at)
        if final_alpha is not None:
            width = min(width, fixed_half_width(n, variance, final_alpha, df))
        return width < half

    low, high = found.rounds, horizon
    if low > high or not fits(high):
        return None
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if fits(middle) else (middle + 1, high)
    return low


ALONE_POWER = 0.8
"""The share of runs in which the forecast of `rounds_alone` resolves the pair."""
ALONE_HORIZON = 2_000
"""`rounds_alone` looks no further than this many rounds."""
ALONE_MIN_ROUNDS = 3


def resolve_probability(log_ratio: float, variance: float, rounds: int, alpha: float, margin: float,
                        df: float = math.inf) -> float:
    """The chance that a fixed-sample interval at two-sided error `alpha` over `rounds` paired rounds, of per-round
    `variance`, for a pair whose true log ratio is `log_ratio`, resolves it (`resolve_chance`): its centre is normal
    around `log_ratio` with the variance over the rounds; the half-width is taken at `variance` (Student's at `df`)."""
    return resolve_chance(log_ratio, math.sqrt(variance / rounds), fixed_half_width(rounds, variance, alpha, df), margin)


def resolve_chance(centre: float, sd: float, half: float, margin: float) -> float:
    """The chance that an interval of log half-width `half`, its centre normal around `centre` with `sd`, resolves its
    pair: excludes 1 (ordered) or lies within [1/(1+margin), 1+margin] (equivalent)."""
    e = math.log1p(margin) - half  # an equivalent pair's centre lies within ±e
    if e >= half:  # every centre resolves: beyond ±half it is ordered, within ±half ≤ ±e equivalent
        return 1.0
    phi = NormalDist().cdf
    ordered = phi((centre - half) / sd) + phi((-centre - half) / sd)
    equivalent = max(0.0, phi((e - centre) / sd) - phi((-e - centre) / sd)) if e > 0 else 0.0
    return min(1.0, ordered + equivalent)


def least_rounds(log_ratio: float, variance: float, alpha: float, margin: float, power: float,
                 df_at: Callable[[int], float], horizon: int = ALONE_HORIZON, fixed: float = 0.0) -> int | None:
    """The least rounds (from ALONE_MIN_ROUNDS, at most `horizon`; None: not within it) at which a final look at error
    `alpha`, with `df_at(rounds)` degrees of freedom, resolves a pair of true `log_ratio` and per-round `variance` in
    `power` of runs (`resolve_probability`), its estimate also carrying a variance `fixed` that the rounds do not
    average away (`PairInterval.fixed`). The chance grows with the rounds, so the count is bisected."""

    def enough(n: int) -> bool:
        return resolve_probability(log_ratio, variance + n * fixed, n, alpha, margin, df=df_at(n)) >= power

    if not enough(horizon):
        return None
    low, high = ALONE_MIN_ROUNDS, horizon
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle + 1, high)
    return low


def forecastable(found: PairInterval) -> bool:
    """`found` has what a forecast needs: paired rounds, a positive finite variance, and rounds (not blocks of them,
    analysis/executions.py) as its unit."""
    return found.rounds > 0 and math.isfinite(found.variance) and found.variance > 0 and not found.blocks


def rounds_alone(found: PairInterval, power: float = ALONE_POWER, horizon: int = ALONE_HORIZON) -> int | None:
    """The paired rounds a run of only this pair's two stacks would need to resolve it in `power` of runs, if its
    ratio and its rounds' scatter are those `found` estimates (None: more than `horizon`, or not `forecastable`).

    Such a table has one pair, so its error is the family's whole 1 − level (Bonferroni over one). Raced until a
    budget ends it, its final look gets `FINAL_SHARE` of that error with the pair's own variance (rounds − 1 degrees
    of freedom); the forecast reads that look alone, so the race's earlier looks, which can only resolve it sooner,
    make it an upper bound."""
    if not forecastable(found):
        return None
    return least_rounds(math.log(found.ratio), found.variance_at(0),
                        FINAL_SHARE * (1 - found.level), found.margin, power, df_at=lambda n: n - 1, horizon=horizon,
                        fixed=found.fixed)
