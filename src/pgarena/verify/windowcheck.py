"""Database accounting per measured window: did the load's answers really come from the database?

Verification's accounting (accounting.py) covers a 20-request burst before any load, so a stack that
answers that burst from the database and the generator from a cache would pass it. pgarena therefore
reads pg_stat_statements (the stacks' role, the stacks' database) right before and right after every
measured window and compares the workload's statement calls with that window's answers:

- every 2xx answer of the window — the generator's and pgarena's own sampler's (checks.py), which
  reaches the database like any other request — needs its statements (tx: 5 per answer), so
  `calls ≥ statements × answered_2xx × (1 − tolerance)`; fewer is a cache (❌);
- a request whose outcome is unknown (a timeout, a reset, a non-2xx answer) may or may not have run its
  statements, and requests given up by the client before the window may still run inside it (at most
  one per connection, plus the sampler's), so
  `calls ≤ statements × (answered_2xx + unknown + in_flight) × (1 + tolerance)`; more is an N+1 (❌).

The warm-up is a separate generator run before the first snapshot, so its requests never count. The
rows those statements returned or changed must also reach `rows × answered_2xx × (1 − tolerance)` (a
stack that queries but serves rows from elsewhere). graphql-nested / users-posts also need a statement
that reads the posts per answer and the rows of users + posts (accounting.nested_rows): a stack that
queries `users` and serves each user's posts from memory is a cache. The tolerance is the 1 % every cell allows for
failures (docs/methodology.md, "Database accounting per window").
"""

from __future__ import annotations

import math
import re

from pgarena.contract import workloads as wl
from pgarena.contract.values import Verdict, worst
from pgarena.db import accounting
from pgarena.db.accounting import StatementCounts
from pgarena.results.models import WindowAccounting

WINDOW_RELATIVE_TOLERANCE = 0.01
"""Allowed relative shortfall (or excess) of workload statement calls over one window."""
TX_ROWS_PER_REQUEST = 5
"""tx: 3 updates, 1 select and 1 insert touch one row each."""


def rows_per_request(workload: str, parameter: int | None) -> int | None:
    """Rows the workload statements of one request return or change (None: not checked)."""
    if workload == wl.TX:
        return TX_ROWS_PER_REQUEST
    if workload == wl.GRAPHQL:
        return wl.GRAPHQL_LIMIT
    if workload in (wl.PERF_TEST, wl.USERS):
        return parameter
    if workload in wl.SCENARIOS:
        return wl.expected_rows(workload, parameter)
    return None


def expected_bounds(statements_per_request: int, answered_2xx: int, unknown: int, in_flight: int,
                    tolerance: float = WINDOW_RELATIVE_TOLERANCE) -> tuple[int, int]:
    """(fewest, most) workload statement calls a window may show (see the module docstring)."""
    low = math.floor(statements_per_request * answered_2xx * (1 - tolerance))
    high = math.ceil(statements_per_request * (answered_2xx + unknown + in_flight) * (1 + tolerance))
    return max(low, 0), high


def judge_window(workload: str, parameter: int | None, before: StatementCounts, after: StatementCounts, *,
                 answered_2xx: int, unknown: int, in_flight: int, pattern: re.Pattern | None = None,
                 nested: accounting.NestedPatterns = accounting.DEFAULT_NESTED_PATTERNS) -> WindowAccounting:
    """The accounting record of one window from two pg_stat_statements readings and its answers (`nested`:
    what reads the posts and the users, for graphql-nested / users-posts)."""
    calls, rows, _, _ = accounting.split_calls(workload, before, after, pattern)
    posts_calls = posts_low = None
    rows_each = rows_per_request(workload, parameter)
    per_request = accounting.EXPECTED[workload][0]
    if workload in wl.NESTED_LISTS:
        # how many statements a nested answer costs is the stack's choice (1 join, 2 batched, 1 + N): every
        # answer costs at least one, and N+1 is shown by verification's probe, not made invalid here
        per_request = 1
    low, high = expected_bounds(per_request, answered_2xx, unknown, in_flight)
    if workload in wl.NESTED_LISTS:
        high = max(high, calls)
        posts_calls, joined_calls = accounting.split_posts(before, after, nested)
        posts_low = low
        rows_each = accounting.nested_rows(wl.NESTED_LIMIT, joined_calls > 0)
    rows_low = math.floor(rows_each * answered_2xx * (1 - WINDOW_RELATIVE_TOLERANCE)) if rows_each else None
    verdict, reason = Verdict.EXACT, None
    if calls < low:
        verdict = Verdict.WRONG
        reason = (f"{calls:,} workload statement calls for {answered_2xx:,} answers of 2xx "
                  f"(at least {low:,} expected): answers not from the database (a cache?)")
    elif calls > high:
        verdict = Verdict.WRONG
        reason = (f"{calls:,} workload statement calls for {answered_2xx:,} answers of 2xx, {unknown:,} of unknown "
                  f"outcome and ≤ {in_flight:,} in flight (at most {high:,} expected): more queries than the "
                  "workload needs (N+1?)")
    elif posts_calls is not None and posts_low is not None and posts_calls < posts_low:
        verdict = Verdict.WRONG
        reason = (f"{posts_calls:,} calls of statements reading posts for {answered_2xx:,} answers of 2xx "
                  f"(at least {posts_low:,} expected): posts not from the database (a cache?)")
    elif rows_low is not None and rows < rows_low:
        verdict = Verdict.WRONG
        reason = f"{rows:,} rows from the database for {answered_2xx:,} answers (at least {rows_low:,} expected)"
    return WindowAccounting(
        answered_2xx=answered_2xx, unknown_outcome=unknown, in_flight_allowance=in_flight,
        statements_per_request=per_request, workload_statement_calls=calls, expected_calls_low=low,
        expected_calls_high=high, workload_rows=rows, expected_rows_low=rows_low, posts_statement_calls=posts_calls,
        expected_posts_calls_low=posts_low, verdict=verdict, reason=reason)


def cell_verdict(records: list[WindowAccounting | None]) -> tuple[Verdict | None, str | None]:
    """The worst verdict over a cell's windows and the first wrong window's reason (None: not measured)."""
    measured = [r for r in records if r is not None]
    if not measured:
        return None, None
    verdict = Verdict.EXACT
    for record in measured:
        verdict = worst(verdict, record.verdict)
    reason = next((f"window {i + 1}: {r.reason}" for i, r in enumerate(records)
                   if r is not None and r.verdict is Verdict.WRONG), None)
    return verdict, reason
