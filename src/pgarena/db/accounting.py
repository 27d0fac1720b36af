"""Database-side accounting: did each request really reach the database, with the queries it needs?

Around a burst of N identical requests pgarena reads `pg_stat_statements` for the stacks' database
role and splits the statements into *workload statements* (those that name the workload's objects:
perf_test, users, pgbench_*) and *other statements* (BEGIN/COMMIT, SET, RESET, pool checks, ...).
Per request it then compares, with a stated tolerance (TechEmpower's verifier does the same with a
query count, here with bound parameters and per statement kind):

- workload statements < expected → the stack answered without querying: a cache (❌);
- workload statements > expected → more queries than the workload needs: an N+1 (❌);
- other statements > the workload's allowance → per-request overhead such as a `SET` or a reset (⚠️).

graphql-nested / users-posts also need, per request, a statement that reads the posts and the rows of the
users and their posts (nested_rows): a stack that queries `users` and serves the posts from memory is a
cache (❌), like one that queries nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import psycopg

from pgarena.contract import workloads as wl
from pgarena.contract.values import Verdict
from pgarena.db import namespace
from pgarena.db.postgres import Database
from pgarena.results.models import DbAccounting

NESTED_BATCHED = 2
"""graphql-nested / users-posts: users, then every user's posts in one query (a DataLoader, a batch mapping)."""
ACCOUNTING_REQUESTS = 20
"""Requests in one accounting burst."""
RELATIVE_TOLERANCE = 0.05
"""Allowed relative deviation of statements per request (pool warm-up, a connection opened once)."""

EXPECTED: dict[str, tuple[int, int]] = {
    wl.PERF_TEST: (1, 0),
    wl.USERS: (1, 0),
    wl.STATIC: (0, 0),
    wl.TX: (5, 2),
    wl.GRAPHQL: (1, 0),
    **{name: (1, 0) for name in wl.SCENARIOS},
    **{name: (NESTED_BATCHED, 0) for name in wl.NESTED_LISTS},
}
"""Per request: (workload statements, allowed other statements). tx: 5 statements + BEGIN/COMMIT.
graphql-nested / users-posts: the count is the stack's choice (1 join, 2 batched, 1 + N unbatched); the
lower bound 1 is what every request must cost, and one of its statements must read the posts (see
measure_nested)."""

OBJECTS: dict[str, re.Pattern] = {
    wl.PERF_TEST: re.compile(r"\bperf_test\b", re.I),
    wl.USERS: re.compile(r"\busers\b", re.I),
    wl.STATIC: re.compile(r"\b(perf_\w+|users|pgbench_\w+)\b", re.I),
    wl.TX: re.compile(r"\bpgbench_(accounts|tellers|branches|history)\b", re.I),
    wl.GRAPHQL: re.compile(r"\busers\b", re.I),
    wl.PERF_MINIMAL: re.compile(r"\bperf_minimal\b", re.I),
    wl.PERF_POST: re.compile(r"\bperf_post\b", re.I),
    wl.PERF_NESTED: re.compile(r"\bperf_nested\b", re.I),
    wl.PERF_LARGE_PAYLOAD: re.compile(r"\bperf_large_payload\b", re.I),
    wl.PERF_MANY_PARAMS: re.compile(r"\bperf_many_params\b", re.I),
    **{name: re.compile(r"\b(users|posts)\b", re.I) for name in wl.NESTED_LISTS},
}
"""What makes a statement a workload statement (static: any workload object at all)."""

TABLES: dict[str, tuple[str, ...]] = {wl.USERS: ("users",), wl.GRAPHQL: ("users",),
                                      **{name: ("users", "posts") for name in wl.NESTED_LISTS}}
"""The tables a workload reads: a stack may read them through views of its own (FraiseQL's v_user)."""
VIEWS_SQL = """
WITH RECURSIVE deps(oid) AS (
    SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = %s AND c.relname = ANY(%s)
  UNION
    SELECT r.ev_class FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid JOIN deps ON d.refobjid = deps.oid
    WHERE d.classid = 'pg_rewrite'::regclass AND r.ev_class <> deps.oid
)
SELECT DISTINCT c.relname FROM pg_class c JOIN deps ON deps.oid = c.oid WHERE c.relkind IN ('v', 'm')
"""
"""Every view (or materialized view) that reads the given tables of schema pgarena, through other views too."""


POSTS_OBJECT = re.compile(r"\bposts\b", re.I)
"""graphql-nested / users-posts: a statement naming this reads the posts (a join of both tables included)."""
USERS_OBJECT = re.compile(r"\busers\b", re.I)
"""graphql-nested / users-posts: a statement naming this reads the users."""


def _widened(db: Database, base: re.Pattern, tables: tuple[str, ...]) -> re.Pattern:
    """`base`, widened by the views that read `tables` now (a stack that reads `users` through a view of its
    own still queries the table on every request)."""
    try:
        with db.connect_stats() as conn:
            names = sorted(row[0] for row in conn.execute(VIEWS_SQL, (namespace.SCHEMA, list(tables))))
    except psycopg.Error:
        return base
    if not names:
        return base
    return re.compile(f"(?:{base.pattern})|\\b(?:{'|'.join(re.escape(n) for n in names)})\\b", re.I)


def object_pattern(db: Database, workload: str) -> re.Pattern:
    """OBJECTS[workload], widened by the views that read the workload's tables now."""
    tables = TABLES.get(workload)
    return _widened(db, OBJECTS[workload], tables) if tables else OBJECTS[workload]


NestedPatterns = tuple[re.Pattern, re.Pattern]
"""(reads posts, reads users): what makes a nested-list statement read each table (views included)."""
DEFAULT_NESTED_PATTERNS: NestedPatterns = (POSTS_OBJECT, USERS_OBJECT)
"""The nested patterns without views (the tables named directly)."""


def nested_patterns(db: Database) -> NestedPatterns:
    """(reads posts, reads users) of graphql-nested / users-posts, each widened by the views reading it."""
    return _widened(db, POSTS_OBJECT, ("posts",)), _widened(db, USERS_OBJECT, ("users",))


@dataclass(frozen=True)
class StatementCounts:
    """pg_stat_statements of the stacks' role at one moment: query text → (calls, rows)."""

    by_query: dict[str, tuple[int, int]]


ENABLE_HINT = ("pass --admin-database-url with a superuser or a member of pg_read_all_stats, on a server with "
               "pg_stat_statements in shared_preload_libraries and CREATE EXTENSION pg_stat_statements done")
"""How a user of --database-url turns database accounting on (shown wherever it is unavailable)."""


def available(db: Database) -> str | None:
    """None if accounting works on this database, else why not and how to enable it."""
    with db.connect_stats() as conn:
        reader, database, privileged = conn.execute(
            "SELECT current_user, current_database(), "
            "rolsuper OR pg_has_role(current_user, 'pg_read_all_stats', 'USAGE') "
            "FROM pg_roles WHERE rolname = current_user").fetchone()
        if reader == db.user:
            return ("the stacks and pgarena use the same database role, so their statements cannot be told "
                    f"apart; {ENABLE_HINT}")
        if not conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'").fetchone():
            return f"pg_stat_statements is not installed in database {database}; {ENABLE_HINT}"
        if not privileged:
            return f"role {reader} cannot read other roles' statements in pg_stat_statements; {ENABLE_HINT}"
    return None


def read_counts(db: Database) -> StatementCounts:
    """Current calls and rows per statement of the stacks' role in the stacks' database."""
    with db.connect_stats() as conn:
        rows = conn.execute(
            "SELECT s.query, sum(s.calls)::bigint, sum(s.rows)::bigint FROM pg_stat_statements s "
            "JOIN pg_roles r ON r.oid = s.userid JOIN pg_database d ON d.oid = s.dbid "
            "WHERE r.rolname = %s AND d.datname = %s GROUP BY s.query",
            [db.user, db.name],
        ).fetchall()
    return StatementCounts({query: (int(calls), int(nrows)) for query, calls, nrows in rows})


def split_calls(workload: str, before: StatementCounts, after: StatementCounts,
                pattern: re.Pattern | None = None) -> tuple[int, int, int, dict[str, int]]:
    """(workload statement calls, their rows, other statement calls, other query text → calls) between two
    readings; a workload statement is one naming the workload's objects (`pattern`, default OBJECTS)."""
    pattern = pattern or OBJECTS[workload]
    workload_calls = workload_rows = other_calls = 0
    others: dict[str, int] = {}
    for query, (calls, nrows) in after.by_query.items():
        old_calls, old_rows = before.by_query.get(query, (0, 0))
        delta = calls - old_calls
        if delta <= 0:
            continue
        if pattern.search(query):
            workload_calls += delta
            workload_rows += nrows - old_rows
        else:
            other_calls += delta
            others[" ".join(query.split())[:80]] = delta
    return workload_calls, workload_rows, other_calls, others


def split_posts(before: StatementCounts, after: StatementCounts,
                patterns: NestedPatterns = DEFAULT_NESTED_PATTERNS) -> tuple[int, int]:
    """graphql-nested / users-posts between two readings: (calls of statements that read the posts, calls of
    those that read the users too — a join, or a view that nests each user's posts)."""
    posts, users = patterns
    posts_calls = joined_calls = 0
    for query, (calls, _) in after.by_query.items():
        delta = calls - before.by_query.get(query, (0, 0))[0]
        if delta > 0 and posts.search(query):
            posts_calls += delta
            joined_calls += delta if users.search(query) else 0
    return posts_calls, joined_calls


def nested_rows(users: int, joined: bool) -> int:
    """Rows one graphql-nested / users-posts answer of `users` users must take from the database: the users and
    their posts (wl.NESTED_POSTS_LIMIT each) when they come from separate statements (batched or 1 + N); at
    least one row per user when one statement reads both tables (it may return the posts nested per user)."""
    return users if joined else users * (1 + wl.NESTED_POSTS_LIMIT)


def judge(workload: str, before: StatementCounts, after: StatementCounts, requests: int,
          rows_per_request: int | None, pattern: re.Pattern | None = None) -> DbAccounting:
    """Statements and rows per request over a burst, with a verdict and its reason."""
    expected_calls, allowed_other = EXPECTED[workload]
    workload_calls, workload_rows, other_calls, others = split_calls(workload, before, after, pattern)
    per_request = workload_calls / requests
    other_per_request = other_calls / requests
    rows = workload_rows / requests if workload_calls else 0.0
    tolerance = RELATIVE_TOLERANCE * max(expected_calls, 1)
    verdict, reason = Verdict.EXACT, None
    if per_request < expected_calls - tolerance:
        verdict = Verdict.WRONG
        reason = f"{per_request:.2f} workload statements per request, expected {expected_calls}: answers not from the database (a cache?)"
    elif per_request > expected_calls + tolerance:
        verdict = Verdict.WRONG
        reason = f"{per_request:.2f} workload statements per request, expected {expected_calls} (N+1?)"
    elif rows_per_request is not None and workload_calls and abs(rows - rows_per_request) > RELATIVE_TOLERANCE * rows_per_request:
        verdict = Verdict.WRONG
        reason = f"{rows:.1f} rows per request from the database, expected {rows_per_request}"
    elif other_per_request > allowed_other + RELATIVE_TOLERANCE * max(allowed_other, 1):
        verdict = Verdict.EQUIVALENT
        top = sorted(others.items(), key=lambda item: -item[1])[:3]
        reason = (f"{other_per_request:.2f} other statements per request (allowed {allowed_other}): "
                  + "; ".join(f"{q} ×{n}" for q, n in top))
    return DbAccounting(
        requests=requests,
        workload_statements_per_request=round(per_request, 3),
        rows_per_request=round(rows, 3),
        other_statements_per_request=round(other_per_request, 3),
        expected_statements_per_request=expected_calls,
        allowed_other_statements_per_request=allowed_other,
        top_other_statements=dict(sorted(others.items(), key=lambda item: -item[1])[:5]),
        verdict=verdict,
        reason=reason,
    )


def measure(db: Database, workload: str, send: Callable[[int], None], requests: int = ACCOUNTING_REQUESTS,
            rows_per_request: int | None = None) -> DbAccounting:
    """Send `requests` requests through `send(i)` and account for them."""
    before = read_counts(db)
    for index in range(requests):
        send(index)
    return judge(workload, before, read_counts(db), requests, rows_per_request, object_pattern(db, workload))


NESTED_PROBE_REQUESTS = 10
"""Requests per users limit of the N+1 probe."""


def judge_nested(workload: str, counts: dict[int, tuple[StatementCounts, StatementCounts]],
                 requests: int, pattern: re.Pattern | None = None,
                 patterns: NestedPatterns = DEFAULT_NESTED_PATTERNS) -> DbAccounting:
    """graphql-nested / users-posts over the N+1 probe: `counts` maps each users limit to the readings
    around its burst. At every limit each request needs at least 1 workload statement, at least 1 statement
    that reads the posts, and its rows (nested_rows: users + posts, ±5 %; at least one per user from a
    statement that reads both); else the answers, or their posts, are not from the database (❌). A count
    that grows with the limit by at least one statement per extra user's worth is N+1: ⚠️ with the counts,
    never ❌ — it is the stack's honest behaviour (issue 13)."""
    limits = sorted(counts)
    per_limit: dict[int, float] = {}
    posts_per_limit: dict[int, float] = {}
    other_calls = 0
    others: dict[str, int] = {}
    rows = 0.0
    wrong_rows: str | None = None
    for limit in limits:
        calls, nrows, other, tops = split_calls(workload, *counts[limit], pattern)
        posts_calls, joined_calls = split_posts(*counts[limit], patterns)
        per_limit[limit] = round(calls / requests, 3)
        posts_per_limit[limit] = round(posts_calls / requests, 3)
        other_calls += other
        for query, n in tops.items():
            others[query] = others.get(query, 0) + n
        rows = nrows / requests if calls else 0.0
        expected = nested_rows(limit, joined_calls > 0)
        short = rows < expected * (1 - RELATIVE_TOLERANCE)
        if wrong_rows is None and (short or (not joined_calls and rows > expected * (1 + RELATIVE_TOLERANCE))):
            wrong_rows = (f"{rows:.1f} rows per request from the database at limit {limit}, expected "
                          + (f"at least {expected} (one per user)" if joined_calls else
                             f"{expected} ({limit} users + {limit * wl.NESTED_POSTS_LIMIT} posts)"))
    low, high = limits[0], limits[-1]
    other_per_request = other_calls / (requests * len(limits))
    grows = per_limit[high] - per_limit[low] >= 0.5 * (high - low)
    verdict, reason = Verdict.EXACT, None
    if min(per_limit.values()) < 1 - RELATIVE_TOLERANCE:
        verdict = Verdict.WRONG
        reason = (f"{min(per_limit.values()):.2f} workload statements per request: answers not from the database "
                  "(a cache?)")
    elif min(posts_per_limit.values()) < 1 - RELATIVE_TOLERANCE:
        verdict = Verdict.WRONG
        reason = (f"{min(posts_per_limit.values()):.2f} statements reading posts per request: the posts are not "
                  "from the database (a cache?)")
    elif wrong_rows:
        verdict, reason = Verdict.WRONG, wrong_rows
    elif grows:
        verdict = Verdict.EQUIVALENT
        reason = ("N+1: " + ", ".join(f"{per_limit[limit]:g} statements per request at limit {limit}"
                                       for limit in limits) + " — one query per user")
    elif other_per_request > RELATIVE_TOLERANCE:
        verdict = Verdict.EQUIVALENT
        top = sorted(others.items(), key=lambda item: -item[1])[:3]
        reason = f"{other_per_request:.2f} other statements per request: " + "; ".join(f"{q} ×{n}" for q, n in top)
    return DbAccounting(
        requests=requests * len(limits),
        workload_statements_per_request=per_limit[high],
        rows_per_request=round(rows, 3),
        other_statements_per_request=round(other_per_request, 3),
        expected_statements_per_request=NESTED_BATCHED,
        allowed_other_statements_per_request=0,
        top_other_statements=dict(sorted(others.items(), key=lambda item: -item[1])[:5]),
        verdict=verdict,
        reason=reason,
        statements_by_limit=per_limit,
        posts_statements_by_limit=posts_per_limit,
        n_plus_one=grows,
    )


def measure_nested(db: Database, workload: str, send: Callable[[int, int], None],
                   requests: int = NESTED_PROBE_REQUESTS) -> DbAccounting:
    """The N+1 probe: `requests` requests at each users limit of wl.NESTED_PROBE_LIMITS through
    `send(limit, i)`, accounted per limit."""
    counts = {}
    for limit in wl.NESTED_PROBE_LIMITS:
        before = read_counts(db)
        for index in range(requests):
            send(limit, index)
        counts[limit] = (before, read_counts(db))
    return judge_nested(workload, counts, requests, object_pattern(db, workload), nested_patterns(db))
