"""Do two runs agree on the ranking? Checked only where the ranking claims an order.

Within each table of a run (workload × parameter × load level × engine), two stacks are ordered the way the report
ranks them (report/verdicts.py): both cells valid with an interval (report.ranking.in_field; noisy cells
and cells with ❌ columns included), and
- when both were measured in interleaved rounds, the paired interval of their ratio excludes 1;
- otherwise (a sequential run, or a stack that fell back to sequential), the intervals of the figure the table ranks by do not overlap: 2xx/s, or p99 latency for
  open-model tables at a rate shared by every stack.
Tables at a share of each stack's own peak rank nothing and are skipped. For every
pair of stacks ordered in *both* runs, the order must be the same; a pair ordered in one run only is a
tie in the other, which is not a contradiction. Two runs of the same stacks a minute apart should
therefore never disagree — a disagreement means an interval was too optimistic. Tables are matched by
their engine as well: a pair measured with oha in one run and with k6 in the other is not compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

from pgarena.analysis.paired import paired_ratio
from pgarena.analysis.ranking import BY_P99, NOT_RANKED, comparable_groups, in_field, p99_interval, rank_basis
from pgarena.analysis.verdicts import PerRound, has_rounds, per_round_rps
from pgarena.results.models import Cell, RunResults


@dataclass
class RankAgreement:
    ordered_in_both: int = 0
    ordered_in_one: int = 0
    disagreements: list[str] = field(default_factory=list)

    @property
    def agree(self) -> int:
        return self.ordered_in_both - len(self.disagreements)

    def summary(self) -> str:
        """'Ranking: 14 stack pairs ordered in both runs, 14 agree, 0 disagree (3 ordered in one run only).'"""
        return (f"Ranking: {self.ordered_in_both} stack pair(s) ordered in both runs (as each report ranks them: "
                f"paired ratio or own intervals): "
                f"{self.agree} agree, {len(self.disagreements)} disagree; {self.ordered_in_one} ordered in one "
                "run only (a tie in the other).")


def _order(x: Cell, y: Cell, per_round: PerRound | None = None) -> int:
    """+1 when x is surely better, -1 when surely worse, 0 when the report cannot order them: the paired
    ratio of their per-round 2xx/s (interleaved tables), else the overlap of their intervals — higher
    2xx/s, or (open model at a shared rate) lower p99."""
    if per_round is not None and x.stack in per_round and y.stack in per_round:
        ratio = paired_ratio(per_round[x.stack], per_round[y.stack])
        relation = None if ratio is None else ratio.relation
        return 1 if relation == "above" else -1 if relation == "below" else 0
    if x.model == "open" and rank_basis([x]) == BY_P99:
        px, py = p99_interval(x), p99_interval(y)
        if px is None or py is None:
            return 0
        return 1 if px[1] < py[0] else -1 if py[1] < px[0] else 0
    ix, iy = x.summary.rps_interval, y.summary.rps_interval  # type: ignore[union-attr]
    assert ix is not None and iy is not None
    if ix.low > iy.high:
        return 1
    if iy.low > ix.high:
        return -1
    return 0


def _tables(results: RunResults) -> dict[tuple, tuple[dict[str, Cell], PerRound | None]]:
    """Per ranked table: its valid cells by stack, and their per-round 2xx/s when it was paired."""
    tables = {}
    for key, cells in comparable_groups(results.cells).items():
        basis = rank_basis(cells)
        if basis == NOT_RANKED:
            continue
        field = [c for c in cells if in_field(c)]
        in_rounds = [c for c in field if has_rounds(c)] if basis != BY_P99 else []
        tables[key] = ({c.stack: c for c in field}, per_round_rps(in_rounds) if len(in_rounds) >= 2 else None)
    return tables


def ranking_agreement(a: RunResults, b: RunResults) -> RankAgreement:
    """Compare the orders the two runs establish, pair by pair, table by table."""
    result = RankAgreement()
    tables_b = _tables(b)
    for key, (cells_a, rounds_a) in _tables(a).items():
        cells_b, rounds_b = tables_b.get(key, ({}, None))
        common = sorted(set(cells_a) & set(cells_b))
        for x, y in combinations(common, 2):
            oa = _order(cells_a[x], cells_a[y], rounds_a)
            ob = _order(cells_b[x], cells_b[y], rounds_b)
            if oa and ob:
                result.ordered_in_both += 1
                if oa != ob:
                    workload, parameter, _, level, engine = key
                    where = f"{workload}{'' if parameter is None else f' {parameter}'} @ {level} ({engine})"
                    faster_a, faster_b = (x, y) if oa > 0 else (y, x), (x, y) if ob > 0 else (y, x)  # better
                    result.disagreements.append(f"{where}: A has {faster_a[0]} above {faster_a[1]}, "
                                                f"B has {faster_b[0]} above {faster_b[1]}")
            elif oa or ob:
                result.ordered_in_one += 1
    return result
