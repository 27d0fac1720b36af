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
  above 1 (the pairwise counterpart of `stats.rank_with_ties`);
- `settled`: the stopping rule of an interleaved run — every adjacent pair of a cell (in median order) is
  either ordered (its interval excludes 1) or equivalent within ± the target width.

Values are "higher is better" figures (requests/s); a round in which either stack has no value is left
out of that pair.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pgarena.stats.intervals import DEFAULT_CONFIDENCE_LEVEL, relative_half_width, t_critical

RATIO_METHOD = "paired Student t-interval on the per-round log ratios (geometric mean of the ratios)"

Relation = Literal["above", "below", "indistinguishable"]


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
        """'above' when the whole interval is above 1, 'below' when below, else 'indistinguishable'."""
        if self.low > 1:
            return "above"
        if self.high < 1:
            return "below"
        return "indistinguishable"

    def within(self, target_rel_half_width: float) -> bool:
        """True when the interval lies inside [1 / (1 + target), 1 + target]: A and B are equal to within
        the target width, so more rounds would not order them usefully."""
        return self.low >= 1 / (1 + target_rel_half_width) and self.high <= 1 + target_rel_half_width

    def inverse(self) -> RatioInterval:
        """B / A."""
        return RatioInterval(1 / self.ratio, 1 / self.high, 1 / self.low, self.rounds, self.level)


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
    return RatioInterval(ratio=math.exp(mean), low=math.exp(mean - half), high=math.exp(mean + half), rounds=n,
                         level=level)


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
    """One adjacent pair of a cell in median order: the faster-looking stack over the next one."""

    upper: str
    lower: str
    ratio: RatioInterval | None

    @property
    def ordered(self) -> bool:
        return self.ratio is not None and self.ratio.relation == "above"

    def settled(self, target_rel_half_width: float) -> bool:
        """Ordered, or equivalent within ± the target width."""
        return self.ratio is not None and (self.ordered or self.ratio.within(target_rel_half_width))

    def sentence(self) -> str:
        """'a is 1.52× b (1.41–1.64)' where ordered, 'a and b are indistinguishable (0.97–1.05)' otherwise."""
        if self.ratio is None:
            return f"{self.upper} and {self.lower}: not enough paired rounds"
        r = self.ratio
        if self.ordered:
            return f"{self.upper} is {r.ratio:.2f}× {self.lower} ({r.low:.2f}–{r.high:.2f})"
        return f"{self.upper} and {self.lower} are indistinguishable ({r.low:.2f}–{r.high:.2f})"


def adjacent_pairs(per_round: Mapping[str, Sequence[float | None]],
                   level: float = DEFAULT_CONFIDENCE_LEVEL) -> list[PairVerdict]:
    """Each stack against the next one in median order."""
    order = median_order(per_round)
    return [PairVerdict(hi, lo, paired_ratio(per_round[hi], per_round[lo], level)) for hi, lo in zip(order, order[1:])]


def settled(per_round: Mapping[str, Sequence[float | None]], *, target_rel_half_width: float,
            level: float = DEFAULT_CONFIDENCE_LEVEL) -> bool:
    """The interleaved stopping rule for one cell: every adjacent pair ordered or equivalent within the
    target width. A cell of one stack has no pair: it is settled when its own interval is within the target
    (as a sequential cell), so a one-stack run still gets the profile's precision."""
    if len(per_round) == 1:
        values = [v for v in next(iter(per_round.values())) if v is not None]
        return len(values) >= 2 and relative_half_width(values, level) <= target_rel_half_width
    return all(p.settled(target_rel_half_width) for p in adjacent_pairs(per_round, level))


def ratios_to(per_round: Mapping[str, Sequence[float | None]], reference: str,
              level: float = DEFAULT_CONFIDENCE_LEVEL) -> dict[str, RatioInterval | None]:
    """Every stack's ratio to `reference` (the cell's best, or a `--baseline`); the reference gets None."""
    return {s: None if s == reference else paired_ratio(per_round[s], per_round[reference], level)
            for s in per_round}
