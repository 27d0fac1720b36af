"""Independent ranks shared by the Markdown and HTML reports (report/verdicts.py adds the paired ranks of
interleaved runs and the two ranks side by side): throughput and efficiency, with ties where the confidence
intervals overlap, and no rank at all for cells that must not be ranked.

What a table ranks by depends on the load its cells were offered (`rank_basis`, docs/methodology.md,
"Open model"): closed-model tables rank answered work (2xx/s). Open-model tables at an absolute rate
offer every stack the same requests/s, so their RPS is about the offered rate; they rank p99 latency
(lower first; cells that dropped or failed more than 1 % are invalid and left out). Open-model tables at a
relative rate ('90%' of each stack's own peak) offer each stack a different load: they are not ranked.

Ranks are positions in the *field*: the measured, valid cells (no flags.INVALID flag) with an interval,
`noisy` ones included — a wide interval is ranked where it is clear of its neighbours and gets a range
("2–4") where it is not. `stats.rank_with_ties` over the field gives each cell every position it could
take. A field may be narrowed (`field=`): verdicts.py ranks once among the stacks whose answers are exact
and once among all. Every measured cell is listed, in median order; cells outside the field get "–".
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

from pgarena.contract.flags import DEMONSTRATION, INEXACT, INVALID
from pgarena.results.models import Cell
from pgarena.stats.intervals import confidence_interval, rank_with_ties

UNRANKED = "–"
BY_RPS, BY_P99, NOT_RANKED = "rps", "p99", "none"
"""What a table of comparable cells is ranked by (`rank_basis`)."""


def relative_rate(cell: Cell) -> bool:
    """An open-model cell whose rate is a share of its own stack's peak ('90%'): stacks got different loads."""
    return cell.model == "open" and (cell.arrival_rate_spec or "").endswith("%")


def level_group_label(cell: Cell) -> str:
    """The load level a cell is compared at: '50 VUs', '2,000 req/s', or "90 % of each stack's own peak"
    (a relative rate, whose req/s differs per stack)."""
    if relative_rate(cell):
        return f"{(cell.arrival_rate_spec or '').removesuffix('%')} % of each stack's own peak"
    return cell.level_label


def rank_basis(cells: Sequence[Cell]) -> str:
    """BY_RPS (closed model), BY_P99 (open model at a shared absolute rate) or NOT_RANKED (open model at
    a share of each stack's own peak) for one group of comparable cells."""
    if not cells or cells[0].model == "closed":
        return BY_RPS
    return NOT_RANKED if relative_rate(cells[0]) else BY_P99


def rankable(cell: Cell) -> bool:
    """Measured, valid and with an interval: it is ranked (a `noisy` cell too, with the range its interval
    allows). The same as `in_field`."""
    return in_field(cell)


def exact(cell: Cell) -> bool:
    """The cell's answers are exact (no flags.INEXACT flag such as `columns-wrong`)."""
    return not any(flag in INEXACT for flag in cell.flags)


def in_exact_field(cell: Cell) -> bool:
    """In the field and with exact answers: ranked among the stacks whose answers are exact."""
    return in_field(cell) and exact(cell)


def group_key(cell: Cell) -> tuple:
    """(workload, parameter, model, level, engine): what a cell's figure depends on besides its stack."""
    return (*cell.key[1:], cell.engine)


HEADLINE_MAX_VUS = 50
"""The headline table's closed-model level: the highest configured level up to this (seed 000's middle level)."""


def headline_key(cells: Sequence[Cell], workload_order: Sequence[str] | None = None) -> tuple | None:
    """The cell key (without the stack) of the run's first table, the one the reports show first: the first
    closed-model workload of the run's `workload_order` (its --workloads; None: the first cell's) that a stack
    serves, at its first parameter and the highest level up to HEADLINE_MAX_VUS (else the lowest). Taken from the
    order, not from the first cell: the stacks run in a shuffled order, and the first one may not serve the first
    workload (bench1, 2026-11-27: its headline was users because the first stack served no perf-test).

    NOTE: pipeline/interleaved.py measures this table first (it calls this with the run's workloads)."""
    closed = [c for c in cells if c.model == "closed"]
    if not closed:
        return None
    rank = {workload: i for i, workload in enumerate(workload_order or ())}
    first = min(closed, key=lambda c: rank.get(c.workload, len(rank)))  # the first-seen of the first workload
    same = [c for c in closed if (c.workload, c.parameter) == (first.workload, first.parameter)]
    levels = sorted({c.vus for c in same})
    vus = max((v for v in levels if v <= HEADLINE_MAX_VUS), default=levels[0])
    return next(c.key[1:] for c in same if c.vus == vus)


def comparable_groups(cells: Iterable[Cell]) -> dict[tuple, list[Cell]]:
    """Cells measured under the same conditions — workload, parameter, model and level (`Cell.key` without
    the stack; open-model levels by their configured spec: '2000' is the same 2,000 req/s for every
    stack, '90%' is 90 % of each stack's own peak, which `rank_basis` does not rank) and load generator —
    in first-seen order, keyed by `group_key`. Ranks are only ever computed within one group.

    NOTE: the engine is part of the group because oha and k6 measure different throughput against the same
    server (docs/methodology.md, "oha and k6 disagree"); cells of different engines never share a rank."""
    groups: dict[tuple, list[Cell]] = defaultdict(list)
    for cell in cells:
        groups[group_key(cell)].append(cell)
    return groups


def flagged_out(cell: Cell) -> bool:
    """A flag keeps the cell out of the ranking, whatever its figures (an invalid flag, a demonstration)."""
    return any(flag in INVALID or flag == DEMONSTRATION for flag in cell.flags)


def in_field(cell: Cell) -> bool:
    """Measured, valid and with an interval: it takes part in the ranking (noisy or not)."""
    s = cell.summary
    return cell.status == "ok" and s is not None and s.rps_interval is not None and not flagged_out(cell)


def out_of_field(cell: Cell) -> str | None:
    """Why a cell takes no part in the ranking (`in_field`), in a few words; None when it does."""
    if in_field(cell):
        return None
    flags = [f for f in cell.flags if f in INVALID or f == DEMONSTRATION]
    if flags:
        return ", ".join(flags)
    if cell.status != "ok":
        return cell.status
    windows = len(cell.repetitions)
    return f"no interval: {windows} window{'' if windows == 1 else 's'}" if cell.summary is not None else "not measured"


Field = Callable[[Cell], bool]
"""Which cells of a table take part in a ranking (`in_field`, or `in_exact_field`)."""


def throughput_ranks(cells: Sequence[Cell], field: Field = in_field) -> list[tuple[Cell, str]]:
    """Measured cells by median RPS (higher first) with tie-aware rank labels from the independent
    intervals ("–" outside the field)."""
    measured = [c for c in cells if c.summary is not None]
    labels = dict((id(c), label) for c, label in rank_with_ties(
        [(c, c.summary.rps_interval.low, c.summary.rps_interval.high, c.summary.rps.median)  # type: ignore[union-attr]
         for c in measured if field(c)]))
    ordered = sorted(measured, key=lambda c: -c.summary.rps.median)  # type: ignore[union-attr]
    return [(c, labels.get(id(c), UNRANKED)) for c in ordered]


def p99_interval(cell: Cell) -> tuple[float, float] | None:
    """The t-interval of the mean of the repetitions' p99 (ms); a p99 that is a lower bound (requests
    without an answer counted at the timeout) has no upper end. None with fewer than 2 repetitions."""
    values = [r.latency.p99_ms for r in cell.repetitions]
    if len(values) < 2:
        return None
    low, high = confidence_interval(values)
    if any("p99_ms" in r.latency.censored for r in cell.repetitions):
        high = math.inf
    return low, high


def latency_ranks(cells: Sequence[Cell], field: Field = in_field) -> list[tuple[Cell, str]]:
    """Measured cells by median p99 (lower first), ties where the p99 intervals overlap; invalid cells
    (dropped or failed > 1 %, ...), cells outside `field` and cells without an interval are listed with "–"."""
    measured = [c for c in cells if c.summary is not None]
    ranked = [c for c in measured if c.status == "ok" and p99_interval(c) is not None and field(c)
              and not any(flag in INVALID for flag in c.flags)]
    labels = dict((id(c), label) for c, label in rank_with_ties(
        [(c, -p99_interval(c)[1], -p99_interval(c)[0], -c.summary.latency_p99_ms.median)  # type: ignore[index,union-attr]
         for c in ranked]))
    ordered = sorted(measured, key=lambda c: (id(c) not in labels, c.summary.latency_p99_ms.median))  # type: ignore[union-attr]
    return [(c, labels.get(id(c), UNRANKED)) for c in ordered]


def table_ranks(cells: Sequence[Cell], field: Field = in_field) -> list[tuple[Cell, str]]:
    """The independent ranks of one group of comparable cells by its `rank_basis`: 2xx/s, p99, or none
    (every cell "–", listed by median 2xx/s)."""
    basis = rank_basis(cells)
    if basis == BY_P99:
        return latency_ranks(cells, field)
    ranked = throughput_ranks(cells, field)
    return ranked if basis == BY_RPS else [(c, UNRANKED) for c, _ in ranked]


def cost(cell: Cell) -> float | None:
    """CPU µs per request of the stack and PostgreSQL together."""
    s = cell.summary
    if s is None or s.stack_cpu_us_per_request is None or s.db_cpu_us_per_request is None:
        return None
    return s.stack_cpu_us_per_request + s.db_cpu_us_per_request


def efficiency_ranks(cells: Sequence[Cell]) -> list[tuple[Cell, str]]:
    """Measured cells by CPU µs per request (lower first), ties where the per-repetition intervals overlap.

    Valid cells with an interval are ranked (noise in RPS does not disqualify: CPU per request is the
    steadier figure); cells without CPU figures are left out. Open-model cells at a share of each
    stack's own peak are not ranked (different loads).
    """
    measured = [c for c in cells if cost(c) is not None]
    ranked = [c for c in measured if c.status == "ok" and c.summary.cpu_us_per_request_interval is not None  # type: ignore[union-attr]
              and not any(flag in INVALID for flag in c.flags) and not relative_rate(c)]
    # lower is better: rank the negated intervals
    labels = dict((id(c), label) for c, label in rank_with_ties(
        [(c, -c.summary.cpu_us_per_request_interval.high, -c.summary.cpu_us_per_request_interval.low,  # type: ignore[union-attr]
          -cost(c)) for c in ranked]))  # type: ignore[operator]
    ordered = sorted(measured, key=lambda c: (id(c) not in labels, cost(c)))
    return [(c, labels.get(id(c), UNRANKED)) for c in ordered]
