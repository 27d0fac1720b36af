"""The A/B verdict and the CI gate (issue 24): is the head slower than the base beyond a margin?

An A/B run measures two versions of one stack as two stacks in the same interleaved rounds
(pipeline/ab.py). Each comparable table holding both gets head/base's paired, anytime-valid interval from
`sequential.judge` (its method: docs/methodology.md, "Statistics"). The gate makes one claim per table, so the
error is split over the tables (Bonferroni): every table's interval holds at once with probability ≥ `level`,
whatever round the run stopped at. With the regression margin m (e.g. 0.05 for "5 %"), the floor is 1 − m:

- **regression** (exit 1): the interval lies wholly below 1 − m — the head's throughput is surely below
  (1 − m) × the base's;
- **no regression** (exit 0): the interval lies wholly above 1 − m — a regression beyond the margin is ruled out;
- **undecided** (exit 2): the interval straddles 1 − m, or a side was not measured validly in the table.

The run is a regression when any table is one; clear when every table is clear; undecided otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pgarena.analysis.executions import blocks_until, judge_table
from pgarena.analysis.ranking import comparable_groups, in_field
from pgarena.analysis.sequential import DEFAULT_TIGHTEST_AT, Inference, PairInterval, rounds_until
from pgarena.analysis.verdicts import block_rounds_of, has_rounds, per_round_rps, verdict_settings
from pgarena.results.models import Cell, RunResults

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
"""`pgarena ab` restarts both sides every this many rounds (with a round of ~7 s, a block is 1–2 minutes and its
restart and warm-up ~10–20 s more)."""


def parse_margin(text: str) -> float:
    """'5%' or '0.05' → 0.05; ValueError for anything outside (0, 1)."""
    raw = text.strip()
    value = float(raw.removesuffix("%")) / (100 if raw.endswith("%") else 1)
    if not 0 < value < 1:
        raise ValueError(f"'{text}': a regression margin is a share between 0 and 100 %, e.g. 5%")
    return value


@dataclass(frozen=True)
class TableGate:
    """One table's head/base."""

    label: str
    """The table: workload, parameter and load level."""
    outcome: Outcome
    interval: PairInterval | None
    """head / base, at the gate's per-table level (None: a side was not measured validly in rounds)."""
    base_median_rps: float | None
    head_median_rps: float | None
    reason: str | None = None
    """Why the table is undecided without an interval."""


@dataclass
class ABGate:
    """Every table's head/base and the run's outcome."""

    base: str
    head: str
    margin: float
    level: float
    """Probability that every table's interval holds at once."""
    tables: list[TableGate] = field(default_factory=list)

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
        joint = f"all intervals hold together at {100 * self.level:g} %"
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


def _outcome(interval: PairInterval, margin: float) -> Outcome:
    floor = 1 - margin
    if interval.high < floor:
        return "regression"
    return "no regression" if interval.low > floor else "undecided"


@dataclass(frozen=True)
class GateRule:
    """How an A/B's rounds decide (the scheduler's rule for its one pair): head/base is settled once its interval
    lies wholly on one side of `floor` (= 1 − the regression margin), which is the gate's own question, not
    "ordered or equivalent within ±m", which a self-A/B could reach only with an interval narrower than 2m."""

    head: str
    base: str
    floor: float
    block_rounds: int | None = None
    """The stacks are restarted every this many rounds and judged over blocks (None: over rounds)."""

    def is_open(self, inference: Inference) -> bool:
        """The interval still straddles the floor (or the two were never measured in the same round)."""
        found = inference.interval(self.head, self.base)
        return found is None or found.low <= self.floor <= found.high

    def rounds_needed(self, inference: Inference, horizon: int = 400) -> int | None:
        """Rounds the pair would need, at its present estimate and variance, for the interval to clear the floor,
        its centre taken one standard error farther from the floor (the pair is not given up on a chance estimate
        near it); None: not within `horizon` rounds, or nothing to go on."""
        found = inference.interval(self.head, self.base)
        if found is None or found.rounds == 0 or not math.isfinite(found.variance):
            return None
        units = found.blocks or found.rounds
        distance = abs(math.log(found.ratio) - math.log(self.floor)) + math.sqrt(found.variance / units)
        if found.blocks is None or not self.block_rounds:
            return rounds_until(found, inference.alpha, distance, DEFAULT_TIGHTEST_AT, horizon)
        blocks = blocks_until(found, inference.alpha, distance, horizon // self.block_rounds)
        return None if blocks is None else blocks * self.block_rounds


def table_gate(cells: Sequence[Cell], base: str, head: str, margin: float, level: float,
               block_rounds: int | None = None) -> TableGate | None:
    """head/base in one table of comparable cells at `level` (None: the table holds neither side), over blocks of
    `block_rounds` rounds when the run restarted its stacks between them."""
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
    inference = judge_table(per_round, reference, block_rounds=block_rounds, level=level,  # type: ignore[arg-type]
                            margin=margin)
    interval = inference.interval(head, base)
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
    return TableGate(_label(some), _outcome(interval, margin), interval, base_rps, head_rps)


def ab_gate(results: RunResults, base: str, head: str, margin: float = DEFAULT_REGRESSION_MARGIN,
            level: float | None = None) -> ABGate:
    """The gate over every table of an A/B run (module docstring); `level` defaults to the run's."""
    level = verdict_settings(results)[0] if level is None else level
    block_rounds = block_rounds_of(results)
    groups = [cells for cells in comparable_groups(results.cells).values()
              if any(c.stack in (base, head) for c in cells)]
    per_table = 1 - (1 - level) / max(1, len(groups))
    gate = ABGate(base=base, head=head, margin=margin, level=level)
    for cells in groups:
        found = table_gate(cells, base, head, margin, per_table, block_rounds)
        if found is not None:
            gate.tables.append(found)
    return gate
