"""The verdict of each table of comparable cells: two ranks per stack, ratios, and sentences.

For each group of comparable cells (`ranking.comparable_groups`):

- **Paired, when every ranked cell was measured in interleaved rounds** (each repetition has `round`): the
  stacks of one round saw the same machine, so they are compared round by round, each window corrected for
  the machine's speed where the probe read it (`pgarena.analysis.sequential.judge`). Every pair of the
  table gets an interval that holds jointly with all the others at the run's level, at whatever round the
  rounds stopped. The order is `sequential.paired_order` (paired estimates, never against a claim), ranks
  come from the claims, each stack gets its ratio to the table's best (and to a baseline stack), and each
  neighbouring pair a sentence: "a is 1.52× b (1.41–1.64)", "a and b are equivalent within ±10 %
  (0.97–1.05)" or "a and b: not resolved (0.84–1.31; the two alone: ≈ 23 rounds, 1.3 min)" — what a run of only
  that pair's stacks would need (`forecast.rounds_alone`).
- **Independent otherwise** (a sequential run, results from before rounds): today's ranks from the
  overlap of each cell's own interval (`ranking.table_ranks`), and ratios of medians without an interval.
- **Mixed** when some stacks of the table were measured in rounds and others not (a stack that could not
  run beside the others, a second one fixing the same port, was measured on its own afterwards): the stacks
  of the rounds are judged as above; the others are shown with their own figures, unranked and without a
  ratio — they saw another moment of the machine, and nothing paired covers them.

Two ranks side by side: among the stacks whose answers are exact (no flags.INEXACT flag) and among every
stack that answered validly; a stack with ❌ columns has only the second, with the columns named. Invalid
cells (flags.INVALID) have neither. Open-model tables at a shared rate rank p99 latency with independent
intervals; tables at a share of each stack's own peak rank nothing (ranking.rank_basis).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pgarena.analysis.executions import judge_table
from pgarena.analysis.forecast import ALONE_POWER
from pgarena.analysis.paired import (
    PairVerdict,
    RatioInterval,
    neighbour_pairs,
    paired_ratio,
)
from pgarena.analysis.sequential import (
    DEFAULT_EQUIVALENCE_MARGIN,
    DEFAULT_FAMILY_LEVEL,
    Inference,
    PairInterval,
    pair_count,
    rank_labels,
)
from pgarena.analysis.ranking import (
    BY_P99,
    BY_RPS,
    NOT_RANKED,
    UNRANKED,
    comparable_groups,
    exact,
    in_exact_field,
    in_field,
    rank_basis,
    table_ranks,
)
from pgarena.results.models import Cell, RunResults
from pgarena.stats.intervals import bounds_text

PerRound = dict[str, list[float | None]]
"""stack → 2xx/s in each round of the table (None: not measured in that round)."""


def has_rounds(cell: Cell) -> bool:
    """Every repetition of the cell was measured in an interleaved round."""
    return bool(cell.repetitions) and all(r.round is not None for r in cell.repetitions)


def per_round_rps(cells: Sequence[Cell], figure: str = "rps") -> PerRound | None:
    """Each cell's 2xx/s (or another repetition field, e.g. `reference_unit_ns`) by round, aligned over the
    rounds any of them was measured in; None when a cell has a repetition without a round (it was not
    measured in interleaved rounds)."""
    if not cells or any(r.round is None for c in cells for r in c.repetitions):
        return None
    rounds = sorted({r.round for c in cells for r in c.repetitions})  # type: ignore[type-var]
    by_stack = {c.stack: {r.round: getattr(r, figure, None) for r in c.repetitions} for c in cells}
    return {stack: [values.get(r) for r in rounds] for stack, values in by_stack.items()}


@dataclass(frozen=True)
class Ratio:
    """A stack's figure over a reference stack's: paired (with an interval) or of medians (without)."""

    ratio: float
    interval: RatioInterval | PairInterval | None = None

    def text(self) -> str:
        """'0.66× (0.62–0.70)', or '0.66×' without a paired interval."""
        if self.interval is None:
            return f"{self.ratio:.2f}×"
        return f"{self.ratio:.2f}× ({bounds_text(self.interval.low, self.interval.high)})"


@dataclass
class TableVerdict:
    """What one table of comparable cells establishes."""

    cells: list[Cell]
    """Measured cells in display order (median 2xx/s, or p99 for open-model tables at a shared rate)."""
    basis: str
    paired: bool
    """Ranks and ratios come from per-round pairing (interleaved rounds), for every stack but `sequential`."""
    rounds: int
    rank_exact: dict[str, str] = field(default_factory=dict)
    """stack → rank among the stacks whose answers are exact ("–": not in that field)."""
    rank_all: dict[str, str] = field(default_factory=dict)
    """stack → rank among every valid stack."""
    best: str | None = None
    """The reference of `to_best`: first in median order among the exact stacks (else among all)."""
    to_best: dict[str, Ratio] = field(default_factory=dict)
    baseline: str | None = None
    to_baseline: dict[str, Ratio] = field(default_factory=dict)
    baseline_problem: str | None = None
    """Why there is no ratio to the baseline in this table (it was not measured validly here)."""
    pairs: list[PairVerdict] = field(default_factory=list)
    """Neighbouring pairs among every valid stack in the table's order (paired tables only)."""
    inference: Inference | None = None
    """Every pair's simultaneous interval (paired tables measured wholly in rounds)."""
    stop_reason: str | None = None
    """Why the table's rounds stopped (the cells' summary stop reason)."""
    every_pair: bool = False
    """The rounds went on until every pair was resolved, not only the neighbouring ones (`resolve_every_pair`)."""
    wrong_columns: dict[str, list[str]] = field(default_factory=dict)
    """stack → its ❌ columns on this workload (flags.INEXACT cells)."""
    sequential: list[str] = field(default_factory=list)
    """Stacks of a paired table measured without rounds (a mixed table): shown, neither ranked nor compared."""
    seconds_per_window: float | None = None
    """The run's wall time per window (`window_seconds`), for what an open pair's two stacks alone would need
    (None: not said)."""

    def method(self) -> str:
        """One sentence: how this table's ranks were established."""
        if self.basis == NOT_RANKED:
            return "Not ranked: each stack was offered a share of its own peak, so the loads differ."
        if self.paired:
            fit = self.inference.fit if self.inference else None
            corrected = ""
            if fit is not None and fit.slope:
                corrected = f" corrected for the machine's speed in each window (β = {fit.slope:.2f})"
                if fit.bias_variance:
                    corrected += (f", every interval widened for a shift of the probe by stack too small for its check "
                                  f"to see (sd {fit.probe_shift:.1%})")
            elif fit is not None and fit.probe_check is not None and fit.probe_check.dependent:
                corrected = (" not corrected for the machine's speed: the speed probe read differently beside "
                             f"different stacks ({fit.probe_check.sentence()}; {fit.probe_check.where()})")
            blocks = next((p.blocks for p in self.inference.pairs.values() if p.blocks), None) if self.inference else None
            over = (f" in {blocks} block(s), the stacks restarted between blocks; intervals over the blocks' means"
                    if blocks else "")
            apart = (f" {', '.join(self.sequential)}: measured on its own after the rounds (the schedule says why), "
                     "so neither ranked nor compared with the others." if self.sequential else "")
            return (f"Paired over {self.rounds} interleaved round(s){over}: ranks and ratios from each round's "
                    f"ratios{corrected}.{apart}")
        if self.basis == BY_P99:
            return "p99 latency by independent 95 % intervals of the mean: ranked where they do not overlap."
        return "Independent 95 % intervals of the mean 2xx/s (no interleaved rounds): ranked where they do not overlap."

    def family_sentence(self) -> str | None:
        """One sentence: the level at which all of the table's claims hold together (paired tables)."""
        if self.inference is None or len(self.inference.fit.effect) < 2:
            return None
        stacks, final = len(self.inference.fit.effect), self.inference.final_alpha
        looks = (f"anytime-valid confidence sequences, each at {percent(1 - self.inference.alpha)}" if final is None
                 else f"anytime-valid confidence sequences at every round, each at {percent(1 - self.inference.alpha)}, "
                 "and one final fixed-sample interval for the pairs measured in every round until the time or the cap "
                 f"ended them ({self.final_pairs() or 'none'} of its pairs here), each at {percent(1 - final)}, "
                 "the narrower counting")
        return (f"Every interval and order in this table holds jointly with {percent(self.inference.level)} "
                f"confidence at whatever round the rounds stopped: {looks}, Bonferroni over the "
                f"{pair_count(stacks)} pair(s) of its {stacks} stacks; 'equivalent' means within "
                f"±{percent(self.inference.margin)}.")

    def final_pairs(self) -> int:
        """How many of the table's pairs have the final look's interval."""
        return sum(p.final for p in self.inference.pairs.values()) if self.inference else 0

    def stopping_sentence(self) -> str | None:
        """One sentence: the rule the rounds stopped by, and why this table stopped."""
        if self.inference is None or len(self.inference.fit.effect) < 2:
            return None
        scope = "pair" if self.every_pair else "neighbouring pair"
        why = {"settled": f"every {scope} was resolved",
               "out-of-reach": "the pairs still open could not be resolved within the rounds left",
               "max-repetitions": "the cap of rounds was reached", "budget": "the time budget was spent"}
        reason = why.get(self.stop_reason or "", self.stop_reason or "unknown")
        return (f"Rounds continued for the stacks of each {scope} neither ordered nor equivalent and "
                f"still within reach of the budget, judged after every round; this table stopped after "
                f"{self.rounds} round(s): {reason}.")

    def reach_sentence(self) -> str | None:
        """One sentence on 'the two alone' when a neighbouring pair left open says it (`PairVerdict.reach`)."""
        if not self.seconds_per_window or not any(p.forecast for p in self.pairs):
            return None
        return ("'The two alone': the paired rounds a run of only that pair's two stacks would need to resolve it in "
                f"{percent(ALONE_POWER)} of runs, if its ratio and its rounds' scatter are those estimated here, and "
                f"their time at this run's {self.seconds_per_window:.2f} s a window, two windows a round (`pgarena run "
                "--stacks a,b --workloads … --budget …`; building and warming up come on top).")

    def sentences(self) -> list[str]:
        """The adjacent pairs' sentences, each naming the ❌ columns of a stack in it."""
        out = []
        for pair in self.pairs:
            wrong = [f"{s}: ❌ {', '.join(self.wrong_columns[s])}" for s in (pair.upper, pair.lower)
                     if self.wrong_columns.get(s)]
            out.append(pair.sentence(self.seconds_per_window) + (f" ({'; '.join(wrong)})" if wrong else ""))
        return out

    def groups(self) -> list[list[str]]:
        """The stacks of `pairs` in their order, split into groups that cannot be separated: consecutive
        stacks are joined where the pair between them is not ordered (a group of one is a stack ordered
        against both neighbours). Empty when the table has no paired pairs."""
        if not self.pairs:
            return []
        out = [[self.pairs[0].upper]]
        for pair in self.pairs:
            if pair.ordered:
                out.append([pair.lower])
            else:
                out[-1].append(pair.lower)
        return out

    def leaders(self) -> list[str]:
        """The stacks ranked first (an explicit tie when several): among the exact stacks, or among all
        when no exact stack is ranked."""
        ranks = self.rank_exact if any(v != UNRANKED for v in self.rank_exact.values()) else self.rank_all
        return [c.stack for c in self.cells if ranks.get(c.stack, UNRANKED).split("–")[0] == "1"]


def percent(value: float) -> str:
    """0.95 → '95 %', 0.999737 → '99.97 %'."""
    return f"{value * 100:.4g} %"


def _labels(ranked: Sequence[tuple[Cell, str]]) -> dict[str, str]:
    return {c.stack: label for c, label in ranked}


def _ratios(per_round: PerRound | None, reference: str, cells: Sequence[Cell],
            inference: Inference | None = None) -> dict[str, Ratio]:
    """Each cell's ratio to `reference`: from the table's inference, else paired per pair where both were
    measured in rounds, else of medians."""
    medians = {c.stack: c.summary.rps.median for c in cells}  # type: ignore[union-attr]
    base = medians[reference]
    out = {s: Ratio(m / base) for s, m in medians.items() if s != reference and base > 0}
    for stack in medians:
        if stack == reference:
            continue
        found: RatioInterval | PairInterval | None = None
        if inference is not None:
            found = inference.interval(stack, reference)
        elif per_round is not None and stack in per_round and reference in per_round:
            found = paired_ratio(per_round[stack], per_round[reference])
        if found is not None:
            out[stack] = Ratio(found.ratio, found)
    return out


def table_verdict(cells: Sequence[Cell], *, baseline: str | None = None,
                  wrong_columns: Mapping[str, list[str]] | None = None, level: float = DEFAULT_FAMILY_LEVEL,
                  margin: float = DEFAULT_EQUIVALENCE_MARGIN, block_rounds: int | None = None,
                  every_pair: bool = False, seconds_per_window: float | None = None) -> TableVerdict:
    """The verdict of one group of comparable cells (see the module docstring). `wrong_columns`: stack → its
    ❌ columns on this workload; `level` and `margin`: the run's family-wise level and equivalence margin;
    `block_rounds`: the run restarted its stacks every that many rounds (judged over blocks: executions.py);
    `every_pair`: its rounds went on until every pair was resolved (what the stopping sentence says);
    `seconds_per_window`: the run's wall time per window, to say what an open pair's two stacks alone would need."""
    basis = rank_basis(cells)
    measured = [c for c in cells if c.summary is not None]
    ranked = [c for c in measured if in_field(c)]
    in_rounds = [c for c in ranked if has_rounds(c)] if basis == BY_RPS else []
    mixed = len(in_rounds) >= 2 and len(in_rounds) < len(ranked)
    per_round = per_round_rps(in_rounds) if in_rounds and (mixed or len(in_rounds) == len(ranked)) else None
    rounds = len(next(iter(per_round.values()))) if per_round else 0
    verdict = TableVerdict(cells=[], basis=basis, paired=per_round is not None, rounds=rounds, every_pair=every_pair,
                           seconds_per_window=seconds_per_window,
                           wrong_columns={c.stack: list((wrong_columns or {}).get(c.stack, [])) for c in measured
                                          if not exact(c)})
    if basis == NOT_RANKED:
        verdict.cells = [c for c, _ in table_ranks(measured)]
        return verdict
    exact_stacks = [c.stack for c in ranked if exact(c)]
    if per_round is not None:
        # a mixed table's stacks measured on their own (`sequential`, not in any round) are shown with their
        # figures but neither ranked nor compared: they were measured at another time, so no paired claim covers
        # them, and an interval of each alone would compare two moments of the machine, not two stacks
        reference = per_round_rps(in_rounds, "reference_unit_ns")
        inference = judge_table(per_round, reference, block_rounds=block_rounds, level=level, margin=margin,
                                horizon=horizon_of(in_rounds))
        order = inference.order()
        verdict.inference = inference
        verdict.cells = sorted(measured, key=lambda c: (c.stack not in per_round,
                                                        order.index(c.stack) if c.stack in per_round else 0,
                                                        -c.summary.rps.median))  # type: ignore[union-attr]
        verdict.rank_all = rank_labels(inference, order)
        verdict.rank_exact = rank_labels(inference, [s for s in order if s in exact_stacks])
        verdict.pairs = neighbour_pairs(inference, order)
        verdict.sequential = [c.stack for c in ranked if c.stack not in per_round]
        reasons = {c.summary.stop_reason for c in in_rounds if c.summary is not None}
        verdict.stop_reason = next(iter(reasons)) if len(reasons) == 1 else None
    else:
        verdict.cells = [c for c, _ in table_ranks(measured, in_field)]
        verdict.rank_all = _labels(table_ranks(measured, in_field))
        verdict.rank_exact = _labels(table_ranks(measured, in_exact_field))
    for c in measured:
        verdict.rank_all.setdefault(c.stack, UNRANKED)
        verdict.rank_exact.setdefault(c.stack, UNRANKED)
    compared = [c for c in ranked if c.stack not in verdict.sequential]
    if basis == BY_RPS and compared:
        exact_compared = [c.stack for c in compared if exact(c)]
        pool = exact_compared or [c.stack for c in compared]
        verdict.best = next(c.stack for c in verdict.cells if c.stack in pool)
        verdict.to_best = _ratios(per_round, verdict.best, compared, verdict.inference)
        if baseline is not None:
            verdict.baseline = baseline
            if baseline in {c.stack for c in compared}:
                verdict.to_baseline = _ratios(per_round, baseline, compared, verdict.inference)
            elif baseline in verdict.sequential:
                verdict.baseline_problem = f"baseline {baseline} was measured on its own, not in the rounds of this table"
            elif baseline in {c.stack for c in cells}:
                verdict.baseline_problem = f"baseline {baseline} was not measured validly in this table"
            else:
                verdict.baseline_problem = f"baseline {baseline} is not in this table"
    return verdict


def horizon_of(cells: Sequence[Cell]) -> set[str] | None:
    """The stacks of a table measured in rounds whose pairs get the final look (`CellSummary.final_look`); None
    for results from before it was recorded (their confidence sequences keep the whole error)."""
    if any(c.summary is None or c.summary.final_look is None for c in cells):
        return None
    return {c.stack for c in cells if c.summary.final_look}  # type: ignore[union-attr]


def wrong_columns_of(results: RunResults, workload: str) -> dict[str, list[str]]:
    """stack → its ❌ columns on `workload`, from the verification."""
    return {v.stack: v.wrong_columns for v in results.verifications if v.workload == workload and v.wrong_columns}


def baseline_of(results: RunResults) -> str | None:
    """The baseline stack the run was configured with (`--baseline`; `pgarena report --baseline` overrides it
    by rewriting the config it renders)."""
    value = results.config.get("baseline")
    return value if isinstance(value, str) and value else None


def run_verdicts(results: RunResults) -> dict[tuple, TableVerdict]:
    """Every table's verdict, keyed like `ranking.comparable_groups`."""
    baseline = baseline_of(results)
    level, margin = verdict_settings(results)
    seconds_per_window, _ = window_seconds(results)
    return {key: table_verdict(cells, baseline=baseline, wrong_columns=wrong_columns_of(results, key[0]),
                               level=level, margin=margin, block_rounds=block_rounds_of(results),
                               every_pair=every_pair_of(results), seconds_per_window=seconds_per_window or None)
            for key, cells in comparable_groups(results.cells).items()}


def window_seconds(results: RunResults) -> tuple[float, bool]:
    """The wall time of one window (seconds) and whether it was measured: the phases' measured slots
    (PhaseRecord.slot_seconds: re-warm, window, checks, bookkeeping) weighted by their windows, else the stored
    configuration's window plus its re-warm, which leaves out what happens between windows."""
    phases = [p for p in (results.schedule.phases if results.schedule is not None else [])
              if p.slot_seconds is not None and p.windows]
    if phases:
        return sum(p.slot_seconds * p.windows for p in phases) / sum(p.windows for p in phases), True  # type: ignore[operator]
    duration = float(results.config.get("duration_seconds") or 0.0)
    rewarm = results.schedule.rewarm_seconds if results.schedule is not None else None
    return duration + float(rewarm or 0.0), False


def every_pair_of(results: RunResults) -> bool:
    """Whether the run's rounds went on until every pair of a table was resolved (`resolve_every_pair`)."""
    return results.config.get("resolve_every_pair") is True


def verdict_settings(results: RunResults) -> tuple[float, float]:
    """(family-wise level, equivalence margin) the run was configured with (defaults for older runs)."""
    level = results.config.get("confidence_level")
    margin = results.config.get("equivalence_margin")
    return (level if isinstance(level, float) else DEFAULT_FAMILY_LEVEL,
            margin if isinstance(margin, float) else DEFAULT_EQUIVALENCE_MARGIN)


def block_rounds_of(results: RunResults) -> int | None:
    """The rounds per block of a run that restarted its stacks between blocks (`restart_every`; None: it did not)."""
    value = results.config.get("restart_every")
    return value if isinstance(value, int) and value > 0 else None
