"""The two-way additive fit of a table's windows: y[s,r] = μ[s] + ρ[r] + e[s,r] by least squares.

A level per stack and a deviation per round shared by the stacks of that round, fitted on whichever windows are
present. The verdict (sequential.py) fits ln(2xx/s) and the probe's readings with it, the noise budget (noise.py)
the same, and the probe check (probecheck.py) tests the stack effects of the probe's fit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
    round_effects: dict[int, float]
    """ρ: each round's shared deviation, centred to mean 0 over the rounds present."""
    residuals: dict[tuple[str, int], float]
    """e per (stack, round index) window."""
    rss: float
    """Residual sum of squares."""
    df: int
    """Residual degrees of freedom N − S − R + 1 (can be ≤ 0 for a tiny table)."""
    iterations: int


def additive_fit(y: PerRound) -> AdditiveFit:
    """The two-way least-squares fit of `y`: y[s,r] = μ_s + ρ_r + e by alternating means (Gauss–Seidel on
    the normal equations: exact after one pass for a complete design, converging for a connected one) until
    no stack effect moves by more than FIT_TOLERANCE (or FIT_MAX_ITERATIONS passes)."""
    rows = {s: [(r, float(v)) for r, v in enumerate(vals) if v is not None] for s, vals in y.items()}
    rows = {s: points for s, points in rows.items() if points}
    columns: dict[int, list[tuple[str, float]]] = {}
    for s, points in rows.items():
        for r, v in points:
            columns.setdefault(r, []).append((s, v))
    mu = {s: math.fsum(v for _, v in points) / len(points) for s, points in rows.items()}
    rho = dict.fromkeys(columns, 0.0)
    iterations = 0
    for iterations in range(1, FIT_MAX_ITERATIONS + 1 if columns else 1):
        for r, points in columns.items():
            rho[r] = math.fsum(v - mu[s] for s, v in points) / len(points)
        shift = math.fsum(rho.values()) / len(rho)
        for r in rho:
            rho[r] -= shift
        change = 0.0
        for s, points in rows.items():
            new = math.fsum(v - rho[r] for r, v in points) / len(points)
            change = max(change, abs(new - mu[s]))
            mu[s] = new
        if change <= FIT_TOLERANCE:
            break
    residuals = {(s, r): v - mu[s] - rho[r] for s, points in rows.items() for r, v in points}
    df = len(residuals) - len(rows) - len(columns) + 1
    return AdditiveFit(mu, rho, residuals, math.fsum(e * e for e in residuals.values()), df, iterations)
