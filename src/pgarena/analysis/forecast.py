"""How many more rounds a pair of a table needs before its interval decides (the race's forecast).

The scheduler (load/scheduler.py) lets a pair leave the race when the rounds it would need do not fit in the cap
or the time budget left, and gives its rounds to the pairs that can still be decided.
"""

from __future__ import annotations

import math

from pgarena.analysis.sequential import DEFAULT_TIGHTEST_AT, Inference, PairInterval, fixed_half_width, half_width


def rounds_to_resolve(inference: Inference, a: str, b: str, tightest_at: int = DEFAULT_TIGHTEST_AT,
                      horizon: int = 400, final: bool = True) -> int | None:
    """The paired rounds pair (a, b) would need, at its present estimate and variance, for its interval to
    exclude 1 or fit within the margin (None: not within `horizon` rounds, or nothing to go on), its centre taken
    one standard error closer to the nearer outcome (no pair is given up on a chance low estimate) — at the final
    look where the table has one and the pair can still get it (`final`: both stacks measured in every round so
    far; raced until the time runs out, that is the interval the pair gets)."""
    found = inference.interval(a, b)
    if found is None or found.rounds == 0 or not math.isfinite(found.variance):
        return None
    centre = abs(math.log(found.ratio))
    error = math.sqrt(found.variance / found.rounds)  # give the pair the benefit of one standard error
    target = max(centre + error, math.log(1 + inference.margin) - max(0.0, centre - error))
    return rounds_until(found, inference.alpha, target, tightest_at, horizon, inference.final_alpha if final else None)


def rounds_until(found: PairInterval, alpha: float, half: float, tightest_at: int = DEFAULT_TIGHTEST_AT,
                 horizon: int = 400, final_alpha: float | None = None) -> int | None:
    """The first round count ≤ `horizon` at which `found`'s log half-width, at its present variance and with
    degrees of freedom growing as the pair's own do, falls below `half` (None: not within the horizon); with
    `final_alpha`, the narrower of the confidence sequence's and the final look's."""
    for n in range(found.rounds, horizon + 1):
        df = found.df + (n - found.rounds)
        width = half_width(n, found.variance, alpha, df, tightest_at)
        if final_alpha is not None:
            width = min(width, fixed_half_width(n, found.variance, final_alpha, df))
        if width < half:
            return n
    return None
