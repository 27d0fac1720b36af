"""Paired comparisons: stacks measured in the same rounds are compared round by round.

In an interleaved run every round measures every stack of a cell once, close together in time, in a fresh
random order (randomized multiple interleaved trials: Abedi and Brecht, "Conducting Repeatable Experiments
in Highly Variable Cloud Computing Environments", ICPE 2017). The machine's slow drift then moves the
stacks of one round together, and the *ratio* of two stacks within a round is far steadier than either
figure across rounds. This module turns per-round figures into:

- `paired_ratio`: the ratio of stack A to stack B with a confidence interval computed on the per-round
  ratios (a paired t-interval on log ratios; its centre is the geometric mean of the ratios, the right
  average for ratios: Fleming and Wallace, "How not to lie with statistics: the correct way to summarize
  benchmark results", CACM 29(3), 1986);
- `paired_ranks`: ranks with ties where stack i is *surely above* j when the interval of i/j lies wholly
  above 1 (the pairwise counterpart of `stats.rank_with_ties`).

These are per-pair, fixed-sample intervals, used where one pair is looked at once (`rankcheck`). The
verdict of an interleaved table, and the rounds' stopping rule, use `analysis.sequential`: simultaneous over every
pair of the table and valid after every look.

Values are "higher is better" figures (requests/s); a round in which either stack has no value is left
out of that pair.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from pgarena.analysis.forecast import ALONE_HORIZON, forecastable, rounds_alone
from pgarena.analysis.sequential import Inference, PairInterval, Status
from pgarena.stats.intervals import (
    DEFAULT_CONFIDENCE_LEVEL,
    DEFAULT_EQUIVALENCE_MARGIN,
    bounds_text,
    inverse_bounds,
    ratio_bounds,
    t_critical,
)

RATIO_METHOD = "paired Student t-interval on the per-round log ratios (geometric mean of the ratios)"

Relation = Literal["above", "below", "not resolved"]


@dataclass(frozen=True)
class RatioInterval:
    """A / B over the rounds both were measured in: geometric mean of the per-round ratios and its
    confidence interval (dimensionless; 1.5 means A did 1.5× B's figure)."""

    ratio: float
    low: float
    high: float
    rounds: int
    level: float

    @property
    def relation(self) -> Relation:
        """'above' when the whole interval is above 1, 'below' when below, else 'not resolved'."""
        if self.low > 1:
            return "above"
        if self.high < 1:
            return "below"
        return "not resolved"

    def within(self, target_rel_half_width: float) -> bool:
        """True when the interval lies inside [1 / (1 + target), 1 + target]: A and B are equal to within
        the target width, so more rounds would not order them usefully."""
        return self.low >= 1 / (1 + target_rel_half_width) and self.high <= 1 + target_rel_half_width

    def inverse(self) -> RatioInterval:
        """B / A."""
        return RatioInterval(1 / self.ratio, *inverse_bounds(self.low, self.high), self.rounds, self.level)


def paired_ratio(a: Sequence[float | None], b: Sequence[float | None],
                 level: float = DEFAULT_CONFIDENCE_LEVEL) -> RatioInterval | None:
    """The ratio a/b from values paired by round index (None = not measured in that round).

    Method: r_k = ln(a_k / b_k) over the rounds where both are positive; the interval is
    exp(mean(r) ± t*(level, n − 1) · sd(r) / √n) (Student's paired t-interval, on logs so that A/B and B/A
    are exact inverses). None with fewer than 2 paired rounds. Identical ratios give a zero-width interval.
    """
    if len(a) != len(b):
        raise ValueError(f"paired values need the same number of rounds ({len(a)} vs {len(b)})")
    logs = [math.log(x / y) for x, y in zip(a, b) if x is not None and y is not None and x > 0 and y > 0]
    n = len(logs)
    if n < 2:
        return None
    mean = statistics.fmean(logs)
    half = t_critical(level, n - 1) * statistics.stdev(logs) / math.sqrt(n)
    low, high = ratio_bounds(mean, half)
    return RatioInterval(ratio=math.exp(mean), low=low, high=high, rounds=n, level=level)


def _median(values: Sequence[float | None]) -> float:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else float("-inf")


def median_order(per_round: Mapping[str, Sequence[float | None]]) -> list[str]:
    """Stacks by their median over the rounds, highest first (ties keep the mapping's order)."""
    return sorted(per_round, key=lambda s: -_median(per_round[s]))


def paired_ranks(per_round: Mapping[str, Sequence[float | None]],
                 level: float = DEFAULT_CONFIDENCE_LEVEL) -> list[tuple[str, str]]:
    """(stack, rank label) in median order, with ties where the paired intervals cannot tell.

    Stack i is surely above j when paired_ratio(i, j) lies wholly above 1. As in `stats.rank_with_ties`,
    i's rank range is best = 1 + #stacks surely above i, worst = n − #stacks surely below i, widened to
    include i's position in the median order; "2" when best == worst, else "2–3".
    """
    order = median_order(per_round)
    n = len(order)
    labels = []
    for position, stack in enumerate(order, start=1):
        above = below = 0
        for other in order:
            if other == stack:
                continue
            ratio = paired_ratio(per_round[other], per_round[stack], level)
            if ratio is None:
                continue
            above += ratio.relation == "above"
            below += ratio.relation == "below"
        best, worst = min(1 + above, position), max(n - below, position)
        labels.append((stack, str(best) if best == worst else f"{best}–{worst}"))
    return labels


@dataclass(frozen=True)
class PairVerdict:
    """One neighbouring pair of a table in its paired order: the stack placed higher over the next one, with
    the interval of their ratio (`sequential.PairInterval` in an interleaved table)."""

    upper: str
    lower: str
    ratio: PairInterval | RatioInterval | None

    @property
    def ordered(self) -> bool:
        return self.ratio is not None and self.ratio.relation == "above"

    @property
    def status(self) -> Status:
        """'ordered', 'equivalent' (within the table's margin) or 'not resolved'."""
        if self.ratio is None:
            return "not resolved"
        if isinstance(self.ratio, PairInterval):
            return self.ratio.status
        if self.ratio.relation in ("above", "below"):
            return "ordered"
        return "equivalent" if self.ratio.within(DEFAULT_EQUIVALENCE_MARGIN) else "not resolved"

    @cached_property
    def forecast(self) -> bool:
        """A pair left open with a paired interval `forecast.forecastable` from: it gets `alone` and `reach`."""
        return self.status == "not resolved" and isinstance(self.ratio, PairInterval) and forecastable(self.ratio)

    @cached_property
    def alone(self) -> int | None:
        """A pair left open: the paired rounds a run of its two stacks alone would need to resolve it
        (`forecast.rounds_alone`; None: no `forecast`, or not within its horizon). Computed once: the report's
        sentences and the sentence that explains them all read it."""
        return rounds_alone(self.ratio) if self.forecast else None  # type: ignore[arg-type]

    def reach(self, seconds_per_window: float) -> str:
        """'the two alone: ≈ 60 rounds, 3.3 min' for a pair left open ('' without a `forecast`): `alone` and the
        time of its rounds, two windows each at `seconds_per_window`."""
        if not self.forecast:
            return ""
        rounds = self.alone
        if rounds is None:
            return f"the two alone: over {ALONE_HORIZON:,} rounds"
        minutes = rounds * 2 * seconds_per_window / 60
        return f"the two alone: ≈ {rounds} rounds, {minutes:.{1 if minutes < 10 else 0}f} min"

    def sentence(self, seconds_per_window: float | None = None) -> str:
        """'a is 1.52× b (1.41–1.64)', 'a and b are equivalent within ±10 % (0.97–1.05)', or 'a and b: not
        resolved (0.84–1.31)' — with `seconds_per_window`, an open pair's `reach` in its parentheses."""
        if self.ratio is None:
            return f"{self.upper} and {self.lower}: never measured in the same round"
        r = self.ratio
        bounds = bounds_text(r.low, r.high)
        if self.status == "ordered":
            return f"{self.upper} is {r.ratio:.2f}× {self.lower} ({bounds})"
        if self.status == "equivalent":
            margin = r.margin if isinstance(r, PairInterval) else DEFAULT_EQUIVALENCE_MARGIN
            return f"{self.upper} and {self.lower} are equivalent within ±{margin * 100:.0f} % ({bounds})"
        reach = self.reach(seconds_per_window) if seconds_per_window else ""
        return f"{self.upper} and {self.lower}: not resolved ({bounds}{'; ' + reach if reach else ''})"


def neighbour_pairs(inference: Inference, order: Sequence[str]) -> list[PairVerdict]:
    """Each stack against the next one in the table's paired order, with the simultaneous intervals."""
    return [PairVerdict(hi, lo, inference.interval(hi, lo)) for hi, lo in zip(order, order[1:])]
