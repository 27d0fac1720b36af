"""The verdict's inference: simultaneous, anytime-valid intervals on paired log ratios.

An interleaved run looks at its data after every round and stops when the answer is known or the budget is
spent; it then shows, per table, every stack's ratio to the best and each neighbouring pair's ratio. Every
one of those intervals is a claim, and the claims must hold *jointly* at the stated level *whatever round the
run stopped at*. This module gives intervals with that property:

- **Paired log ratios.** Stacks of one round saw the same machine, so pair (a, b) is judged on the per-round
  differences d_r = y_a,r − y_b,r of y = ln(2xx/s) (Abedi and Brecht, ICPE 2017). Optionally each y is first
  corrected for the machine's speed during its window, read by a reference probe on the server CPUs (duet
  benchmarking: Bulej et al., Empirical Software Engineering 25, 2020): y' = y − β·z with z = ln(probe unit
  ns) and β the within-stack, within-round least-squares slope of y on z over the table (`fit_table`), unless
  the probe's readings depend on the stack (`probecheck.py`). A dependence too small for that check still moves a
  corrected ratio by β times the two stacks' shifts, so every pair's interval also carries 2β²τ̂², τ̂² the shifts'
  variance estimated from the same check (`probecheck.shift_variance`, `probecheck.shift_estimates`).
- **The noise is estimated from the whole table.** A two-way additive fit y'[s,r] = μ_s + ρ_r + e (the
  round effect ρ removes the drift the rounds share) gives a pooled per-window variance σ² with
  N − S − R + 1 degrees of freedom, far more than one pair's rounds give. Each pair's variance is that pooled
  2σ² moderated by the pair's own sample variance (the empirical-Bayes variance of Smyth, "Linear models and
  empirical Bayes methods for assessing differential expression", SAGMB 3(1), 2004, with a fixed prior weight
  `PRIOR_DF`), so a pair of stacks noisier than the rest widens its own interval.
- **Anytime-valid.** The interval of a pair after n paired rounds is Robbins' normal-mixture confidence
  sequence (Howard, Ramdas, McAuliffe and Sekhon, "Time-uniform, nonparametric, nonasymptotic confidence
  sequences", Annals of Statistics 49(2), 2021, eq. (14) with a Gaussian mixture): with variance v per round,
  |d̄_n − δ| ≤ √(2v(n+ρ)·(ln(1/α′) + ½·ln((n+ρ)/ρ))) / n holds for every n at once with probability ≥ 1 − α′,
  so looking after every round and stopping on what one sees does not inflate the error. The mixture
  parameter ρ is chosen to make the boundary tightest at `DEFAULT_TIGHTEST_AT` rounds. The variance is
  plugged in, widened by the ratio of Student's to the normal critical value at its degrees of freedom.
- **Simultaneous over every pair.** α′ = (1 − level) / (S(S−1)/2): a Bonferroni split over every pair of
  the table's S stacks, so any pair the table chooses to show after seeing the data (neighbours in the
  order, each stack against the best) is covered, and all its intervals hold together at `level`.
- **One final look where the time ran out** (`horizon`). The confidence sequence pays for every look it
  allows: at 20 stacks it is ~1.25× as wide as a fixed-sample interval of the same rounds. Most of a budgeted
  run's tables end because the time or the cap of rounds is spent, not on what they showed; a pair whose two
  stacks were measured in every round until then was measured for a count of rounds its data did not choose.
  So the error is split in advance, as in Haybittle and Peto's design (a strict boundary at the interim
  looks, nearly the whole error at the end): a `1 − FINAL_SHARE` share goes to the confidence sequence the race
  looks at after every round, `FINAL_SHARE` to one fixed-sample Student interval at the end for those pairs
  (`fixed_half_width`, the same moderated variance and degrees of freedom), and the pair's interval is the
  narrower of its two, which have the same centre. By Bonferroni over the two procedures every claim of the
  table still holds jointly at `level`. A table that stopped on what it showed (settled, out of reach) and a
  stack that left the race early keep the confidence sequence alone.

A pair is **ordered** when its interval excludes 1, **equivalent within ±m** when it lies inside [1/(1+m), 1+m]
(two one-sided tests at the same level), **not resolved** otherwise. A table's order comes from the paired
estimates (μ̂), never against a claim (`paired_order`). tests/unit/test_verdict_simulation.py measures the
false-order rate and power of exactly these functions; docs/methodology.md states the figures.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

import numpy as np

from pgarena.analysis.additive import AdditiveFit, PerRound, additive_fit, paired_differences
from pgarena.analysis.probecheck import ProbeCheck, shift_variance, shift_estimates, stack_dependence
from pgarena.stats.intervals import DEFAULT_EQUIVALENCE_MARGIN, inverse_bounds, ratio_bounds, t_critical

DEFAULT_FAMILY_LEVEL = 0.95
"""Probability that every interval of a table holds at once, at whatever round the run stopped."""
DEFAULT_TIGHTEST_AT = 10
"""The round count at which the mixture boundary is tuned to be tightest (it is valid at every count)."""
PRIOR_DF = 20
"""Weight, in degrees of freedom, of the table's pooled variance in each pair's moderated variance."""
MIN_FIT_DF = 3
"""Fewer residual degrees of freedom than this: no pooled variance (the pair's own alone)."""
MIN_SLOPE_DF = 8
"""The speed covariate is used only with at least this many residual degrees of freedom left for it."""
FINAL_SHARE = 0.8
"""The share of a table's error spent on the final look at the horizon (module docstring); the rest on the race's
confidence sequences."""

Status = Literal["ordered", "equivalent", "not resolved"]

# --- the boundary ---------------------------------------------------------------------------------------

@lru_cache(maxsize=4096)
def mixture_rho(alpha: float, tightest_at: int = DEFAULT_TIGHTEST_AT) -> float:
    """The normal-mixture parameter ρ (in rounds) that makes the boundary tightest at `tightest_at` rounds
    for error `alpha` (golden-section search on ln ρ; the boundary is valid for every ρ > 0)."""
    n = tightest_at

    def width(log_rho: float) -> float:
        rho = math.exp(log_rho)
        return (n + rho) * (math.log(1 / alpha) + 0.5 * math.log((n + rho) / rho))

    lo, hi = math.log(1e-3), math.log(1e3)
    g = (math.sqrt(5) - 1) / 2
    for _ in range(80):
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        if width(a) < width(b):
            hi = b
        else:
            lo = a
    return math.exp((lo + hi) / 2)


@lru_cache(maxsize=65536)
def variance_widening(alpha: float, df: float) -> float:
    """Student's over the normal two-sided critical value at error `alpha`: how much wider an interval with
    an estimated variance (`df` degrees of freedom) must be than one with the variance known."""
    z = statistics.NormalDist().inv_cdf(1 - alpha / 2)
    if df >= 1000:
        return 1.0
    return t_critical(1 - alpha, max(1, int(df))) / z


def half_width(n: int, variance: float, alpha: float, df: float = math.inf,
               tightest_at: int = DEFAULT_TIGHTEST_AT) -> float:
    """Half-width, on the log scale, of the anytime-valid interval for the mean of `n` paired differences
    whose variance per round is `variance` (estimated with `df` degrees of freedom) at error `alpha`
    (module docstring). Infinite for n < 1."""
    if n < 1:
        return math.inf
    rho = mixture_rho(alpha, tightest_at)
    radius = math.sqrt(2 * variance * (n + rho) * (math.log(1 / alpha) + 0.5 * math.log((n + rho) / rho))) / n
    return radius * (variance_widening(alpha, df) if math.isfinite(df) else 1.0)


def half_widths(n: np.ndarray, variance: np.ndarray, alpha: float, df: np.ndarray,
                tightest_at: int = DEFAULT_TIGHTEST_AT, final: bool = False) -> np.ndarray:
    """`half_width` (`fixed_half_width` with `final`) of many pairs at once (finite `df`)."""
    widening = np.array([variance_widening(alpha, d) for d in df.tolist()])
    if final:
        return statistics.NormalDist().inv_cdf(1 - alpha / 2) * widening * np.sqrt(variance / n)
    rho = mixture_rho(alpha, tightest_at)
    return np.sqrt(2 * variance * (n + rho) * (math.log(1 / alpha) + 0.5 * np.log((n + rho) / rho))) / n * widening


def fixed_half_width(n: int, variance: float, alpha: float, df: float = math.inf) -> float:
    """Half-width, on the log scale, of the fixed-sample Student interval for the mean of `n` paired differences
    of per-round `variance` (`df` degrees of freedom) at two-sided error `alpha`: the final look's."""
    if n < 1:
        return math.inf
    z = statistics.NormalDist().inv_cdf(1 - alpha / 2) * (variance_widening(alpha, df) if math.isfinite(df) else 1.0)
    return z * math.sqrt(variance / n)


def pair_count(stacks: int) -> int:
    """The claims one table can make: one per pair of its stacks."""
    return stacks * (stacks - 1) // 2


def pair_alpha(stacks: int, level: float = DEFAULT_FAMILY_LEVEL) -> float:
    """Each pair's error: the table's 1 − level split over every pair (Bonferroni)."""
    return (1 - level) / max(1, pair_count(stacks))


def detectable_ratio(window_log_sd: float, rounds: int, claims: int, level: float = DEFAULT_FAMILY_LEVEL,
                     final: bool = True) -> float:
    """The smallest ratio > 1 the verdict resolves after `rounds` paired rounds, for windows whose log
    throughput scatters by `window_log_sd` (after the speed correction) in a table making `claims` claims:
    exp of the interval's half-width with the variance known (a pair's difference has variance 2·sd²) — at the
    final look, for a pair raced until the time ran out (`final`), else at a look of the race."""
    total = (1 - level) / max(1, claims)
    if final:
        return math.exp(fixed_half_width(rounds, 2 * window_log_sd**2, FINAL_SHARE * total))
    return math.exp(half_width(rounds, 2 * window_log_sd**2, (1 - FINAL_SHARE) * total))


@dataclass(frozen=True)
class TableFit:
    """The two-way fit of one table's windows (module docstring), on ln(2xx/s) corrected for speed."""

    y: dict[str, list[float | None]]
    """stack → corrected ln(figure) per round (None: no window)."""
    effect: dict[str, float]
    """stack → μ̂, its paired estimate on the log scale (differences between stacks are meaningful)."""
    variance: float | None
    """Pooled per-window variance σ² of the residuals (None: too few degrees of freedom)."""
    df: int
    slope: float
    """β of the speed correction (0: not applied)."""
    windows: int
    raw_variance: float | None = None
    """The same σ² before the speed correction (the noise budget's 'before')."""
    probe_check: ProbeCheck | None = None
    """Whether the probe read differently beside different stacks (probecheck.py); if so, no correction."""
    bias_variance: Mapping[str, float] = field(default_factory=dict)
    """stack → the variance the probe's shift by stack leaves in its corrected estimate (β²τ̂²,
    `probecheck.shift_estimates`; empty without a correction or when τ̂ is 0)."""
    probe_shift: float = 0.0
    """τ̂: the sd of the probe's shifts by stack estimated from its check (`probecheck.shift_variance`)."""


def _logs(values: Sequence[float | None]) -> list[float | None]:
    return [math.log(v) if v is not None and v > 0 else None for v in values]


def _two_way(y: PerRound, rounds: int) -> tuple[dict[str, float], list[float], float, int]:
    """`additive_fit` as (μ, ρ per round index, residual sum of squares, residual df)."""
    fit = additive_fit(y)
    return fit.stack_effects, fit.round_effect_list(rounds), fit.rss, fit.df


def fit_table(per_round: PerRound, reference: PerRound | None = None) -> TableFit:
    """Fit a table's windows (module docstring). `per_round`: stack → 2xx/s per round; `reference`: stack →
    the probe's unit CPU ns in the same windows (None, or any window without a reading: no correction)."""
    rounds = max((len(v) for v in per_round.values()), default=0)
    y = {s: _logs(list(v) + [None] * (rounds - len(v))) for s, v in per_round.items()}
    mu, rho, rss, df = _two_way(y, rounds)
    raw_variance = rss / df if df >= MIN_FIT_DF else None
    slope, check, bias_variance, tau2 = 0.0, None, {}, 0.0
    if reference is not None and df - 1 >= MIN_SLOPE_DF:
        z = {s: _logs(list(reference.get(s, [])) + [None] * (rounds - len(reference.get(s, [])))) for s in y}
        complete = all((z[s][r] is None) == (y[s][r] is None) for s in y for r in range(rounds))
        if complete:
            zmu, zrho, zrss, zdf = _two_way(z, rounds)
            check = stack_dependence(z, zrss, zdf, zmu)
            if zrss > 0 and not (check and check.dependent):
                cross = sum((y[s][r] - mu[s] - rho[r]) * (z[s][r] - zmu[s] - zrho[r])  # type: ignore[operator]
                            for s in y for r in range(rounds) if y[s][r] is not None)
                slope = min(0.0, max(-2.0, cross / zrss))
                if slope:
                    tau2 = shift_variance(check, zrss / zdf, z)
                    shrunk = shift_estimates(tau2, zrss / zdf, z, zmu)
                    y = {s: [None if v is None else v - slope * (z[s][r] - shrunk[s][0])  # type: ignore[operator]
                             for r, v in enumerate(y[s])] for s in y}
                    mu, rho, rss, df = _two_way(y, rounds)
                    df -= 1
                    bias_variance = {s: slope ** 2 * left for s, (_, left) in shrunk.items() if left > 0}
    variance = rss / df if df >= MIN_FIT_DF else None
    windows = sum(v is not None for vals in y.values() for v in vals)
    return TableFit(y=y, effect=mu, variance=variance, df=max(df, 0), slope=slope, windows=windows,
                    raw_variance=raw_variance, probe_check=check, bias_variance=bias_variance,
                    probe_shift=math.sqrt(tau2))


@dataclass(frozen=True)
class PairInterval:
    """a / b: the geometric mean of the paired (speed-corrected) ratios and its simultaneous, anytime-valid
    interval; `level` is the table's family-wise level the interval belongs to."""

    ratio: float
    low: float
    high: float
    rounds: int
    level: float
    margin: float = DEFAULT_EQUIVALENCE_MARGIN
    variance: float = math.nan
    """The per-round variance of the paired log differences the interval was computed with."""
    df: float = math.inf
    """Its degrees of freedom."""
    blocks: int | None = None
    """Over blocks of rounds, the stacks restarted between (analysis/executions.py): their count; variance a block's."""
    final: bool = False
    """The interval is the final look's (module docstring), not the race's confidence sequence."""
    fixed: float = 0.0
    """The variance the rounds do not average away (the probe's shifts), held in `variance` as rounds × it."""

    def variance_at(self, rounds: int) -> float:
        """The per-round variance after `rounds` rounds: the noise part as measured, the fixed part grown with them
        (at 0 rounds, the noise part alone)."""
        return self.variance + (rounds - self.rounds) * self.fixed

    @property
    def relation(self) -> Literal["above", "below", "equivalent", "not resolved"]:
        """'above' / 'below' when the interval excludes 1; 'equivalent' within ± the margin; else 'not resolved'."""
        if self.low > 1:
            return "above"
        if self.high < 1:
            return "below"
        if self.within(self.margin):
            return "equivalent"
        return "not resolved"

    @property
    def status(self) -> Status:
        relation = self.relation
        return "ordered" if relation in ("above", "below") else relation  # type: ignore[return-value]

    def within(self, margin: float) -> bool:
        """The interval lies inside [1/(1+margin), 1+margin]."""
        return self.low >= 1 / (1 + margin) and self.high <= 1 + margin

    def inverse(self) -> PairInterval:
        """b / a."""
        return PairInterval(1 / self.ratio, *inverse_bounds(self.low, self.high), self.rounds, self.level, self.margin,
                            self.variance, self.df, self.blocks, self.final, self.fixed)


@dataclass
class Inference:
    """Every pair of one table judged together (module docstring)."""

    fit: TableFit
    level: float
    margin: float
    alpha: float
    """Each pair's error in the race's confidence sequence (the table's 1 − level over its pairs; with a final
    look, its `1 − FINAL_SHARE` share of that)."""
    pairs: dict[tuple[str, str], PairInterval] = field(default_factory=dict)
    """(a, b) → a / b, for a before b in the mapping's order (use `interval` for either direction)."""
    final_alpha: float | None = None
    """Each pair's error at the final look (None: the table has none; its confidence sequence has the whole)."""

    def interval(self, a: str, b: str) -> PairInterval | None:
        """a / b, or None when the two were never measured in the same round."""
        if (a, b) in self.pairs:
            return self.pairs[(a, b)]
        found = self.pairs.get((b, a))
        return None if found is None else found.inverse()

    def surely_above(self, a: str, b: str) -> bool:
        """The interval of a / b lies wholly above 1."""
        found = self.pairs.get((a, b))
        if found is not None:
            return found.low > 1
        found = self.pairs.get((b, a))
        return found is not None and found.high < 1

    def claims_above(self) -> dict[str, set[str]]:
        """stack → the stacks surely above it."""
        above: dict[str, set[str]] = {}
        for (a, b), found in self.pairs.items():
            if found.low > 1:
                above.setdefault(b, set()).add(a)
            elif found.high < 1:
                above.setdefault(a, set()).add(b)
        return above

    def order(self) -> list[str]:
        """Stacks best first (`paired_order`)."""
        return paired_order(self)


def judge(per_round: PerRound, reference: PerRound | None = None, *, level: float = DEFAULT_FAMILY_LEVEL,
          margin: float = DEFAULT_EQUIVALENCE_MARGIN, stacks_in_family: int | None = None,
          tightest_at: int = DEFAULT_TIGHTEST_AT, horizon: Collection[str] | None = None) -> Inference:
    """Every pair of a table's stacks with its simultaneous anytime-valid interval. `stacks_in_family`: the
    number of stacks the family-wise split counts (default: those in `per_round`). `horizon`: the error is split
    for a final look (module docstring), which the pairs of these stacks (measured in every round until the time
    ran out) get; empty while the race runs; None: no final look, the confidence sequence has the whole error."""
    fit = fit_table(per_round, reference)
    names = [s for s in per_round if s in fit.effect]
    alpha = pair_alpha(stacks_in_family or len(names), level)
    final_alpha = None if horizon is None else FINAL_SHARE * alpha
    inference = Inference(fit=fit, level=level, margin=margin, alpha=alpha if horizon is None else alpha - final_alpha,
                          final_alpha=final_alpha)
    first, second, n, centre, own = paired_differences(fit.y, names)
    if fit.variance is not None:  # moderated: the table's pooled variance weighs PRIOR_DF degrees of freedom
        prior_df = min(PRIOR_DF, fit.df)
        own_df = np.where(n >= 2, n - 1, 0)
        moderated = (prior_df * 2 * fit.variance + own_df * np.nan_to_num(own)) / np.maximum(prior_df + own_df, 1)
        pooled = (n < 2) | (len(names) > 2)  # of two stacks, the pooled variance is the pair's own
        variance, df = np.where(pooled, moderated, own), np.where(pooled, prior_df + own_df, n - 1)
    else:
        variance, df = own, n - 1
    # what the probe's shifts leave in the two estimates is not averaged away by the rounds: n times it per round
    bias = sum(np.array([fit.bias_variance.get(s, 0.0) for s in names])[k] for k in (first, second))
    variance = variance + n * bias
    kept = np.flatnonzero((n > 0) & ((n >= 2) | (fit.variance is not None)))
    widths = half_widths(n[kept], variance[kept], inference.alpha, df[kept], tightest_at)
    fixed = np.full(len(kept), np.inf)
    if final_alpha is not None:
        both = np.array([names[first[k]] in horizon and names[second[k]] in horizon for k in kept], dtype=bool)
        fixed[both] = half_widths(n[kept][both], variance[kept][both], final_alpha, df[kept][both], final=True)
    bounds = map(ratio_bounds, centre[kept].tolist(), np.minimum(widths, fixed).tolist())
    columns = zip(first[kept].tolist(), second[kept].tolist(), np.exp(centre[kept]).tolist(), bounds,
                  n[kept].tolist(), variance[kept].tolist(), df[kept].tolist(), (fixed < widths).tolist(),
                  bias[kept].tolist())
    for i, j, ratio, (low, high), count, var, dof, last, b in columns:
        inference.pairs[(names[i], names[j])] = PairInterval(ratio, low, high, count, level, margin, var, dof,
                                                             final=last, fixed=b)
    return inference


def paired_order(inference: Inference) -> list[str]:
    """Stacks best first by their paired estimates μ̂, never against a claimed order: a topological order of
    'surely above' (every pair whose interval excludes 1), taking the highest μ̂ among the stacks nothing
    unplaced is surely above. Claims hold jointly, so they form no cycle unless one of them is wrong; if
    they do, the highest μ̂ among the rest is placed."""
    beaten_by = inference.claims_above()
    remaining = sorted(inference.fit.effect, key=lambda s: -inference.fit.effect[s])
    order: list[str] = []
    while remaining:
        left = set(remaining)
        pick = next((s for s in remaining if not (beaten_by.get(s, set()) & left)), remaining[0])
        order.append(pick)
        remaining.remove(pick)
    return order


def rank_labels(inference: Inference, order: Sequence[str] | None = None) -> dict[str, str]:
    """Each stack's rank range from the claims and what they imply (x above a and a above b put x above b:
    true whenever the claims are, so the closure holds at the same joint level): best = 1 + #stacks surely
    above it, worst = S − #stacks surely below it (widened to include its position in the order); '2' or
    '2–3'. `order` may be a subset of the stacks (e.g. the exact ones): ranks are then among those."""
    order = list(order if order is not None else inference.order())
    members = set(order)
    above = _closure(inference.claims_above())
    n = len(order)
    labels = {}
    for position, stack in enumerate(order, start=1):
        over = len(above.get(stack, set()) & members)
        under = sum(stack in above.get(o, set()) for o in order if o != stack)
        best, worst = min(1 + over, position), max(n - under, position)
        labels[stack] = str(best) if best == worst else f"{best}–{worst}"
    return labels


def _closure(above: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """stack → every stack above it through a chain of claims (the transitive closure of `above`)."""
    out: dict[str, set[str]] = {}

    def reach(stack: str, seen: set[str]) -> set[str]:
        if stack in out:
            return out[stack]
        found: set[str] = set()
        for parent in above.get(stack, set()):
            if parent in seen:
                continue  # a cycle: only a wrong claim makes one; stop there
            found |= {parent} | reach(parent, seen | {parent})
        out[stack] = found
        return found

    for stack in above:
        reach(stack, {stack})
    return out


def groups(order: Sequence[str], inference: Inference) -> list[list[str]]:
    """Consecutive stacks of `order` joined wherever the pair between neighbours is not ordered."""
    out: list[list[str]] = []
    for stack in order:
        if out and not inference.surely_above(out[-1][-1], stack):
            out[-1].append(stack)
        else:
            out.append([stack])
    return out


def unresolved_pairs(inference: Inference, order: Sequence[str] | None = None,
                     every_pair: bool = False) -> list[tuple[str, str]]:
    """Neighbouring pairs of the order (with `every_pair`, all its pairs) neither ordered nor equivalent."""
    order = list(order if order is not None else inference.order())
    candidates = itertools.combinations(order, 2) if every_pair else zip(order, order[1:])
    return [(a, b) for a, b in candidates
            if (found := inference.interval(a, b)) is None or found.status == "not resolved"]
