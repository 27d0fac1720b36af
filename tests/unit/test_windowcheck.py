"""Per-window database accounting (windowcheck.py): the tolerance bounds and the verdicts."""

import pytest

from pgarena.contract.values import Verdict
from pgarena.db.accounting import StatementCounts
from pgarena.results.models import WindowAccounting
from pgarena.verify.windowcheck import (
    WINDOW_RELATIVE_TOLERANCE,
    cell_verdict,
    expected_bounds,
    judge_window,
    rows_per_request,
)

USERS_Q = "SELECT id, username, full_name, email, age, created_at FROM users ORDER BY id LIMIT $1"
TX_QS = [
    "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
    "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
    "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2",
    "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2",
    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
]


def test_bounds_low_side_is_every_2xx_answer_less_the_tolerance():
    # 1,000 answers of 1 statement: at least 990 calls (1 %), whatever the unknowns and in-flight requests
    low, high = expected_bounds(1, 1000, unknown=0, in_flight=0)
    assert (low, high) == (990, 1010)
    assert expected_bounds(1, 1000, unknown=50, in_flight=9)[0] == 990


def test_bounds_high_side_allows_unknown_outcomes_and_in_flight_requests():
    # tx: 5 statements for each of 200 answers, 10 timeouts, 4 connections + the sampler in flight
    low, high = expected_bounds(5, 200, unknown=10, in_flight=5)
    assert low == 990  # floor(5 × 200 × 0.99)
    assert high == 1086  # ceil(5 × (200 + 10 + 5) × 1.01)


def test_bounds_static_needs_no_statement_at_all():
    assert expected_bounds(0, 5000, unknown=3, in_flight=51) == (0, 0)


def test_bounds_never_negative_and_tolerance_is_one_percent():
    assert WINDOW_RELATIVE_TOLERANCE == 0.01
    assert expected_bounds(1, 0, unknown=0, in_flight=0) == (0, 0)


@pytest.mark.parametrize("workload, parameter, rows", [("users", 50, 50), ("perf-test", 10, 10), ("tx", None, 5),
                                                       ("graphql", None, 20), ("static", None, None)])
def test_rows_per_request(workload, parameter, rows):
    assert rows_per_request(workload, parameter) == rows


def _counts(calls: int, rows_each: int, extra: dict | None = None) -> StatementCounts:
    return StatementCounts({USERS_Q: (calls, calls * rows_each), **(extra or {})})


def test_a_window_whose_calls_match_its_answers_is_exact():
    before = _counts(100, 5, {"SELECT 1": (4, 4)})
    after = _counts(100 + 1003, 5, {"SELECT 1": (90, 90)})  # pings are not workload statements
    record = judge_window("users", 5, before, after, answered_2xx=1000, unknown=2, in_flight=5)
    assert record.verdict is Verdict.EXACT and record.reason is None
    assert record.workload_statement_calls == 1003 and record.workload_rows == 1003 * 5
    assert (record.expected_calls_low, record.expected_calls_high) == (990, 1018)


def test_a_window_served_from_a_cache_is_wrong():
    record = judge_window("users", 5, _counts(30, 5), _counts(35, 5), answered_2xx=4000, unknown=0, in_flight=5)
    assert record.verdict is Verdict.WRONG and "cache" in record.reason
    assert record.workload_statement_calls == 5 and record.expected_calls_low == 3960


def test_a_partial_cache_beyond_the_tolerance_is_wrong():
    # 2 % of the answers from memory: more than the 1 % allowed
    record = judge_window("users", 5, _counts(0, 5), _counts(980, 5), answered_2xx=1000, unknown=0, in_flight=0)
    assert record.verdict is Verdict.WRONG


def test_a_window_with_n_plus_one_queries_is_wrong():
    per_row = "SELECT full_name FROM users WHERE id = $1"
    after = _counts(1000, 5, {per_row: (5000, 5000)})
    record = judge_window("users", 5, StatementCounts({}), after, answered_2xx=1000, unknown=0, in_flight=5)
    assert record.verdict is Verdict.WRONG and "N+1" in record.reason


def test_timeouts_may_or_may_not_have_reached_the_database():
    # 100 requests timed out at the client; 60 of them still ran their statement
    record = judge_window("users", 5, _counts(0, 5), _counts(960, 5), answered_2xx=900, unknown=100, in_flight=5)
    assert record.verdict is Verdict.EXACT


def test_calls_without_their_rows_are_wrong():
    after = StatementCounts({USERS_Q: (1000, 1000)})  # the right number of queries, one row each
    record = judge_window("users", 5, StatementCounts({}), after, answered_2xx=1000, unknown=0, in_flight=0)
    assert record.verdict is Verdict.WRONG and "rows" in record.reason


def test_tx_counts_five_statements_per_answer():
    after = StatementCounts({q: (300, 300) for q in TX_QS} | {"BEGIN": (300, 0), "COMMIT": (300, 0)})
    record = judge_window("tx", None, StatementCounts({}), after, answered_2xx=300, unknown=0, in_flight=3)
    assert record.verdict is Verdict.EXACT and record.workload_statement_calls == 1500


def test_static_must_not_query_the_workload_tables():
    after = StatementCounts({USERS_Q: (10, 10)})
    record = judge_window("static", None, StatementCounts({}), after, answered_2xx=5000, unknown=0, in_flight=5)
    assert record.verdict is Verdict.WRONG


def _record(verdict: Verdict, reason: str | None = None) -> WindowAccounting:
    return WindowAccounting(answered_2xx=1, unknown_outcome=0, in_flight_allowance=0, statements_per_request=1,
                            workload_statement_calls=1, expected_calls_low=1, expected_calls_high=1, verdict=verdict,
                            reason=reason)


def test_cell_verdict_is_the_worst_window_with_the_first_wrong_reason():
    assert cell_verdict([]) == (None, None)
    assert cell_verdict([None, None]) == (None, None)
    assert cell_verdict([_record(Verdict.EXACT), _record(Verdict.EXACT)]) == (Verdict.EXACT, None)
    verdict, reason = cell_verdict([_record(Verdict.EXACT), _record(Verdict.WRONG, "cache"),
                                    _record(Verdict.WRONG, "later")])
    assert verdict is Verdict.WRONG and reason == "window 2: cache"
