"""The execution as a level of the design: paired intervals over blocks of rounds, the stacks restarted between.

A process starts with a layout of its own (code and heap addresses, hash seeds, the threads' placement), and
the layout alone moves its speed by a few per cent for its whole life (Mytkowicz, Diwan, Hauswirth and Sweeney,
"Producing wrong data without doing anything obviously wrong!", ASPLOS 2009). Pairing and rounds average out the
window noise, not that: two processes of one build stay apart however many rounds they share. Measured here over
14 self-A/Bs (two builds of one code, each started once): the mean head/base log ratio varied between runs by an
sd of ~1.7 % beyond what the windows explain, and one run's two processes differed by 4 % throughout (selfab3-8,
docs/authors.md). An interval over rounds of one execution per side says how far *these two processes* differ;
an author asks how far the *builds* do.

So an A/B restarts both sides every `block_rounds` rounds (pipeline/interleaved.py), which samples a new pair of
executions per block, and the inference takes the block as its unit (Kalibera and Jones, "Rigorous benchmarking
in reasonable time", ISMM 2013: repeat at the level with the variance):

- each block b gives the mean D_b of its paired, speed-corrected log differences (`sequential.fit_table`); the
  pair's estimate is the mean of the D_b over the complete blocks (the block in progress is judged when it ends,
  so looking after every round adds no looks);
- the variance of a D_b is the rounds' noise over the block plus the execution effect, Var(D_b) = σ_w²/k + σ_e².
  Its estimate is the blocks' own sample variance (m − 1 degrees of freedom) moderated toward a prior (Smyth
  2004, as `sequential.judge` does for pairs): σ̂_w² from the rounds within the blocks (many degrees of freedom)
  over k, plus `EXECUTION_SD`² (from what was measured here), with the weight of `EXECUTION_PRIOR_DF` degrees
  of freedom; a machine whose executions differ more widens its intervals as blocks come in;
- the interval is the same normal-mixture confidence sequence over blocks (`sequential.half_width`), tightest at
  `BLOCK_TIGHTEST_AT` blocks, Bonferroni over the table's pairs (the A/B gate bounds each side on its own with
  the one-sided boundary: analysis/abgate.py); tests/unit/test_executions.py measures the gate's error rate with
  execution effects drawn per block.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

from pgarena.analysis.sequential import (
    DEFAULT_EQUIVALENCE_MARGIN,
    DEFAULT_FAMILY_LEVEL,
    Inference,
    PairInterval,
    PerRound,
    fit_table,
    half_width,
    judge,
    pair_alpha,
)
from pgarena.stats.intervals import ratio_bounds

EXECUTION_SD = 0.034
"""Prior sd of the execution effect on a pair's log ratio: twice the 1.7 % measured here (the between-run sd of
14 self-A/Bs' mean log ratio beyond their within-run standard errors, variance 0.00091 − 0.00063;
docs/authors.md), so that a machine whose executions differ twice as much keeps the gate's error rate
(simulated at the floor with steady windows and executions at 3.4 %: 3.7 % wrong, against 5.3 % with this prior
at 3 % and 7.8 % at 2.5 %; tests/unit/test_executions.py)."""
EXECUTION_PRIOR_DF = 6
"""Weight, in degrees of freedom, of the prior variance of a block's mean (tests/unit/test_executions.py)."""
BLOCK_TIGHTEST_AT = 8
"""The block count at which the mixture boundary is tightest (it is valid at every count)."""


def block_means(diffs_by_round: Sequence[float | None], block_rounds: int) -> tuple[list[float], float, int, int]:
    """Per complete block of `block_rounds` rounds: the mean of its paired differences (a block without one is
    skipped); with the within-block sum of squares, its degrees of freedom and the differences used."""
    means: list[float] = []
    within_ss, within_df, used = 0.0, 0, 0
    for start in range(0, len(diffs_by_round) - block_rounds + 1, block_rounds):
        block = [d for d in diffs_by_round[start:start + block_rounds] if d is not None]
        if not block:
            continue
        centre = math.fsum(block) / len(block)
        means.append(centre)
        within_ss += math.fsum((d - centre) ** 2 for d in block)
        within_df += len(block) - 1
        used += len(block)
    return means, within_ss, within_df, used


def block_variance(means: Sequence[float], within_ss: float, within_df: int, used: int) -> tuple[float, float] | None:
    """(variance of one block's mean, its degrees of freedom): the blocks' sample variance moderated toward the
    prior (module docstring); None when neither exists (one block of one round)."""
    m = len(means)
    own = None
    if m >= 2:
        centre = math.fsum(means) / m
        own = math.fsum((x - centre) ** 2 for x in means) / (m - 1)
    if within_df < 1:
        return (own, m - 1) if own is not None else None
    prior = within_ss / within_df / (used / m) + EXECUTION_SD**2
    own_df = m - 1 if own is not None else 0
    return (EXECUTION_PRIOR_DF * prior + own_df * (own or 0.0)) / (EXECUTION_PRIOR_DF + own_df), \
        EXECUTION_PRIOR_DF + own_df


def judge_blocks(per_round: PerRound, reference: PerRound | None, block_rounds: int, *,
                 level: float = DEFAULT_FAMILY_LEVEL, margin: float = DEFAULT_EQUIVALENCE_MARGIN,
                 stacks_in_family: int | None = None) -> Inference:
    """Every pair of a table's stacks with its simultaneous anytime-valid interval over complete blocks of
    `block_rounds` rounds (module docstring); `PairInterval.rounds` counts the rounds in them, `.blocks` the
    blocks, and its variance is a block mean's."""
    fit = fit_table(per_round, reference)
    names = [s for s in per_round if s in fit.effect]
    inference = Inference(fit=fit, level=level, margin=margin,
                          alpha=pair_alpha(stacks_in_family or len(names), level))
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            diffs = [x - y if x is not None and y is not None else None for x, y in zip(fit.y[a], fit.y[b])]
            means, within_ss, within_df, used = block_means(diffs, block_rounds)
            found = block_variance(means, within_ss, within_df, used)
            if found is None:
                continue
            variance, df = found
            m = len(means)
            centre = math.fsum(means) / m
            h = half_width(m, variance, inference.alpha, df, BLOCK_TIGHTEST_AT)
            low, high = ratio_bounds(centre, h)
            inference.pairs[(a, b)] = PairInterval(math.exp(centre), low, high, used, level, margin, variance, df,
                                                   blocks=m)
    return inference


def judge_table(per_round: PerRound, reference: PerRound | None = None, *, block_rounds: int | None = None,
                level: float = DEFAULT_FAMILY_LEVEL, margin: float = DEFAULT_EQUIVALENCE_MARGIN,
                horizon: Collection[str] | None = None) -> Inference:
    """A table's inference: over blocks of executions when the run restarted its stacks every `block_rounds`
    rounds (the confidence sequence alone: no final look), over rounds (`sequential.judge`, with the final look
    for the stacks of `horizon`) when it did not."""
    if block_rounds:
        return judge_blocks(per_round, reference, block_rounds, level=level, margin=margin)
    return judge(per_round, reference, level=level, margin=margin, horizon=horizon)

