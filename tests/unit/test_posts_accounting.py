"""Issue 22 item 1: graphql-nested / users-posts need the posts from the database, per window and in the probe.

A stack that queries `users` on every request and serves each user's posts from memory made one workload
statement per answer, which was all the checks asked for. Now a statement reading the posts is required per
answer, and the rows must be the users' and their posts' (or at least one per user from a statement that
reads both tables: a join, or a view that nests the posts, like rust-fraiseql's v_user).
"""

from __future__ import annotations

import re

import pytest

from pgarena.contract import workloads as wl
from pgarena.contract.values import Verdict
from pgarena.db.accounting import POSTS_OBJECT, USERS_OBJECT, StatementCounts, judge_nested, nested_rows
from pgarena.verify.windowcheck import judge_window

USERS_Q = "SELECT id, username FROM users ORDER BY id LIMIT $1"
BATCH_Q = "SELECT u.id, p.id, p.title FROM unnest($1::int[]) AS u(id) CROSS JOIN LATERAL (SELECT id, title FROM posts)"
ONE_Q = "SELECT id, title FROM posts WHERE user_id = $1 ORDER BY id LIMIT $2"
JOIN_Q = "SELECT u.id, u.username, p.id, p.title FROM users u JOIN posts p ON p.user_id = u.id"
VIEW_Q = "SELECT data FROM v_user ORDER BY id ASC LIMIT $1"
VIEW_PATTERNS = (re.compile(rf"(?:{POSTS_OBJECT.pattern})|\bv_user\b", re.I),
                 re.compile(rf"(?:{USERS_OBJECT.pattern})|\bv_user\b", re.I))
"""What accounting.nested_patterns reads from a database where the view v_user reads users and posts."""
ANSWERS = 100
USERS = wl.NESTED_LIMIT
POSTS = wl.NESTED_LIMIT * wl.NESTED_POSTS_LIMIT


def _window(after: dict, workload: str = "users-posts", **kw):
    return judge_window(workload, None, StatementCounts({}), StatementCounts(after), answered_2xx=ANSWERS,
                        unknown=0, in_flight=0, **kw)


@pytest.mark.parametrize("workload", wl.NESTED_LISTS)
def test_a_window_whose_posts_come_from_memory_is_a_cache(workload):
    record = _window({USERS_Q: (ANSWERS, ANSWERS * USERS)}, workload)
    assert record.verdict is Verdict.WRONG and "posts not from the database" in record.reason
    assert record.posts_statement_calls == 0 and record.expected_posts_calls_low == 99


def test_a_window_with_too_few_posts_rows_is_wrong():
    # every answer reads posts, but only one user's worth: 20 + 5 rows where 20 + 100 were needed
    record = _window({USERS_Q: (ANSWERS, ANSWERS * USERS), ONE_Q: (ANSWERS, ANSWERS * 5)})
    assert record.verdict is Verdict.WRONG and "rows" in record.reason
    assert record.expected_rows_low == int(ANSWERS * (USERS + POSTS) * 0.99)


@pytest.mark.parametrize("after", [
    {USERS_Q: (ANSWERS, ANSWERS * USERS), BATCH_Q: (ANSWERS, ANSWERS * POSTS)},  # batched
    {USERS_Q: (ANSWERS, ANSWERS * USERS), ONE_Q: (ANSWERS * USERS, ANSWERS * POSTS)},  # 1 + N
    {JOIN_Q: (ANSWERS, ANSWERS * POSTS)},  # one flat join
])
def test_a_window_reading_users_and_posts_is_exact(after):
    record = _window(after)
    assert record.verdict is Verdict.EXACT, record.reason


def test_a_view_nesting_the_posts_needs_one_row_per_user():
    exact = _window({VIEW_Q: (ANSWERS, ANSWERS * USERS)}, pattern=re.compile(r"\bv_user\b"), nested=VIEW_PATTERNS)
    short = _window({VIEW_Q: (ANSWERS, ANSWERS * 5)}, pattern=re.compile(r"\bv_user\b"), nested=VIEW_PATTERNS)
    assert exact.verdict is Verdict.EXACT and exact.posts_statement_calls == ANSWERS
    assert short.verdict is Verdict.WRONG and "rows" in short.reason


def test_nested_rows_are_users_plus_posts_or_one_per_user_when_joined():
    assert nested_rows(20, joined=False) == 20 + 20 * wl.NESTED_POSTS_LIMIT
    assert nested_rows(20, joined=True) == 20


def _probe(statements, requests: int = 10, patterns=None):
    counts = {}
    for limit in wl.NESTED_PROBE_LIMITS:
        after = {q: (calls(limit) * requests, rows(limit) * requests) for q, (calls, rows) in statements.items()}
        counts[limit] = (StatementCounts({}), StatementCounts(after))
    if patterns is None:
        return judge_nested("users-posts", counts, requests)
    return judge_nested("users-posts", counts, requests, re.compile(r"\bv_user\b"), patterns)


def test_the_probe_catches_a_posts_cache():
    result = _probe({USERS_Q: (lambda n: 1, lambda n: n)})
    assert result.verdict is Verdict.WRONG and "posts are not from the database" in result.reason
    assert result.posts_statements_by_limit == {5: 0.0, 20: 0.0}


def test_the_probe_catches_posts_rows_that_do_not_add_up():
    result = _probe({USERS_Q: (lambda n: 1, lambda n: n), BATCH_Q: (lambda n: 1, lambda n: 5)})
    assert result.verdict is Verdict.WRONG and "rows per request" in result.reason


def test_the_probe_accepts_batched_posts_and_a_view_over_both():
    batched = _probe({USERS_Q: (lambda n: 1, lambda n: n), BATCH_Q: (lambda n: 1, lambda n: 5 * n)})
    view = _probe({VIEW_Q: (lambda n: 1, lambda n: n)}, patterns=VIEW_PATTERNS)
    assert batched.verdict is Verdict.EXACT and batched.posts_statements_by_limit == {5: 1.0, 20: 1.0}
    assert view.verdict is Verdict.EXACT, view.reason
