"""Two runs side by side: per common cell, both figures with intervals, the change, and whether it is
more than noise; and whether the two environments can be compared at all (pyperf `_compare.py` is the
model). Reads stored results only; the CLI (`pgarena compare`) turns the outcome into exit codes.

Significance (RPS and p99 alike): Welch's unequal-variances t-test on the per-repetition values of the
two cells (Welch 1947, "The generalization of Student's problem when several different population
variances are involved", Biometrika 34; NIST/SEMATECH e-Handbook §1.3.5.3):

    t  = (mean_B - mean_A) / se,   se² = s_A²/n_A + s_B²/n_B   (sample variances, n - 1 denominator)
    df = se⁴ / ((s_A²/n_A)² / (n_A - 1) + (s_B²/n_B)² / (n_B - 1))      (Welch–Satterthwaite)

The change is significant at level α when |t| > t*(1 - α, df), i.e. when the Welch interval
(mean_B - mean_A) ± t*·se on the difference of means excludes 0. `stats.t_critical` takes integer df,
so df is rounded down (a smaller df gives a larger t*: the test only gets more cautious). With fewer than
2 repetitions on a side there is no variance to test with: the change counts as significant only when
the two sides' ranges do not overlap (each side's 95 % interval where it has one, widened to its
min..max). A significant change is a regression or an improvement only when it is also at least
`min_change` of the baseline's mean (the minimum practical effect), so a tiny but "significant" change
on a quiet machine stays "within noise".
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pgarena.analysis.rankcheck import RankAgreement, ranking_agreement
from pgarena.results.models import Cell, RunResults
from pgarena.stats.intervals import confidence_interval, t_critical

DEFAULT_ALPHA = 0.05
"""Significance level of the Welch test (two-sided): 95 % confidence."""
DEFAULT_MIN_CHANGE_PCT = 3.0
"""Smallest change of a figure's mean, in % of run A's, that counts as a regression or improvement."""

Verdict = Literal["regression", "improvement", "within noise"]
CellKey = tuple[str, str, "int | None", str, str]


@dataclass(frozen=True)
class WelchTest:
    """Welch's t-test of mean_B - mean_A (see the module docstring); `df` unrounded, `t_star` at floor(df)."""

    mean_a: float
    mean_b: float
    t: float
    df: float
    t_star: float
    diff_low: float
    diff_high: float

    @property
    def significant(self) -> bool:
        return abs(self.t) > self.t_star


def welch_test(a: Sequence[float], b: Sequence[float], alpha: float = DEFAULT_ALPHA) -> WelchTest:
    """Welch's t-test on two samples of at least 2 values each. Identical values on both sides give
    se = 0: t is 0 when the means are equal, ±inf otherwise (df is then taken as n_A + n_B - 2)."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"Welch's test needs at least 2 values per side, got {len(a)} and {len(b)}")
    mean_a, mean_b = statistics.fmean(a), statistics.fmean(b)
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    se = math.sqrt(va + vb)
    diff = mean_b - mean_a
    if se == 0:
        df = float(len(a) + len(b) - 2)
        t = 0.0 if diff == 0 else math.copysign(math.inf, diff)
    else:
        df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
        t = diff / se
    t_star = t_critical(1 - alpha, max(1, math.floor(df)))
    return WelchTest(mean_a, mean_b, t, df, t_star, diff - t_star * se, diff + t_star * se)


@dataclass(frozen=True)
class FigureChange:
    """One figure of one cell (RPS or p99 ms) in run A and run B.

    `median_*` is the cell's median over its repetitions; `low_*`/`high_*` the 95 % interval of its mean
    (None with fewer than 2 repetitions); `change` is (mean_B - mean_A) / mean_A (None when mean_A is 0).
    """

    median_a: float
    median_b: float
    low_a: float | None
    high_a: float | None
    low_b: float | None
    high_b: float | None
    change: float | None
    test: WelchTest | None = field(repr=False)
    significant: bool
    verdict: Verdict

    @property
    def method(self) -> str:
        if self.test is None:
            return "ranges overlap" if not self.significant else "ranges disjoint"
        t = self.test
        return f"Welch t={t.t:.2f}, df={t.df:.1f}, t*={t.t_star:.2f}"


def _bounds(values: Sequence[float], level: float) -> tuple[float, float]:
    if len(values) < 2:
        return min(values), max(values)
    low, high = confidence_interval(values, level)
    return min(low, *values), max(high, *values)


def compare_figure(a: Sequence[float], b: Sequence[float], *, higher_is_better: bool,
                   alpha: float = DEFAULT_ALPHA, min_change: float = DEFAULT_MIN_CHANGE_PCT / 100) -> FigureChange:
    """Judge one figure's per-repetition values of run A against run B (see the module docstring)."""
    if not a or not b:
        raise ValueError("compare_figure needs at least one value per side")
    level = 1 - alpha
    mean_a, mean_b = statistics.fmean(a), statistics.fmean(b)
    test = welch_test(a, b, alpha) if len(a) >= 2 and len(b) >= 2 else None
    if test is not None:
        significant = test.significant
    else:
        (low_a, high_a), (low_b, high_b) = _bounds(a, level), _bounds(b, level)
        significant = high_a < low_b or high_b < low_a
    change = (mean_b - mean_a) / mean_a if mean_a else None
    verdict: Verdict = "within noise"
    if significant and change is not None and abs(change) >= min_change:
        better = change > 0 if higher_is_better else change < 0
        verdict = "improvement" if better else "regression"
    ia = confidence_interval(a, level) if len(a) >= 2 else (None, None)
    ib = confidence_interval(b, level) if len(b) >= 2 else (None, None)
    return FigureChange(statistics.median(a), statistics.median(b), *ia, *ib, change, test, significant, verdict)


def _cpu_us(cell: Cell) -> float | None:
    """Stack + PostgreSQL CPU µs per request (whichever was measured)."""
    s = cell.summary
    parts = [p for p in (s.stack_cpu_us_per_request, s.db_cpu_us_per_request) if p is not None] if s else []
    return sum(parts) if parts else None


@dataclass(frozen=True)
class CellComparison:
    """One cell present (status ok, with a summary) in both runs."""

    a: Cell
    b: Cell
    rps: FigureChange
    p99_ms: FigureChange

    @property
    def label(self) -> str:
        return cell_label(self.a)

    @property
    def cpu_us_a(self) -> float | None:
        return _cpu_us(self.a)

    @property
    def cpu_us_b(self) -> float | None:
        return _cpu_us(self.b)

    @property
    def cpu_change(self) -> float | None:
        a, b = self.cpu_us_a, self.cpu_us_b
        return (b - a) / a if a and b is not None else None

    @property
    def notes(self) -> str:
        parts = [f"{side}: {', '.join(c.flags)}" for side, c in (("A", self.a), ("B", self.b)) if c.flags]
        parts += [f"{side}: noisy" for side, c in (("A", self.a), ("B", self.b))
                  if c.summary and c.summary.noisy and "noisy" not in c.flags]
        return "; ".join(parts)


@dataclass(frozen=True)
class EnvDifference:
    """One environment fact that differs between the runs."""

    what: str
    a: str
    b: str


@dataclass(frozen=True)
class Comparison:
    """Everything `pgarena compare` reports; `differences` are the ones that matter (a loud warning)."""

    run_a: str
    run_b: str
    alpha: float
    min_change: float
    cells: list[CellComparison]
    only_a: list[tuple[str, str]]
    only_b: list[tuple[str, str]]
    differences: list[EnvDifference]
    info: list[EnvDifference]
    failed_in_b: list[str] = field(default_factory=list)
    ranking: RankAgreement = field(default_factory=RankAgreement)
    profiles: tuple[str, str] = ("", "")
    """The two runs' profiles: short-window profiles are flagged as too noisy to gate on."""
    not_comparable: list[tuple[str, str]] = field(default_factory=list)
    """(cell label, why) of cells present in both runs but measured with different load generators
    ('not comparable: oha vs k6'): oha and k6 measure different throughput against the same server, so
    such a pair is never judged (docs/methodology.md)."""

    @property
    def drift(self) -> float | None:
        """Median |RPS change| over the common cells: how far the whole run moved (None without cells).

        Shown beside the verdicts, never used to suppress them: a real regression that slows every cell
        would raise this figure too."""
        changes = [abs(c.rps.change) for c in self.cells if c.rps.change is not None]
        return statistics.median(changes) if changes else None
    """Whether the two runs order the stacks the same way wherever both claim an order (rankcheck.py)."""
    """Cells measured in A that ran and failed in B: a crash fails the --fail-on-regression gate too."""

    def count(self, verdict: Verdict) -> int:
        return sum(1 for c in self.cells if c.rps.verdict == verdict)

    def regressions(self, threshold: float) -> list[CellComparison]:
        """Cells whose RPS dropped significantly by at least `threshold` (a fraction), for --fail-on-regression.

        NOTE: each cell is tested alone (no multiplicity correction) and the Welch variance holds the
        repetitions' scatter within each run only, not the drift between runs: with no real change a cell
        false-alarms up to α/2 = 2.5 % of the time, k cells up to 1 − 0.975^k, and a drift beyond
        `threshold` fails the gate outright (docs/compare.md, "A CI gate")."""
        return [c for c in self.cells
                if c.rps.significant and c.rps.change is not None and -c.rps.change >= threshold]


def _usable(cell: Cell) -> bool:
    return cell.status == "ok" and cell.summary is not None


def cell_label(cell: Cell) -> str:
    """'stack · workload rows=10 · 50 VUs': a cell's key for people."""
    parameter = f" {cell.parameter_name or 'parameter'}={cell.parameter}" if cell.parameter is not None else ""
    pool = "" if cell.pool_dimension is None else f" · pool {cell.pool_dimension}"
    return f"{cell.stack} · {cell.workload}{parameter} · {cell.level_label}{pool}"


def _missing_note(key: CellKey, other: dict[CellKey, Cell], other_name: str) -> str:
    cell = other.get(key)
    if cell is None:
        return f"not in {other_name}"
    return f"failed in {other_name}: {cell.error or 'no summary'}"


def environment_differences(a: RunResults, b: RunResults, stacks: set[str] | None = None,
                            engines: set[str] | None = None) -> tuple[list[EnvDifference], list[EnvDifference]]:
    """(differences that matter, differences listed as info only) between two runs' environments.

    What matters: CPU model and count, generator/server CPU sets, PostgreSQL version and settings, the
    versions of the load generators used, the declared facts of the stacks compared (and where a remote
    target was deployed), and the config's profile, window, warm-up, load levels, pool size(s), workers and
    engine. Info only: hostname, pgarena version and git revision, kernel, OS, Python, memory.
    """
    matters: list[EnvDifference] = []
    info: list[EnvDifference] = []

    def check(into: list[EnvDifference], what: str, va: object, vb: object) -> None:
        if va != vb:
            into.append(EnvDifference(what, _show(va), _show(vb)))

    ea, eb = a.environment, b.environment
    for name in ("cpu_model", "cpu_count", "generator_cpus", "server_cpus"):
        check(matters, name, getattr(ea, name), getattr(eb, name))
    pg_a = ea.postgres_version or (a.database.version if a.database else None)
    pg_b = eb.postgres_version or (b.database.version if b.database else None)
    check(matters, "postgres_version", pg_a, pg_b)
    if a.database and b.database:
        check(matters, "database.mode", a.database.mode, b.database.mode)
        check(matters, "database.settings_profile", a.database.settings_profile, b.database.settings_profile)
        for key in sorted(set(a.database.settings) | set(b.database.settings)):
            check(matters, f"database.settings.{key}", a.database.settings.get(key), b.database.settings.get(key))
    for engine in sorted(engines if engines is not None else set(ea.engine_versions) | set(eb.engine_versions)):
        check(matters, f"engine_versions.{engine}", ea.engine_versions.get(engine), eb.engine_versions.get(engine))
    stacks_a, stacks_b = {s.id: s for s in a.stacks}, {s.id: s for s in b.stacks}
    for stack_id in sorted((stacks if stacks is not None else set(stacks_a)) & set(stacks_a) & set(stacks_b)):
        sa, sb = stacks_a[stack_id], stacks_b[stack_id]
        for name in ("framework", "framework_version", "driver", "driver_version", "server", "pooler",
                     "prepared_statements", "target_url"):  # target_url: a remote deployment, or another one
            check(matters, f"stack {stack_id}: {name}", getattr(sa, name), getattr(sb, name))
    for name in ("profile", "duration_seconds", "warmup_seconds", "vus", "pool_size", "workers", "engine"):
        check(matters, f"config.{name}", a.config.get(name), b.config.get(name))
    check(matters, "config.pool_sizes", a.config.get("pool_sizes") or [], b.config.get("pool_sizes") or [])
    for name in ("hostname", "pgarena_version", "pgarena_git_revision", "kernel", "os", "python", "memory_bytes"):
        check(info, name, getattr(ea, name), getattr(eb, name))
    return matters, info


def _show(value: object) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def compare_runs(a: RunResults, b: RunResults, *, alpha: float = DEFAULT_ALPHA,
                 min_change: float = DEFAULT_MIN_CHANGE_PCT / 100) -> Comparison:
    """Match the cells of run A (baseline) and run B by `Cell.key` and judge each common one."""
    cells_a = {c.key: c for c in a.cells}
    cells_b = {c.key: c for c in b.cells}
    ok_a = {k: c for k, c in cells_a.items() if _usable(c)}
    ok_b = {k: c for k, c in cells_b.items() if _usable(c)}
    common = [k for k in ok_a if k in ok_b and ok_a[k].engine == ok_b[k].engine]
    not_comparable = [(cell_label(c), engines_note(c, ok_b[k])) for k, c in ok_a.items()
                      if k in ok_b and c.engine != ok_b[k].engine]
    compared = []
    for key in common:
        ca, cb = ok_a[key], ok_b[key]
        compared.append(CellComparison(
            ca, cb,
            _figure(ca, cb, lambda r: r.rps, lambda c: c.summary.rps.median, True, alpha, min_change),
            _figure(ca, cb, lambda r: r.latency.p99_ms, lambda c: c.summary.latency_p99_ms.median, False, alpha,
                    min_change),
        ))
    only_a = [(cell_label(c), _missing_note(k, cells_b, "B")) for k, c in ok_a.items() if k not in ok_b]
    only_b = [(cell_label(c), _missing_note(k, cells_a, "A")) for k, c in ok_b.items() if k not in ok_a]
    stacks = {k[0] for k in common}
    engines = {ok_a[k].engine for k in common} | {ok_b[k].engine for k in common}
    differences, info = environment_differences(a, b, stacks or None, engines or None)
    failed_in_b = [cell_label(c) for k, c in ok_a.items() if k in cells_b and not _usable(cells_b[k])]
    return Comparison(a.run_id, b.run_id, alpha, min_change, compared, only_a, only_b, differences, info,
                      failed_in_b, ranking_agreement(a, b),
                      (str(a.config.get("profile", "")), str(b.config.get("profile", ""))), not_comparable)


def engines_note(a: Cell, b: Cell) -> str:
    """'not comparable: oha vs k6' — why a cell of both runs is not judged."""
    return f"not comparable: {a.engine} vs {b.engine}"


def _figure(ca: Cell, cb: Cell, per_rep: Callable, fallback: Callable, higher_is_better: bool, alpha: float,
            min_change: float) -> FigureChange:
    """Per-repetition values when the cell kept them, else the summary's median as a single value."""
    va = [per_rep(r) for r in ca.repetitions] or [fallback(ca)]
    vb = [per_rep(r) for r in cb.repetitions] or [fallback(cb)]
    return compare_figure(va, vb, higher_is_better=higher_is_better, alpha=alpha, min_change=min_change)


# --- Rendering: one set of rows for the terminal, Markdown and HTML ----------------------------------------

COLUMNS: list[tuple[str, str, str]] = [
    ("cell", "Cell", "l"),
    ("rps_a", "RPS A median [95 % CI]", "r"), ("rps_b", "RPS B median [95 % CI]", "r"),
    ("rps_change", "Δ RPS", "r"), ("rps_verdict", "RPS verdict", "l"), ("rps_test", "RPS test", "l"),
    ("p99_a", "p99 A ms", "r"), ("p99_b", "p99 B ms", "r"), ("p99_change", "Δ p99", "r"),
    ("p99_verdict", "p99 verdict", "l"),
    ("cpu_a", "CPU µs/req A", "r"), ("cpu_b", "CPU µs/req B", "r"), ("cpu_change", "Δ CPU", "r"),
    ("notes", "Flags", "l"),
]
"""(row key, header, alignment) of the per-cell table, in order."""
