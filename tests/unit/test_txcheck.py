"""The TPC-B invariant checker on crafted snapshots: consistent runs pass, lost and duplicated writes fail."""

import pytest

from pgarena.verify.txcheck import TxSnapshot, check

BEFORE = TxSnapshot(accounts_sum=100, tellers_sum=100, branches_sum=100, history_delta_sum=100, history_rows=50)


def after(delta: int, rows: int, **overrides: int) -> TxSnapshot:
    values = dict(accounts_sum=100 + delta, tellers_sum=100 + delta, branches_sum=100 + delta,
                  history_delta_sum=100 + delta, history_rows=50 + rows)
    values.update({key: 100 + value for key, value in overrides.items()})
    return TxSnapshot(**values)


def test_consistent_cell_holds():
    result = check(BEFORE, after(-1234, 30), answered_200=30)
    assert result.holds and result.problem is None
    assert (result.accounts_delta, result.history_rows_added, result.answered_200) == (-1234, 30, 30)


def test_lost_write_is_caught():
    # 30 answers of 200, but one transaction never happened: sums agree, the history is one row short
    result = check(BEFORE, after(-1000, 29), answered_200=30)
    assert not result.holds and "1 lost" in result.problem


def test_duplicated_write_is_caught():
    # a retried transaction applied twice: one more history row than answers of 200
    result = check(BEFORE, after(500, 31), answered_200=30)
    assert not result.holds and "1 extra" in result.problem


def test_half_applied_transaction_is_caught():
    # the account moved but the teller did not (no transaction around the statements)
    result = check(BEFORE, after(700, 30, tellers_sum=650), answered_200=30)
    assert not result.holds
    assert "balance changes disagree" in result.problem and "tellers +650" in result.problem


@pytest.mark.parametrize("field", ["accounts_sum", "branches_sum", "history_delta_sum"])
def test_any_disagreeing_sum_breaks_the_invariant(field):
    result = check(BEFORE, after(10, 1, **{field: 11}), answered_200=1)
    assert not result.holds


def test_timed_out_requests_may_have_committed_without_blaming_the_stack():
    # 30 answers of 200 and 3 client timeouts; 2 of the timed-out transactions committed anyway
    result = check(BEFORE, after(-900, 32), answered_200=30, unknown_outcome=3)
    assert result.holds and result.problem is None
    assert (result.unknown_outcome, result.unknown_committed) == (3, 2)
    # before the fix the same window read "2 extra" and failed the stack
    assert not check(BEFORE, after(-900, 32), answered_200=30).holds


def test_more_rows_than_answers_and_unknown_outcomes_is_still_extra():
    result = check(BEFORE, after(-900, 34), answered_200=30, unknown_outcome=3)
    assert not result.holds and "1 extra" in result.problem and "3 requests of unknown outcome" in result.problem


def test_unknown_outcomes_never_excuse_a_lost_write_or_disagreeing_sums():
    assert "1 lost" in check(BEFORE, after(-900, 29), answered_200=30, unknown_outcome=5).problem
    assert not check(BEFORE, after(-900, 31, tellers_sum=5), answered_200=30, unknown_outcome=5).holds


def test_per_window_changes_add_up():
    from pgarena.verify.txcheck import ZERO, add

    total = add(ZERO, BEFORE, after(-100, 5))
    total = add(total, after(-100, 5), after(-300, 12))
    assert total == TxSnapshot(-300, -300, -300, -300, 12)
    assert check(ZERO, total, answered_200=12).holds
