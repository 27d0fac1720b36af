"""How the reports order and group cells: the workloads' order (every section of both reports), families
(workload × parameter × the run's conditions: the HTML report's tables and charts), load levels in order, and
each cell's marks, RPS interval and latency medians."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from pgarena.analysis.ranking import level_group_label
from pgarena.contract.flags import INEXACT, INVALID, NOISY
from pgarena.contract.workloads import GRAPHQL, GRAPHQL_NESTED, PERF_TEST, SCENARIOS, STATIC, TX, USERS, USERS_POSTS
from pgarena.results.models import Cell

WORKLOAD_ORDER = (PERF_TEST, *SCENARIOS, USERS, GRAPHQL, USERS_POSTS, GRAPHQL_NESTED, STATIC, TX)
"""The order workloads appear in, in every section of both reports."""


def cell_marks(cell: Cell) -> list[str]:
    """Why a cell is shown apart: 'failed' (no figures), 'invalid' (an INVALID flag: not ranked), 'inexact'
    (❌ columns: ranked among all stacks only), 'noisy' (a wide interval: ranked where it is clear)."""
    if cell.summary is None or cell.status == "failed":
        return ["failed"]
    marks = []
    if any(flag in INVALID for flag in cell.flags):
        marks.append("invalid")
    if any(flag in INEXACT for flag in cell.flags):
        marks.append("inexact")
    if cell.summary.noisy or NOISY in cell.flags:
        marks.append("noisy")
    return marks


def rps_bounds(cell: Cell) -> tuple[float, float, str]:
    """The cell's RPS interval (low, high, what it is): the confidence interval, else the repetitions' range."""
    s = cell.summary
    assert s is not None
    if s.rps_interval is not None:
        return s.rps_interval.low, s.rps_interval.high, f"{s.rps_interval.level:.0%} CI"
    return s.rps.min, s.rps.max, "range"


def latency_medians(cell: Cell) -> dict[str, float] | None:
    """Median over the repetitions of each latency percentile (ms); None without repetitions."""
    reps = cell.repetitions
    if not reps:
        return None
    return {name: statistics.median(getattr(r.latency, f"{name}_ms") for r in reps)
            for name in ("avg", "p50", "p90", "p95", "p99", "max")}


def level_sort_key(cell: Cell) -> tuple[int, float]:
    """Closed-model levels by VUs, then open-model levels by arrival rate."""
    return (0, cell.vus) if cell.model == "closed" else (1, cell.arrival_rate or 0.0)


def parameter_label(workload: str, parameter_name: str | None, parameter: int | None) -> str:
    """'1 row', 'limit 20', '' (static, tx)."""
    if parameter is None:
        return ""
    if parameter_name == "rows":
        return f"{parameter} row{'s' if parameter != 1 else ''}"
    return f"{parameter_name or 'parameter'} {parameter}"


@dataclass
class Family:
    """The cells of one workload × parameter, at every load level (closed and open) — and, in a run with
    several pool sizes or database round trips, at one of them (each pool size and each round trip is its
    own family: its own table, headline rows and charts, as in the Markdown's tables)."""

    workload: str
    parameter_name: str | None
    parameter: int | None
    cells: list[Cell] = field(default_factory=list)
    pool_size: int | None = None
    """The cells' pool size where the run measured several (`Cell.pool_dimension`), else None."""
    db_rtt_ms: float | None = None
    """The round trip (ms) added between the stacks and PostgreSQL (--db-rtt), else None (direct)."""

    @property
    def title(self) -> str:
        """'perf-test · 1 row', with the round trip and pool size where the run measured several."""
        label = parameter_label(self.workload, self.parameter_name, self.parameter)
        title = f"{self.workload} · {label}" if label else self.workload
        title += "" if self.db_rtt_ms is None else f" · database {self.db_rtt_ms:g} ms away"
        return title if self.pool_size is None else f"{title} · pool size {self.pool_size}"

    @property
    def slug(self) -> str:
        """The family's part of chart ids: 'perf-test-rows-1', '-rtt5ms', '-pool10' where they apply."""
        parts = (self.workload, self.parameter_name, self.parameter,
                 None if self.db_rtt_ms is None else f"rtt{self.db_rtt_ms:g}ms".replace(".", "_"),
                 None if self.pool_size is None else f"pool{self.pool_size}")
        return "-".join(str(p) for p in parts if p is not None)

    def levels(self) -> list[Cell]:
        """One cell per load level (the first seen), in level order."""
        seen: dict[tuple, Cell] = {}
        for cell in sorted(self.cells, key=level_sort_key):
            seen.setdefault((cell.model, level_group_label(cell)), cell)
        return list(seen.values())


def families(cells: Iterable[Cell]) -> list[Family]:
    """Cells grouped by workload × parameter (× pool size and × database round trip, where the run measured
    several: the conditions `Cell.key` holds besides stack and level), in report order."""
    groups: dict[tuple, Family] = {}
    for cell in cells:
        key = (cell.workload, cell.parameter_name, cell.parameter, cell.pool_dimension, cell.db_rtt_ms)
        groups.setdefault(key, Family(*key[:3], pool_size=key[3], db_rtt_ms=key[4])).cells.append(cell)

    def order(f: Family) -> tuple:
        w = WORKLOAD_ORDER.index(f.workload) if f.workload in WORKLOAD_ORDER else len(WORKLOAD_ORDER)
        return (w, f.workload, f.parameter if f.parameter is not None else -1, f.pool_size or 0, f.db_rtt_ms or 0.0)

    return sorted(groups.values(), key=order)
