"""The TPC-B invariant checker on crafted snapshots: consistent runs pass, lost and duplicated writes fail."""

import pytest

from pgarena.txcheck import TxSnapshot, check

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
