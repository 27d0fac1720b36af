"""How each stack's throughput falls as the database's round trip grows (--db-rtt, issue 14).

For every stack × workload × parameter × closed level × engine (× pool size, where the run measured several)
measured at two or more round trips, its median 2xx/s at each round trip and the share of its figure at the
smallest one (1.00 = unaffected). Only valid cells count. Ratios of medians describe; the ranks and paired ratios between stacks at one round
trip are in the results tables, which treat each round trip as its own table.
"""

from __future__ import annotations

from dataclasses import dataclass

from pgarena.analysis.ranking import in_field
from pgarena.results.models import RunResults


@dataclass(frozen=True)
class RttRow:
    stack: str
    workload: str
    parameter: int | None
    vus: int
    engine: str
    rps: dict[float, float]
    """round trip (ms) → median 2xx/s."""
    pool_size: int | None = None
    """The pool size of the series where the run measured several (--pool-size 10,50), else None."""

    def share(self, rtt: float) -> float | None:
        """2xx/s at `rtt` over 2xx/s at the smallest round trip measured."""
        base = self.rps[min(self.rps)]
        return self.rps[rtt] / base if rtt in self.rps and base > 0 else None


def rtt_rows(results: RunResults) -> tuple[list[float], list[RttRow]]:
    """(every round trip measured, one row per series with at least two of them)."""
    series: dict[tuple, dict[float, float]] = {}
    for cell in results.cells:
        if cell.db_rtt_ms is None or cell.model != "closed" or not in_field(cell) or cell.summary is None:
            continue
        key = (cell.stack, cell.workload, cell.parameter, cell.vus, cell.engine, cell.pool_dimension)
        series.setdefault(key, {})[cell.db_rtt_ms] = cell.summary.rps.median
    rows = [RttRow(*key[:5], rps=dict(sorted(values.items())), pool_size=key[5])
            for key, values in series.items() if len(values) >= 2]
    rows.sort(key=lambda r: (r.workload, r.parameter or 0, r.engine, r.vus, r.pool_size or 0, -r.rps[min(r.rps)]))
    return sorted({rtt for r in rows for rtt in r.rps}), rows
