"""Is a failure rate above an allowance? The one-sided exact binomial test, for small samples.

The answers sampled under load (verify/checks.py) are 21–177 per cell: a fixed cut such as "more than 1 %
failed" on so few invalidates a stack whose true failure rate is half the allowance in 10–22 % of runs
(issue 22). The exact binomial test (Clopper & Pearson's tail; scipy.stats.binom) instead asks whether the
failures seen are improbable for a stack failing at the allowance itself: with `failed` of `total` failed,
the rate is judged above `rate` when P(X ≥ failed | total, rate) < `level`. A stack failing at exactly the
allowance is then flagged in at most `level` of its cells, one failing less even more rarely, whatever
the sample size; the power to catch a stack failing more grows with the sample.
"""

from __future__ import annotations

DEFAULT_TEST_LEVEL = 0.01
"""Significance level of the one-sided test: the largest share of cells of a stack failing at exactly the
allowance that are flagged (false invalidation)."""


def exceedance_p_value(failed: int, total: int, rate: float) -> float:
    """P(X ≥ failed) for X ~ Binomial(total, rate): how improbable `failed` failures of `total` trials are
    for a failure rate of `rate` (1.0 when nothing failed)."""
    if total < 0 or not 0 <= failed <= max(total, 0):
        raise ValueError(f"failed must lie in 0..total, got {failed} of {total}")
    if failed == 0:
        return 1.0
    from scipy.stats import binom  # NOTE: here, not at the top: scipy.stats costs ~0.8 s of every CLI start

    return float(binom.sf(failed - 1, total, rate))


def rate_exceeds(failed: int, total: int, rate: float, level: float = DEFAULT_TEST_LEVEL) -> bool:
    """Whether `failed` of `total` show a failure rate above `rate`: the one-sided exact binomial test of
    "rate ≤ `rate`" rejects at `level` (no trials: never)."""
    return total > 0 and exceedance_p_value(failed, total, rate) < level

