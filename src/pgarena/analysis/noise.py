"""The noise budget of a run: how much each window scatters, how much the rounds share, and how much of the
scatter the machine's speed (the reference probe) explains.

For each table of comparable cells measured in interleaved rounds, y = ln(2xx/s) of every window is fitted
with the two-way additive model y[s,r] = μ[s] + ρ[r] + e[s,r] (stack effect, round effect, residual) by
least squares on the windows present, computed by alternating means (backfitting: each step is the exact
least-squares update of one factor given the other, so the fit converges to the least-squares solution of a
connected design; a complete design converges after one pass). Reported:

- **per-window log-sd** √(RSS / df), df = N − S − R + 1 (windows, stacks, rounds): the noise that pairing
  by round cannot remove, the figure that sets how wide a paired interval is;
- **round factor sd**: the sample sd of the centred round effects ρ — the drift the stacks of one round
  share, which pairing removes (it also holds a share of the windows' noise, about σ²/S);
- the same **after the probe adjustment** y − β·z, with z = ln(reference_unit_ns) of the same window
  double-centred by the same fit and β the least-squares slope of the y residuals on the z residuals (a
  window's residuals are linear in its data, so the adjusted residuals are e_y − β·e_z and the adjusted
  round effects ρ_y − β·ρ_z); one more degree of freedom is spent on β. `correlation` is that of the two
  residuals. The adjustment uses only windows with a probe reading.

Pooled over a run's tables, the sums of squares add: one β for the machine (Σ e_y·e_z / Σ e_z²), log-sd
√(ΣRSS / Σdf), round sd √(Σρ² / Σ(R − 1)).

This is the covariate of duet benchmarking (Bulej et al., "Duet Benchmarking: Improving Measurement Accuracy
in the Cloud", Empirical Software Engineering 25, 2020) read as a regression adjustment (the analysis of
covariance of a two-way layout).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pgarena.analysis.additive import AdditiveFit, PerRound, additive_fit
from pgarena.analysis.probecheck import ProbeCheck, stack_dependence
from pgarena.analysis.ranking import BY_RPS, comparable_groups, headline_key, level_group_label, rank_basis
from pgarena.analysis.verdicts import has_rounds
from pgarena.contract import workloads as wl
from pgarena.results.models import Cell, Repetition, RunResults


@dataclass(frozen=True)
class NoiseBudget:
    """One table's (or a run's pooled) noise, on the log scale of 2xx/s (0.10 ≈ 10 % per window)."""

    windows: int
    stacks: int
    rounds: int
    df: int
    """Residual degrees of freedom of the fit (N − S − R + 1; summed when pooled)."""
    window_log_sd: float | None
    """Per-window log-sd √(RSS/df) (None: df < 1)."""
    round_sd: float | None
    """sd of the round effects ρ (None: fewer than 2 rounds)."""
    probe_windows: int = 0
    """Windows with a probe reading (the adjustment uses these only)."""
    beta: float | None = None
    """Slope of the y residuals on the z residuals (z = ln reference_unit_ns); near −1: throughput moves
    inversely with the unit's CPU time. None: no usable probe readings."""
    correlation: float | None = None
    """Correlation of the y and z residuals."""
    adjusted_window_log_sd: float | None = None
    """Per-window log-sd of y − β·z (df − 1)."""
    adjusted_round_sd: float | None = None
    """sd of the round effects of y − β·z."""
    robust_window_log_sd: float | None = None
    """1.4826 × the median absolute deviation of the residuals (each scaled by √(N/df)): equal to
    `window_log_sd` for normal noise, far below it when a few slow windows make most of the variance."""
    kurtosis: float | None = None
    """Of the residuals: 3 for normal noise, above it for heavy tails (a few outlying windows)."""
    probe_check: ProbeCheck | None = None
    """One table: whether the probe read differently beside different stacks (probecheck.py); None pooled."""


@dataclass(frozen=True)
class _Parts:
    """One table's sums, from which a budget (one table or pooled) is put together."""

    windows: int
    stacks: int
    rounds: int
    df: int
    rss: float
    rho_squares: float
    probe_windows: int = 0
    probe_df: int = 0
    yy: float = 0.0
    zz: float = 0.0
    yz: float = 0.0
    rho_y: tuple[float, ...] = ()
    rho_z: tuple[float, ...] = ()
    residuals: tuple[float, ...] = ()
    """The fit's residuals, each scaled by √(windows/df) so that their mean square is RSS/df."""
    probe_check: ProbeCheck | None = None


def _logs(values: Sequence[float | None], rounds: int) -> list[float | None]:
    padded = list(values) + [None] * (rounds - len(values))
    return [math.log(v) if v is not None and v > 0 else None for v in padded]


def _parts(per_round: PerRound, reference: PerRound | None) -> _Parts:
    rounds = max((len(v) for v in per_round.values()), default=0)
    y = {s: _logs(v, rounds) for s, v in per_round.items()}
    fit = additive_fit(y)
    parts = _Parts(windows=len(fit.residuals), stacks=len(fit.stack_effects), rounds=len(fit.round_effects),
                   df=fit.df, rss=fit.rss, rho_squares=math.fsum(v * v for v in fit.round_effects.values()),
                   residuals=tuple(e * math.sqrt(len(fit.residuals) / fit.df) for e in fit.residuals.values())
                   if fit.df > 0 else ())
    if reference is None:
        return parts
    z = {s: _logs(reference.get(s, ()), rounds) for s in y}
    both = {s: [v if v is not None and z[s][r] is not None else None for r, v in enumerate(y[s])] for s in y}
    y_fit = additive_fit(both)
    z_both = {s: [z[s][r] if v is not None else None for r, v in enumerate(both[s])] for s in both}
    z_fit = additive_fit(z_both)
    if y_fit.df < 2 or len(y_fit.round_effects) < 2:
        return parts
    keys = list(y_fit.residuals)
    order = sorted(y_fit.round_effects)
    return replace(parts, probe_windows=len(keys), probe_df=y_fit.df, yy=y_fit.rss, zz=z_fit.rss,
                   yz=math.fsum(y_fit.residuals[k] * z_fit.residuals[k] for k in keys),
                   rho_y=tuple(y_fit.round_effects[r] for r in order), rho_z=tuple(z_fit.round_effects[r] for r in order),
                   probe_check=stack_dependence(z_both, z_fit.rss, z_fit.df, z_fit.stack_effects))


def _tails(residuals: Sequence[float]) -> dict[str, float | None]:
    """The robust sd and the kurtosis of the scaled residuals (NoiseBudget), None with fewer than 8."""
    if len(residuals) < 8:
        return {}
    middle = statistics.median(residuals)
    square = math.fsum(e * e for e in residuals) / len(residuals)
    return {"robust_window_log_sd": 1.4826 * statistics.median(abs(e - middle) for e in residuals),
            "kurtosis": math.fsum(e**4 for e in residuals) / len(residuals) / square**2 if square > 0 else None}


def _budget(tables: Sequence[_Parts]) -> NoiseBudget:
    df = sum(t.df for t in tables if t.df > 0)
    rss = math.fsum(t.rss for t in tables if t.df > 0)
    round_df = sum(t.rounds - 1 for t in tables if t.rounds >= 2)
    budget = NoiseBudget(
        windows=sum(t.windows for t in tables), stacks=max((t.stacks for t in tables), default=0),
        rounds=max((t.rounds for t in tables), default=0), df=df,
        window_log_sd=math.sqrt(rss / df) if df >= 1 else None,
        round_sd=math.sqrt(math.fsum(t.rho_squares for t in tables if t.rounds >= 2) / round_df) if round_df else None,
        **_tails([e for t in tables for e in t.residuals]))
    probed = [t for t in tables if t.probe_windows]
    zz = math.fsum(t.zz for t in probed)
    if not probed or zz <= 0:
        return budget
    yy, yz = math.fsum(t.yy for t in probed), math.fsum(t.yz for t in probed)
    beta = yz / zz
    adjusted_df = sum(t.probe_df for t in probed) - 1
    adjusted_rss = max(0.0, yy - 2 * beta * yz + beta * beta * zz)
    rho_squares = math.fsum((a - beta * b) ** 2 for t in probed for a, b in zip(t.rho_y, t.rho_z))
    rho_df = sum(len(t.rho_y) - 1 for t in probed)
    return replace(budget, probe_windows=sum(t.probe_windows for t in probed), beta=beta,
                   correlation=yz / math.sqrt(yy * zz) if yy > 0 else None,
                   adjusted_window_log_sd=math.sqrt(adjusted_rss / adjusted_df) if adjusted_df >= 1 else None,
                   adjusted_round_sd=math.sqrt(rho_squares / rho_df) if rho_df else None)


def noise_budget(per_round: PerRound, reference: PerRound | None = None) -> NoiseBudget:
    """One table's budget: `per_round` is stack → 2xx/s per round, `reference` stack → the probe's
    reference_unit_ns in the same windows (None: no adjustment)."""
    parts = _parts(per_round, reference)
    return replace(_budget([parts]), probe_check=parts.probe_check)


def pooled_budget(tables: Sequence[tuple[PerRound, PerRound | None]]) -> NoiseBudget:
    """Several tables' budgets pooled (module docstring): sums of squares and degrees of freedom added, one
    β for all. `stacks` and `rounds` are the largest table's."""
    return _budget([_parts(y, z) for y, z in tables])


def gap_unit_ns(rep: Repetition) -> float | None:
    """The probe's reading of the idle gaps around a window (speedprobe.SpeedProbe.load_starts): the geometric mean
    of the gap before it and the gap after it, either alone where the other was not measured; None: neither."""
    gaps = [v for v in (rep.reference_gap_before_ns, rep.reference_gap_after_ns) if v is not None and v > 0]
    return math.exp(math.fsum(math.log(v) for v in gaps) / len(gaps)) if gaps else None


def table_rounds(cells: Sequence[Cell], gaps: bool = False) -> tuple[dict[str, list[float | None]],
                                                                     dict[str, list[float | None]]]:
    """(2xx/s, reference_unit_ns) per stack and round of a table's cells measured in rounds, rounds aligned
    over the rounds any of them was measured in; cells without rounds are left out. `gaps`: the idle gaps'
    reading (`gap_unit_ns`) instead of the window's own."""
    cells = [c for c in cells if has_rounds(c)]
    rounds = sorted({r.round for c in cells for r in c.repetitions})  # type: ignore[type-var]
    rps = {c.stack: {r.round: r.rps for r in c.repetitions} for c in cells}
    unit = {c.stack: {r.round: gap_unit_ns(r) if gaps else r.reference_unit_ns for r in c.repetitions} for c in cells}
    return ({s: [v.get(r) for r in rounds] for s, v in rps.items()},
            {s: [v.get(r) for r in rounds] for s, v in unit.items()})


def table_label(cell: Cell) -> str:
    """'perf-test rows=1 · 50 VUs · k6': the table a cell belongs to."""
    parameter = "" if cell.parameter is None else f" {wl.PARAMETER_NAMES[cell.workload]}={cell.parameter}"
    return f"{cell.workload}{parameter} · {level_group_label(cell)} · {cell.engine}"


def run_noise(results: RunResults, gaps: bool = False) -> tuple[list[tuple[str, NoiseBudget]], NoiseBudget | None]:
    """Every table of the run measured in rounds and ranked by 2xx/s (closed model: an open-model window's
    2xx/s is its offered rate, not a measurement of speed) with its budget (label, budget), the headline first
    (ranking.headline_key: the table the reports show first), and the run's pooled budget (None: no such table).
    `gaps`: the adjustment by the probe's reading of the idle gaps around each window (`gap_unit_ns`)."""
    tables = []
    headline = headline_key(results.cells, results.config.get("workloads"))
    groups = comparable_groups(results.cells)
    for key in sorted(groups, key=lambda k: k[:-1] != headline):  # stable: the others in results.json's order
        cells = groups[key]
        if rank_basis(cells) != BY_RPS:
            continue
        rps, unit = table_rounds(cells, gaps)
        if rps:
            tables.append((table_label(cells[0]), rps, unit))
    per_table = [(label, noise_budget(rps, unit)) for label, rps, unit in tables]
    pooled = pooled_budget([(rps, unit) for _, rps, unit in tables]) if tables else None
    return per_table, pooled


def budget_line(budget: NoiseBudget, probe: str = "the probe") -> str:
    """One line: 'window log-sd 0.182 → 0.121 after the probe (β −0.93, r −0.80) (robust sd 0.170, kurtosis 3.1);
    round sd 0.094 → 0.031;
    60 windows, 4 stacks, 15 rounds'. `probe` names the covariate ('the idle gaps' for `gap_unit_ns`)."""

    def figure(value: float | None) -> str:
        return "–" if value is None else f"{value:.3f}"

    text = f"window log-sd {figure(budget.window_log_sd)}"
    if budget.beta is not None:
        text += (f" → {figure(budget.adjusted_window_log_sd)} after {probe} (β {budget.beta:+.2f}"
                 + (f", r {budget.correlation:+.2f}" if budget.correlation is not None else "") + ")")
    if budget.robust_window_log_sd is not None and budget.kurtosis is not None:
        text += f" (robust sd {figure(budget.robust_window_log_sd)}, kurtosis {budget.kurtosis:.1f})"
    text += f"; round sd {figure(budget.round_sd)}"
    if budget.beta is not None:
        text += f" → {figure(budget.adjusted_round_sd)}"
    if budget.probe_check is not None:
        check = budget.probe_check
        text += (f"; {probe} beside each stack: {check.sentence()}"
                 + (f" — it depends on the stack ({check.where()}), so the verdict does not use it"
                    if check.dependent else ""))
    return text + (f"; {budget.windows} windows, {budget.stacks} stack{'s' if budget.stacks != 1 else ''}, "
                   f"{budget.rounds} round{'s' if budget.rounds != 1 else ''}")
