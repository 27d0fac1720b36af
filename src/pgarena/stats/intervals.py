"""Statistics over repetitions: confidence intervals, the stopping rule and ranks with ties.

Pure functions of lists of numbers (no pgarena imports), so every layer may use them. Percentiles
within a window come from the generators themselves; the median, min and max of a figure over the
repetitions is `results.models.Spread.of`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import TypeVar

K = TypeVar("K")

DEFAULT_NOISY_REL_SPREAD = 0.2
"""A cell whose RPS range exceeds 20 % of its median is flagged 'noisy' (this machine drifts ±10–20 %)."""


# --- Confidence intervals over repetitions and the stopping rule (issue 5) ------------------------------

DEFAULT_CONFIDENCE_LEVEL = 0.95
"""Two-sided confidence level of the interval on a cell's repetitions."""
DEFAULT_TARGET_REL_HALF_WIDTH = 0.02
"""A cell stops repeating once its interval's half-width is within ±2 % of its mean."""
DEFAULT_EQUIVALENCE_MARGIN = 0.10
"""Interleaved verdicts: two stacks are 'equivalent' when their ratio's interval lies within [1/1.10, 1.10]."""
DEFAULT_MIN_REPETITIONS = 3
"""Never stop before this many repetitions, however tight the first ones are."""


LOG_FLOAT_MAX = math.log(1.7e308)
"""ln of about the largest float: exp beyond it overflows (below −LOG_FLOAT_MAX it underflows to 0.0, no error)."""


def ratio_bounds(log_centre: float, log_down: float, log_up: float | None = None) -> tuple[float, float]:
    """exp(centre − down), exp(centre + up) (up defaults to down): an interval on the log scale as ratios, 0 and
    inf where a bound is infinite or beyond what a float holds (two windows on a machine that swung 8× between
    them, read at 1 degree of freedom, give a half-width whose exp overflows: a CI run, 2026-11-27)."""
    up = log_down if log_up is None else log_up
    low = math.exp(log_centre - log_down) if math.isfinite(log_down) else 0.0
    high = log_centre + up
    return low, math.exp(high) if math.isfinite(up) and high < LOG_FLOAT_MAX else math.inf


def inverse_bounds(low: float, high: float) -> tuple[float, float]:
    """The bounds of 1 / x for x in [low, high] (a ratio turned around), a bound of 0 turning into ∞ and back."""
    return (0.0 if math.isinf(high) else 1 / high), (math.inf if low == 0 else 1 / low)


def bounds_text(low: float, high: float) -> str:
    """'0.84–1.31' ('0.00–∞' where `ratio_bounds` gave an unbounded interval)."""
    return f"{low:.2f}–" + ("∞" if not math.isfinite(high) else f"{high:.2f}")


def t_critical(level: float, df: int) -> float:
    """The two-sided critical value t* of Student's t distribution: P(|T| <= t*) = `level` for `df` degrees
    of freedom (t* is the (1 + level)/2 quantile; 4.303 for level 0.95 and df 2, 1.960 as df grows), from
    SciPy's Student t quantile (`scipy.special.stdtrit`, imported here: it costs half a second to load)."""
    if not 0 < level < 1:
        raise ValueError(f"confidence level must be in (0, 1), got {level}")
    if df < 1 or int(df) != df:
        raise ValueError(f"degrees of freedom must be a positive integer, got {df}")
    from scipy.special import stdtrit

    return float(stdtrit(int(df), (1 + level) / 2))


def confidence_interval(values: Sequence[float], level: float = DEFAULT_CONFIDENCE_LEVEL) -> tuple[float, float]:
    """Student's t confidence interval for the mean of the repetition values (e.g. each repetition's RPS).

    mean ± t*(level, n - 1) · s / sqrt(n), with s the sample standard deviation (n - 1 denominator) and t*
    from `t_critical`. It assumes the repetitions are independent draws of one roughly normal figure; with
    n = 3..10 repetitions that is the standard small-sample interval (Student 1908; any statistics text,
    e.g. NIST/SEMATECH e-Handbook of Statistical Methods §7.2.2.1). Needs at least 2 values; identical
    values give the zero-width interval (mean, mean).

    This is an interval over repetition-level figures, not a latency percentile: percentiles inside a
    window come from the load generators.
    """
    n = len(values)
    if n < 2:
        raise ValueError(f"a confidence interval needs at least 2 values, got {n}")
    mean = statistics.fmean(values)
    half = t_critical(level, n - 1) * statistics.stdev(values) / math.sqrt(n)
    return mean - half, mean + half


def relative_half_width(values: Sequence[float], level: float = DEFAULT_CONFIDENCE_LEVEL) -> float:
    """Half-width of `confidence_interval(values, level)` divided by |mean|: 0.02 means "mean ± 2 %".

    0.0 when the interval has zero width (all values equal, including all zero); +inf when the mean is 0
    but the values differ. Needs at least 2 values.
    """
    low, high = confidence_interval(values, level)
    half = (high - low) / 2
    if half == 0:
        return 0.0
    mean = (low + high) / 2
    return half / abs(mean) if mean else math.inf


def should_stop(values: Sequence[float], *, target_rel_half_width: float = DEFAULT_TARGET_REL_HALF_WIDTH,
                level: float = DEFAULT_CONFIDENCE_LEVEL, min_repetitions: int = DEFAULT_MIN_REPETITIONS) -> bool:
    """The sequential stopping rule of a cell: True when no more repetitions are needed.

    True iff len(values) >= max(min_repetitions, 2) and
    relative_half_width(values, level) <= target_rel_half_width. The cell's time budget is the caller's
    second stop; a cell that stops on its budget with the interval still wider than the target is noisy
    (`interval_too_wide`) and must not be ranked. The rule is re-evaluated after every repetition, which
    makes the final interval's coverage somewhat below its nominal level (optional stopping); the minimum
    of 3 repetitions limits how early a lucky pair can stop it.
    """
    if target_rel_half_width <= 0:
        raise ValueError("target_rel_half_width must be positive")
    if len(values) < max(min_repetitions, 2):
        return False
    return relative_half_width(values, level) <= target_rel_half_width


def interval_too_wide(values: Sequence[float], *, target_rel_half_width: float = DEFAULT_TARGET_REL_HALF_WIDTH,
                      level: float = DEFAULT_CONFIDENCE_LEVEL) -> bool:
    """True when the repetitions do not pin the figure down to the target: fewer than 2 values, or a
    relative half-width above `target_rel_half_width`. Such a cell is flagged 'noisy — do not rank'."""
    if len(values) < 2:
        return True
    return relative_half_width(values, level) > target_rel_half_width


def rank_with_ties(items: Sequence[tuple[K, float, float, float]]) -> list[tuple[K, str]]:
    """Ranks that do not pretend an order the intervals do not establish (higher is better, e.g. RPS).

    Input: (key, low, high, median) per item, low..high being its confidence interval (closed).
    Output: (key, label) per item, sorted by median descending (input order among equal medians).

    Item j is *surely above* item i when low_j > high_i (the intervals are disjoint and j's is higher);
    *surely below* when high_j < low_i; otherwise the two overlap (touching ends count as overlap).
    Item i's rank range is
        best  = 1 + number of items surely above i,
        worst = n - number of items surely below i,
    i.e. every rank i can take in some order consistent with the intervals; it is widened, if needed, to
    include i's position in the median order (which only matters if a median lies outside its interval).
    The label is "3" when best == worst, else "2–4" (en dash). Disjoint intervals give plain 1, 2, 3;
    two overlapping items above a clearly lower third give "1–2", "1–2", "3".
    """
    for key, low, high, _ in items:
        if not low <= high:
            raise ValueError(f"interval of {key!r} has low > high: {low} > {high}")
    order = sorted(range(len(items)), key=lambda i: -items[i][3])
    n = len(items)
    labels: list[tuple[K, str]] = []
    for position, i in enumerate(order, start=1):
        _, low_i, high_i, _ = items[i]
        above = sum(1 for _, low_j, _, _ in items if low_j > high_i)
        below = sum(1 for _, _, high_j, _ in items if high_j < low_i)
        best, worst = min(1 + above, position), max(n - below, position)
        labels.append((items[i][0], str(best) if best == worst else f"{best}–{worst}"))
    return labels


def welch_log_ratio(a: Sequence[float], b: Sequence[float],
                    level: float = DEFAULT_CONFIDENCE_LEVEL) -> tuple[float, float, float] | None:
    """(ratio, low, high): the ratio of the geometric means of two independent samples of positive figures
    (e.g. one stack's RPS per window on two workloads measured at different times) with its confidence
    interval — Welch's unequal-variance t-interval on the difference of the log means, with the
    Welch–Satterthwaite degrees of freedom rounded down (Welch, Biometrika 34, 1947). None with fewer than 2
    positive values on either side. Two samples with no spread give a zero-width interval."""
    logs_a = [math.log(v) for v in a if v > 0]
    logs_b = [math.log(v) for v in b if v > 0]
    if len(logs_a) < 2 or len(logs_b) < 2:
        return None
    diff = statistics.fmean(logs_a) - statistics.fmean(logs_b)
    va, vb = statistics.variance(logs_a) / len(logs_a), statistics.variance(logs_b) / len(logs_b)
    if va + vb == 0:
        return math.exp(diff), math.exp(diff), math.exp(diff)
    df = (va + vb) ** 2 / (va ** 2 / (len(logs_a) - 1) + vb ** 2 / (len(logs_b) - 1))
    half = t_critical(level, max(1, math.floor(df))) * math.sqrt(va + vb)
    return math.exp(diff), math.exp(diff - half), math.exp(diff + half)
