"""REST against GraphQL on one stack: the same data over both transports, measured side by side (issue 13).

Seed 002 *projected* FraiseQL's REST direct path at +15 % requests/s and −14 % p99 against its GraphQL path
(users(limit: 20) { id username fullName }, 50 connections) without measuring it. For every stack that
serves both workloads of a pair (contract.workloads.REST_GRAPHQL_PAIRS: users?limit=20 / graphql, and
users-posts / graphql-nested) this module sets the two valid closed-model cells at the same load level and
generator side by side and gives REST / GraphQL with a 95 % interval for throughput and p99. The two cells
were measured at different times (not in the same rounds), so the interval is Welch's on the log of each
window's figure (stats.welch_log_ratio), not the paired one of a ranking.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from pgarena.analysis.ranking import in_field
from pgarena.contract import workloads as wl
from pgarena.contract.flags import INEXACT
from pgarena.results.models import Cell, RunResults
from pgarena.stats.intervals import welch_log_ratio

SEED_002_PROJECTION = {"rps": 1.15, "p99": 0.86}
"""Seed 002's projected REST direct / GraphQL: ~+15 % requests/s, ~−14 % p99 (never measured there)."""


@dataclass(frozen=True)
class Side:
    """One transport's cell: geometric means over its windows (CPU and RSS: the cell's summary)."""

    workload: str
    rps: float
    p50_ms: float
    p99_ms: float
    cpu_us_per_request: float | None
    rss_peak_bytes: int | None
    flags: tuple[str, ...] = ()
    """The cell's flags.INEXACT flags (its answers are not all exact: `columns-wrong`, `content-type-wrong`,
    `answer-mapped`): measured like any other cell, ranked among all stacks only."""


@dataclass(frozen=True)
class RestGraphqlPair:
    """REST and GraphQL of one stack at one load level, and REST / GraphQL with intervals (None: fewer than
    two windows on a side)."""

    stack: str
    vus: int
    engine: str
    rest: Side
    graphql: Side
    rps_ratio: tuple[float, float, float] | None
    p99_ratio: tuple[float, float, float] | None


def _geometric_mean(values: list[float]) -> float:
    positive = [v for v in values if v > 0]
    return statistics.geometric_mean(positive) if positive else 0.0


def _side(cell: Cell) -> Side:
    """The cell's figures as the ratios use them: geometric means over its windows (so a figure and the ratio
    beside it agree: the ratio of two geometric means is the centre of Welch's interval on the logs)."""
    s = cell.summary
    assert s is not None
    reps = cell.repetitions
    return Side(cell.workload, _geometric_mean([r.rps for r in reps]),
                _geometric_mean([r.latency.p50_ms for r in reps]), _geometric_mean([r.latency.p99_ms for r in reps]),
                s.stack_cpu_us_per_request, s.stack_rss_peak_bytes, tuple(f for f in cell.flags if f in INEXACT))


def rest_graphql_pairs(results: RunResults) -> list[RestGraphqlPair]:
    """Every (stack, level, engine) that has a valid cell of both workloads of a pair."""
    cells = {(c.stack, c.workload, c.parameter, c.vus, c.engine): c for c in results.cells
             if c.model == "closed" and in_field(c) and c.repetitions}
    pairs = []
    for (stack, workload, parameter, vus, engine), rest in cells.items():
        for rest_workload, rest_parameter, graphql_workload in wl.REST_GRAPHQL_PAIRS:
            if (workload, parameter) != (rest_workload, rest_parameter):
                continue
            graphql = cells.get((stack, graphql_workload, None, vus, engine))
            if graphql is None:
                continue
            pairs.append(RestGraphqlPair(
                stack, vus, engine, _side(rest), _side(graphql),
                welch_log_ratio([r.rps for r in rest.repetitions], [r.rps for r in graphql.repetitions]),
                welch_log_ratio([r.latency.p99_ms for r in rest.repetitions],
                                [r.latency.p99_ms for r in graphql.repetitions])))
    pairs.sort(key=lambda p: (p.graphql.workload, p.engine, p.vus, p.stack))
    return pairs


def change(ratio: tuple[float, float, float] | None) -> str:
    """'+15.2 % (+9.8 to +20.9 %)' for a REST / GraphQL ratio with its interval; 'n/a' without one."""
    if ratio is None:
        return "n/a (one window)"
    mid, low, high = ratio
    return f"{mid - 1:+.1%} ({low - 1:+.1%} to {high - 1:+.1%})"


def nested_statements(results: RunResults) -> list[tuple[str, str, dict[int, float], bool]]:
    """(stack, workload, statements per request by users limit, N+1) from verification's probe."""
    rows = []
    for v in results.verifications:
        a = v.accounting
        if v.workload in wl.NESTED_LISTS and a is not None and a.statements_by_limit:
            rows.append((v.stack, v.workload, dict(sorted(a.statements_by_limit.items())), bool(a.n_plus_one)))
    return sorted(rows, key=lambda r: (r[1], r[0]))
