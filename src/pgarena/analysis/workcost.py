"""What each kind of work costs a stack: its throughput on every scenario relative to its own perf-minimal.

perf-minimal is the smallest round trip a stack can make (routing, one row, no table); every other
scenario adds one kind of work to it (a request body, nested JSON, a large response, many query
parameters, perf-test's 23 typed columns). Dividing a stack's 2xx/s on a scenario by its own perf-minimal
2xx/s at the same load level and generator gives a figure about the stack alone: 0.40× means that work
leaves it 40 % of its minimal throughput. Only valid cells count (an invalid one has no figure), and
ratios are of medians: they describe, they do not rank.
"""

from __future__ import annotations

from dataclasses import dataclass

from pgarena.analysis.ranking import in_field
from pgarena.contract import workloads as wl
from pgarena.results.models import Cell, RunResults

WORK_ORDER = (wl.PERF_TEST, wl.PERF_POST, wl.PERF_NESTED, wl.PERF_LARGE_PAYLOAD, wl.PERF_MANY_PARAMS)
"""The scenarios compared with perf-minimal, in the order the table lists them."""


@dataclass(frozen=True)
class WorkCost:
    """One stack at one load level: its perf-minimal 2xx/s and each scenario's share of it."""

    stack: str
    vus: int
    engine: str
    minimal_rps: float
    shares: dict[tuple[str, int | None], float]
    """(workload, parameter) → median 2xx/s on it / median 2xx/s on perf-minimal."""


def _median_rps(cell: Cell) -> float | None:
    return cell.summary.rps.median if cell.summary is not None and cell.summary.rps.median > 0 else None


def work_costs(results: RunResults) -> tuple[list[tuple[str, int | None]], list[WorkCost]]:
    """(the (workload, parameter) columns measured, one WorkCost per stack × level × engine that measured
    perf-minimal validly and at least one other scenario there)."""
    closed = [c for c in results.cells if c.model == "closed" and c.status == "ok" and in_field(c)]
    minimal = {(c.stack, c.vus, c.engine): rps for c in closed
               if c.workload == wl.PERF_MINIMAL and (rps := _median_rps(c)) is not None}
    columns = sorted({(c.workload, c.parameter) for c in closed if c.workload in WORK_ORDER},
                     key=lambda k: (WORK_ORDER.index(k[0]), k[1] or 0))
    rows = []
    for (stack, vus, engine), base in minimal.items():
        shares = {(c.workload, c.parameter): rps / base for c in closed
                  if (c.stack, c.vus, c.engine) == (stack, vus, engine) and c.workload in WORK_ORDER
                  and (rps := _median_rps(c)) is not None}
        if shares:
            rows.append(WorkCost(stack, vus, engine, base, shares))
    rows.sort(key=lambda r: (r.engine, r.vus, -r.minimal_rps))
    return columns, rows


def column_label(workload: str, parameter: int | None) -> str:
    """`perf-post records=100` style label of one column."""
    name = wl.PARAMETER_NAMES.get(workload)
    return workload if parameter is None or name is None else f"{workload} {name}={parameter}"
