"""Database accounting on crafted pg_stat_statements deltas: a cache, an N+1, extra statements."""

import pytest

from pgarena.contract.values import Verdict
from pgarena.db.accounting import StatementCounts, judge

USERS_Q = "SELECT id, username, full_name, email, age, created_at FROM users ORDER BY id LIMIT $1"
PERF_Q = "SELECT * FROM perf_test($1, $2, $3)"
TX_QS = [
    "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
    "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
    "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2",
    "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2",
    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
]


def delta(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]):
    return StatementCounts(before), StatementCounts(after)


def test_one_query_per_request_is_exact():
    before, after = delta({USERS_Q: (7, 140)}, {USERS_Q: (27, 540), "SELECT 1": (3, 3)})
    result = judge("users", StatementCounts({**before.by_query, "SELECT 1": (3, 3)}), after, 20, rows_per_request=20)
    assert result.verdict is Verdict.EXACT
    assert result.workload_statements_per_request == 1 and result.rows_per_request == 20


def test_a_cache_is_caught():
    before, after = delta({USERS_Q: (5, 100)}, {USERS_Q: (6, 120)})  # 20 requests, 1 query
    result = judge("users", before, after, 20, rows_per_request=20)
    assert result.verdict is Verdict.WRONG and "cache" in result.reason


def test_n_plus_one_is_caught():
    per_row = "SELECT full_name FROM users WHERE id = $1"
    before, after = delta({USERS_Q: (0, 0)}, {USERS_Q: (20, 400), per_row: (400, 400)})
    result = judge("users", before, after, 20, rows_per_request=20)
    assert result.verdict is Verdict.WRONG and "N+1" in result.reason
    assert result.workload_statements_per_request == 21


def test_a_per_request_set_is_flagged_but_not_wrong():
    before, after = delta({}, {PERF_Q: (20, 20), "SET search_path TO public": (20, 0)})
    result = judge("perf-test", before, after, 20, rows_per_request=1)
    assert result.verdict is Verdict.EQUIVALENT
    assert "SET search_path" in result.reason and result.other_statements_per_request == 1


def test_tx_allows_begin_and_commit_only():
    tx_after = {q: (20, 20) for q in TX_QS}
    ok = judge("tx", StatementCounts({}), StatementCounts({**tx_after, "BEGIN": (20, 0), "COMMIT": (20, 0)}), 20,
               rows_per_request=5)
    assert ok.verdict is Verdict.EXACT and ok.workload_statements_per_request == 5
    extra = judge("tx", StatementCounts({}),
                  StatementCounts({**tx_after, "BEGIN": (20, 0), "COMMIT": (20, 0), "RESET ALL": (20, 0)}), 20,
                  rows_per_request=5)
    assert extra.verdict is Verdict.EQUIVALENT and "RESET ALL" in extra.reason


def test_wrong_row_count_is_caught():
    before, after = delta({}, {USERS_Q: (20, 200)})  # 10 rows per request where 20 were asked
    result = judge("users", before, after, 20, rows_per_request=20)
    assert result.verdict is Verdict.WRONG and "rows per request" in result.reason


def test_static_touching_the_database_is_wrong():
    result = judge("static", StatementCounts({}), StatementCounts({USERS_Q: (20, 20)}), 20, rows_per_request=None)
    assert result.verdict is Verdict.WRONG


@pytest.mark.parametrize("calls,verdict", [(20, Verdict.EXACT), (21, Verdict.EXACT), (22, Verdict.WRONG)])
def test_tolerance_is_five_percent(calls, verdict):
    result = judge("users", StatementCounts({}), StatementCounts({USERS_Q: (calls, calls * 20)}), 20,
                   rows_per_request=20)
    assert result.verdict is verdict
