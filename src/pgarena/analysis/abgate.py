"""The A/B verdict and the CI gate (issue 24): is the head slower than the base beyond a margin?

An A/B run measures two versions of one stack as two stacks in the same interleaved rounds
(pipeline/ab.py). Each comparable table holding both gets head/base's paired estimate and variance from
`executions.judge_table` (over blocks of executions, or over rounds; docs/methodology.md, "Statistics"). The gate
asks a one-sided question of each table, so it bounds each side on its own, anytime-valid (the one-sided normal
mixture of Howard et al. 2021, `one_sided_radius`). With the regression margin m (e.g. 0.05 for "5 %") the floor
is 1 − m, and with α = 1 − level and T tables:

- **regression** (exit 1): some table's upper bound, at error α/T (Bonferroni over the tables: any one table
  suffices), lies below 1 − m — the head's throughput is surely below (1 − m) × the base's;
- **no regression** (exit 0): every table's lower bound, at error α, lies above 1 − m. Every table must clear, so
  a wrong "no regression" needs the bound of a table that did regress to be wrong: an intersection-union test
  (Berger 1982), which needs no split;
- **undecided** (exit 2): a bound straddles 1 − m, or a side was not measured validly in the table.

The run is a regression when any table is one; clear when every table is clear; undecided otherwise. Whatever
the truth, the gate's verdict is wrong with probability at most α, at whatever round the run stopped.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Literal

from pgarena.analysis.executions import BLOCK_TIGHTEST_AT, judge_table
from pgarena.analysis.ranking import comparable_groups, in_field
from pgarena.analysis.sequential import (
    DEFAULT_FAMILY_LEVEL,
    DEFAULT_TIGHTEST_AT,
    Inference,
    PairInterval,
    mixture_rho,
    variance_widening,
)
from pgarena.analysis.verdicts import block_rounds_of, has_rounds, per_round_rps, percent, verdict_settings
from pgarena.results.models import Cell, RunResults
from pgarena.stats.intervals import ratio_bounds

Outcome = Literal["regression", "no regression", "undecided"]
EXIT_CODES: dict[Outcome, int] = {"no regression": 0, "regression": 1, "undecided": 2}
"""The gate's exit code for each outcome (`pgarena ab --fail-on-regression`)."""
DEFAULT_REGRESSION_MARGIN = 0.05
"""A head slower than 95 % of the base counts as a regression."""
GATE_MIN_ROUNDS = 8
"""The gate decides nothing on fewer rounds: a two-stack table's variance has only rounds − 1 degrees of freedom,
too uncertain early for the plug-in boundary. Simulated with the head exactly at the floor (every decision
wrong), raced by the scheduler: deciding from round 3 on is wrong in 9.1 % of runs, from round 6 in 5.0 %,
from round 8 in 3.8 % (tests/unit/test_ab.py)."""
GATE_MIN_BLOCKS = 3
"""With the stacks restarted between blocks of rounds (analysis/executions.py), the gate decides from this many
complete blocks (tests/unit/test_executions.py)."""
DEFAULT_RESTART_EVERY = 10
"""`pgarena ab` restarts both sides every this many rounds (with a round of ~5 s in 1 s windows, a block is about
a minute and its restart and warm-up ~10–20 s more)."""


def parse_margin(text: str) -> float:
    """'5%' or '0.05' → 0.05; ValueError for anything outside (0, 1)."""
    raw = text.strip()
    value = float(raw.removesuffix("%")) / (100 if raw.endswith("%") else 1)
    if not 0 < value < 1:
        raise ValueError(f"'{text}': a regression margin is a share between 0 and 100 %, e.g. 5%")
    return value


@lru_cache(maxsize=65536)
def _mixture_root(c: float) -> float:
    """The x ≥ 0 with x²/2 + ln Φ(x) = c (c ≥ 0): where the one-sided normal mixture reaches its threshold, in
    units of √(V + ρ). The left side grows with x and is ≥ x²/2 − ln 2 there, so the root lies in
    [0, √(2(c + ln 2))]; bisection to float resolution."""
    cdf = statistics.NormalDist().cdf
    lo, hi = 0.0, math.sqrt(2 * (c + math.log(2)))
    for _ in range(100):
        mid = (lo + hi) / 2
        if mid * mid / 2 + math.log(cdf(mid)) < c:
            lo = mid
        else:
            hi = mid
    return hi


def one_sided_radius(n: int, variance: float, alpha: float, df: float = math.inf,
                     tightest_at: int = DEFAULT_TIGHTEST_AT) -> float:
    """How far, on the log scale, the mean of `n` paired differences (variance `variance` each, estimated with
    `df` degrees of freedom) may lie above its truth — or, alike, below — at every n at once with probability
    ≥ 1 − `alpha`: the one-sided normal mixture (a half-normal mixture of the exponential supermartingale;
    Howard, Ramdas, McAuliffe and Sekhon, Annals of Statistics 49(2), 2021), whose value 2·√(ρ/(V+ρ))·
    exp(S²/(2(V+ρ)))·Φ(S/√(V+ρ)) with V = n·variance reaches 1/α at S = x·√(V+ρ), solved exactly. The
    two-sided boundary (`sequential.half_width`) spends α on both sides; a one-sided question needs one. ρ as
    the two-sided boundary's at 2α (any ρ fixed in advance is valid); the plug-in variance widened as there.
    Infinite for n < 1."""
    if n < 1 or not math.isfinite(variance):
        return math.inf
    rho = mixture_rho(2 * alpha, tightest_at)
    x = _mixture_root(round(math.log(1 / (2 * alpha)) + 0.5 * math.log((n + rho) / rho), 12))
    return x * math.sqrt(variance * (n + rho)) / n * (variance_widening(2 * alpha, df) if math.isfinite(df) else 1.0)


@dataclass(frozen=True)
class TableGate:
    """One table's head/base."""

    label: str
    """The table: workload, parameter and load level."""
    outcome: Outcome
    interval: PairInterval | None
    """head / base with the gate's bounds: the lower at error α, the upper at α/T (module docstring; None: a side
    was not measured validly in rounds)."""
    base_median_rps: float | None
    head_median_rps: float | None
    reason: str | None = None
    """Why the table is undecided without an interval."""


@dataclass
class ABGate:
    """Every table's head/base and the run's outcome."""

    rule: GateRule
    """The bounds every table was judged with (its `alphas` are the summary's levels)."""
    margin: float
    tables: list[TableGate] = field(default_factory=list)

    @property
    def base(self) -> str:
        return self.rule.base

    @property
    def head(self) -> str:
        return self.rule.head

    @property
    def level(self) -> float:
        """1 − the most often the verdict may be wrong (module docstring)."""
        return self.rule.level

    @property
    def outcome(self) -> Outcome:
        """'regression' if any table is one, 'no regression' if every table is clear, else 'undecided'."""
        outcomes = {t.outcome for t in self.tables}
        if "regression" in outcomes:
            return "regression"
        return "no regression" if outcomes == {"no regression"} else "undecided"

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.outcome]

    def sentence(self) -> str:
        """The verdict in one sentence, with the error rate it holds at."""
        floor = f"{100 * (1 - self.margin):g} %"
        where = f"{len(self.tables)} table{'s' if len(self.tables) != 1 else ''}"
        joint = f"a verdict wrong in at most {percent(1 - self.level)} of runs"
        if self.outcome == "regression":
            bad = [t.label for t in self.tables if t.outcome == "regression"]
            return (f"Regression: {self.head} is slower than {floor} of {self.base} in {', '.join(bad)} "
                    f"({joint}).")
        if self.outcome == "no regression":
            return f"No regression: {self.head} is above {floor} of {self.base} in every one of {where} ({joint})."
        if not self.tables:
            return f"Could not tell: no table measured both {self.base} and {self.head} in rounds."
        open_ = [t.label for t in self.tables if t.outcome == "undecided"]
        return (f"Could not tell within the budget whether {self.head} is slower than {floor} of {self.base} in "
                f"{', '.join(open_)}: the interval still includes {floor} (more rounds, a longer --budget or a "
                f"quieter machine would narrow it; {joint}).")


def _label(cell: Cell) -> str:
    parameter = f" {cell.parameter_name}={cell.parameter}" if cell.parameter_name else ""
    return f"{cell.workload}{parameter} @ {cell.level_label}"


@dataclass(frozen=True)
class GateRule:
    """How an A/B's rounds decide (the scheduler's rule for its one pair): head/base is settled once its bounds
    (`bounds`) lie wholly on one side of `floor` (= 1 − the regression margin), which is the gate's own question,
    not "ordered or equivalent within ±m", which a self-A/B could reach only with an interval narrower than 2m."""

    head: str
    base: str
    floor: float
    block_rounds: int | None = None
    """The stacks are restarted every this many rounds and judged over blocks (None: over rounds)."""
    level: float = DEFAULT_FAMILY_LEVEL
    """1 − the gate's error (module docstring)."""
    tables: int = 1
    """The tables the run's regression claim is split over."""

    @property
    def alphas(self) -> tuple[float, float]:
        """(the lower bound's error, the upper bound's): α to clear, α/T to call a regression."""
        alpha = 1 - self.level
        return alpha, alpha / max(1, self.tables)

    def _scale(self, found: PairInterval) -> tuple[int, int, int]:
        """(units judged, where the boundary is tightest, rounds per unit): blocks when `found` was judged over
        blocks (analysis/executions.py), else rounds."""
        if found.blocks is not None:
            return found.blocks, BLOCK_TIGHTEST_AT, self.block_rounds or 1
        return found.rounds, DEFAULT_TIGHTEST_AT, 1

    def bounds(self, found: PairInterval) -> PairInterval:
        """`found` (head / base from `judge_table`) with the gate's one-sided bounds in place of its interval;
        its `level` is the two bounds' joint coverage, 1 − α − α/T."""
        units, tightest, _ = self._scale(found)
        low_alpha, high_alpha = self.alphas
        centre = math.log(found.ratio)
        down = one_sided_radius(units, found.variance, low_alpha, found.df, tightest)
        up = one_sided_radius(units, found.variance, high_alpha, found.df, tightest)
        low, high = ratio_bounds(centre, down, up)
        return replace(found, low=low, high=high, level=1 - low_alpha - high_alpha)

    def interval(self, inference: Inference) -> PairInterval | None:
        """head / base with the gate's bounds (None: the two were never measured in the same round)."""
        found = inference.interval(self.head, self.base)
        return None if found is None else self.bounds(found)

    def outcome(self, found: PairInterval) -> Outcome:
        """What bounds `found` (from `bounds`) say."""
        if found.high < self.floor:
            return "regression"
        return "no regression" if found.low > self.floor else "undecided"

    def is_open(self, inference: Inference) -> bool:
        """The bounds still straddle the floor (or the two were never measured in the same round)."""
        found = self.interval(inference)
        return found is None or self.outcome(found) == "undecided"

    def rounds_needed(self, inference: Inference, horizon: int = 400) -> int | None:
        """Rounds the pair would need, at its present estimate and variance, for the bound on the far side of the
        floor to clear it, its centre taken one standard error farther from the floor (the pair is not given up
        on a chance estimate near it); None: not within `horizon` rounds, or nothing to go on."""
        found = inference.interval(self.head, self.base)
        if found is None or found.rounds == 0 or not math.isfinite(found.variance):
            return None
        units, tightest, step = self._scale(found)
        distance = abs(math.log(found.ratio) - math.log(self.floor)) + math.sqrt(found.variance / max(1, units))
        alpha = self.alphas[0] if found.ratio > self.floor else self.alphas[1]
        for n in range(max(1, units), horizon // step + 1):
            if one_sided_radius(n, found.variance, alpha, found.df + (n - units), tightest) < distance:
                return n * step
        return None


def table_gate(cells: Sequence[Cell], rule: GateRule) -> TableGate | None:
    """head/base in one table of comparable cells with `rule`'s bounds (None: the table holds neither side), over
    blocks of `rule.block_rounds` rounds when the run restarted its stacks between them."""
    base, head, block_rounds = rule.base, rule.head, rule.block_rounds
    by_stack = {c.stack: c for c in cells if c.stack in (base, head)}
    if not by_stack:
        return None
    some = next(iter(by_stack.values()))
    medians = {s: (c.summary.rps.median if c.summary else None) for s, c in by_stack.items()}
    base_rps, head_rps = medians.get(base), medians.get(head)
    missing = [s for s in (base, head) if s not in by_stack or not in_field(by_stack[s])]
    if missing:
        why = ", ".join(f"{s} {'not measured' if s not in by_stack else 'not valid (' + ', '.join(by_stack[s].flags or [by_stack[s].status]) + ')'}"
                        for s in missing)
        return TableGate(_label(some), "undecided", None, base_rps, head_rps, reason=why)
    pair = [by_stack[base], by_stack[head]]
    if not all(has_rounds(c) for c in pair):
        return TableGate(_label(some), "undecided", None, base_rps, head_rps, reason="not measured in rounds")
    per_round = per_round_rps(pair)
    reference = per_round_rps(pair, "reference_unit_ns")
    inference = judge_table(per_round, reference, block_rounds=block_rounds, level=rule.level)  # type: ignore[arg-type]
    interval = rule.interval(inference)
    if interval is None:
        return TableGate(_label(some), "undecided", None, base_rps, head_rps,
                         reason="no round measured both" if not block_rounds else "no block of rounds measured both")
    if interval.blocks is not None and interval.blocks < GATE_MIN_BLOCKS:
        return TableGate(_label(some), "undecided", interval, base_rps, head_rps,
                         reason=f"{interval.blocks} blocks of {block_rounds} rounds measured both; the gate decides "
                                f"from {GATE_MIN_BLOCKS}")
    if interval.rounds < GATE_MIN_ROUNDS:
        return TableGate(_label(some), "undecided", interval, base_rps, head_rps,
                         reason=f"{interval.rounds} rounds measured both; the gate decides from {GATE_MIN_ROUNDS}")
    return TableGate(_label(some), rule.outcome(interval), interval, base_rps, head_rps)


def ab_gate(results: RunResults, base: str, head: str, margin: float = DEFAULT_REGRESSION_MARGIN,
            level: float | None = None) -> ABGate:
    """The gate over every table of an A/B run (module docstring); `level` defaults to the run's."""
    level = verdict_settings(results)[0] if level is None else level
    block_rounds = block_rounds_of(results)
    groups = [cells for cells in comparable_groups(results.cells).values()
              if any(c.stack in (base, head) for c in cells)]
    rule = GateRule(head=head, base=base, floor=1 - margin, block_rounds=block_rounds, level=level,
                    tables=len(groups))
    gate = ABGate(rule=rule, margin=margin)
    for cells in groups:
        found = table_gate(cells, rule)
        if found is not None:
            gate.tables.append(found)
    return gate
