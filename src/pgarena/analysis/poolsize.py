"""How each stack's throughput changes with its pool size (--pool-size 10,50, issue 14).

For every stack × workload × parameter × closed-model level × engine × database round trip measured at two
or more pool sizes: at each pool size the cell's median 2xx/s with the 95 % interval of its mean, and the
most database connections the stack was seen holding during the cell (`Cell.peak_connections`, polled every
0.2 s). A figure is given only where the stack stayed within the pool it was started with: a stack that held
more did not run at that pool size (the cell is `pool-exceeded`, invalid like every INVALID flag), so the
table says what it held instead. Then the figure at the largest pool size over the one at the smallest,
with its 95 % interval: each pool size is its own start of the stack, measured at another time, so the
interval is Welch's on the logs of each window's 2xx/s (stats.welch_log_ratio, as analysis/restgraphql.py
does), not the paired interval of the rankings (those compare stacks within one pool size, in the results
tables). Ratios describe one stack; they do not rank.
"""

from __future__ import annotations

from dataclasses import dataclass

from pgarena.contract.flags import INVALID, POOL_EXCEEDED
from pgarena.results.models import Cell, RunResults
from pgarena.stats.intervals import welch_log_ratio


@dataclass(frozen=True)
class PoolPoint:
    """One stack's cell at one pool size."""

    pool_size: int
    rps: float | None
    """Median 2xx/s over the windows; None: no valid figure (see `problem`)."""
    low: float | None
    high: float | None
    """The 95 % interval of the mean 2xx/s (None: fewer than two windows, or no figure)."""
    peak_connections: int | None
    """Most connections the stack held during the cell (None: not observed)."""
    problem: str | None
    """Why there is no figure: 'pool-exceeded', another invalid flag, or 'failed: <why>'."""
    windows: tuple[float, ...] = ()
    """Each measured window's 2xx/s (the ratio's samples)."""

    @property
    def within_pool(self) -> bool | None:
        """The stack held at most its pool size (None: its connections were not observed)."""
        return None if self.peak_connections is None else self.peak_connections <= self.pool_size


@dataclass(frozen=True)
class PoolRow:
    """One stack at one workload, parameter, level, engine and round trip, at each pool size measured."""

    stack: str
    workload: str
    parameter: int | None
    vus: int
    engine: str
    db_rtt_ms: float | None
    points: dict[int, PoolPoint]
    """pool size → its point, in increasing pool size."""
    ratio: tuple[float, float, float] | None
    """(ratio, low, high): the largest pool size's 2xx/s over the smallest's (None: either has no figure or
    fewer than two windows)."""


def pool_point(cell: Cell) -> PoolPoint:
    """A cell as the pool-size table shows it."""
    pool = cell.pool_size or 0
    s = cell.summary
    if cell.status != "ok" or s is None:
        return PoolPoint(pool, None, None, None, cell.peak_connections, f"failed: {cell.error or 'no measurement'}")
    invalid = [flag for flag in cell.flags if flag in INVALID]
    if invalid:
        problem = POOL_EXCEEDED if POOL_EXCEEDED in invalid else ", ".join(invalid)
        return PoolPoint(pool, None, None, None, cell.peak_connections, problem)
    interval = s.rps_interval
    return PoolPoint(pool, s.rps.median, interval.low if interval else None, interval.high if interval else None,
                     cell.peak_connections, None, tuple(r.rps for r in cell.repetitions))


def pool_rows(results: RunResults) -> tuple[list[int], list[PoolRow]]:
    """(every pool size measured, one row per series measured at two or more of them), by workload,
    parameter, engine, level, round trip and the stack's figure at the smallest pool size (highest first)."""
    series: dict[tuple, dict[int, Cell]] = {}
    for cell in results.cells:
        if cell.pool_dimension is None or cell.model != "closed":
            continue
        key = (cell.stack, cell.workload, cell.parameter, cell.vus, cell.engine, cell.db_rtt_ms)
        series.setdefault(key, {})[cell.pool_dimension] = cell
    rows = []
    for key, cells in series.items():
        if len(cells) < 2:
            continue
        points = {pool: pool_point(cells[pool]) for pool in sorted(cells)}
        smallest, largest = points[min(points)], points[max(points)]
        ratio = (welch_log_ratio(largest.windows, smallest.windows)
                 if smallest.rps is not None and largest.rps is not None else None)
        rows.append(PoolRow(*key, points=points, ratio=ratio))

    def order(row: PoolRow) -> tuple:
        first = row.points[min(row.points)].rps
        return (row.workload, row.parameter or 0, row.engine, row.vus, row.db_rtt_ms or 0.0,
                -(first if first is not None else -1.0), row.stack)

    rows.sort(key=order)
    return sorted({pool for r in rows for pool in r.points}), rows
