"""The two-way additive fit of a table's windows: y[s,r] = μ[s] + ρ[r] + e[s,r] by least squares.

A level per stack and a deviation per round shared by the stacks of that round, fitted on whichever windows are
present. The verdict (sequential.py) fits ln(2xx/s) and the probe's readings with it, the noise budget (noise.py)
the same, and the probe check (probecheck.py) tests the stack effects of the probe's fit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

PerRound = Mapping[str, Sequence[float | None]]
"""stack → a figure per round (None: not measured in that round), rounds aligned across stacks."""

FIT_TOLERANCE = 1e-10
"""The alternating means stop when no stack effect moves by more than this (log units)."""
FIT_MAX_ITERATIONS = 10_000


@dataclass(frozen=True)
class AdditiveFit:
    """y[s,r] = μ[s] + ρ[r] + e[s,r] fitted by least squares on the windows present (log units)."""

    stack_effects: dict[str, float]
    """μ: each stack's level (only differences between stacks are meaningful)."""
    rss: float
    """Residual sum of squares."""
    df: int
    """Residual degrees of freedom N − S − R + 1 (can be ≤ 0 for a tiny table)."""
    iterations: int
    _arrays: tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray] = field(repr=False, compare=False)
    """(stack names, round indices, ρ per round, the stacks × rounds residuals, which of them are windows): the
    source of `round_effects` and `residuals`, made into dicts only when read (the verdict fits every table after
    every round of a race and reads neither)."""

    @cached_property
    def round_effects(self) -> dict[int, float]:
        """ρ: each round's shared deviation, centred to mean 0 over the rounds present."""
        _, rounds, rho, _, _ = self._arrays
        return dict(zip(rounds.tolist(), rho.tolist()))

    @cached_property
    def residuals(self) -> dict[tuple[str, int], float]:
        """e per (stack, round index) window."""
        names, rounds, _, errors, present = self._arrays
        return {(names[i], int(rounds[j])): float(errors[i, j]) for i, j in zip(*np.nonzero(present))}

    def round_effect_list(self, rounds: int) -> list[float]:
        """ρ of round indices 0 … rounds − 1 (0 for a round without a window)."""
        _, present_rounds, rho, _, _ = self._arrays
        out = np.zeros(rounds)
        out[present_rounds] = rho
        return out.tolist()


def _array(y: PerRound, names: Sequence[str]) -> np.ndarray:
    """`names`' rows of `y` as a stacks × rounds array, nan where a stack has no window (or fewer rounds)."""
    table = np.full((len(names), max((len(y[s]) for s in names), default=0)), np.nan)
    for i, s in enumerate(names):
        table[i, :len(y[s])] = [np.nan if v is None else float(v) for v in y[s]]
    return table


def additive_fit(y: PerRound) -> AdditiveFit:
    """The two-way least-squares fit of `y`: y[s,r] = μ_s + ρ_r + e by alternating means (Gauss–Seidel on
    the normal equations: exact after one pass for a complete design, converging for a connected one) until
    no stack effect moves by more than FIT_TOLERANCE (or FIT_MAX_ITERATIONS passes). The passes run on a
    stacks × rounds array (the verdict fits every table after every round of a race, and the simulations of
    tests/unit/test_verdict_simulation.py thousands of races)."""
    names = [s for s, vals in y.items() if any(v is not None for v in vals)]
    table = _array(y, names)
    present = ~np.isnan(table)
    rounds = np.flatnonzero(present.any(axis=0))
    present, table = present[:, rounds], np.where(present, table, 0.0)[:, rounds]
    per_stack, per_round = present.sum(axis=1), present.sum(axis=0)
    mu = table.sum(axis=1) / per_stack if names else np.zeros(0)
    rho = np.zeros(len(rounds))
    iterations = 0
    for iterations in range(1, FIT_MAX_ITERATIONS + 1 if len(rounds) else 1):
        rho = (table - mu[:, None] * present).sum(axis=0) / per_round
        rho -= rho.mean()
        new = (table - rho[None, :] * present).sum(axis=1) / per_stack
        change = float(np.max(np.abs(new - mu)))
        mu = new
        if change <= FIT_TOLERANCE:
            break
    errors = table - mu[:, None] - rho[None, :]
    kept = errors[present]
    df = len(kept) - len(names) - len(rounds) + 1
    return AdditiveFit(dict(zip(names, mu.tolist())), float(np.dot(kept, kept)), df, iterations,
                       (names, rounds, rho, errors, present))


def paired_differences(y: PerRound, names: Sequence[str]) -> tuple[np.ndarray, ...]:
    """Every pair (a, b) of `names`, a before b (in `itertools.combinations` order), as arrays over the pairs:
    a's and b's index in `names`, the rounds both were measured in, the mean of a's minus b's value over them (nan
    without any) and the sample variance of those differences (nan under 2 rounds)."""
    table = _array(y, names)
    first, second = np.triu_indices(len(names), k=1)
    diffs = table[first] - table[second]
    present = ~np.isnan(diffs)
    counts = present.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        centres = np.where(present, diffs, 0.0).sum(axis=1) / counts
        spread = (np.where(present, diffs - centres[:, None], 0.0) ** 2).sum(axis=1) / (counts - 1)
    return first, second, counts, centres, np.where(counts >= 2, spread, np.nan)
