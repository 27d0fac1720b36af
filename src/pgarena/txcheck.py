"""TPC-B consistency of the tx workload: every 200 answer is exactly one committed transaction.

Around a cell pgarena takes a snapshot of the sums that each transaction changes by the same delta
(accounts, tellers, branches, history) and of the history's row count. Afterwards the four sums must
have moved by the same amount and the history must have gained exactly one row per 200 answer: a
lost write, a half-applied transaction or a duplicated write breaks one of these equalities.
"""

from __future__ import annotations

from dataclasses import dataclass

from pgarena.postgres import Database
from pgarena.results import TxInvariants


@dataclass(frozen=True)
class TxSnapshot:
    """Sums of the pgbench tables at one moment."""

    accounts_sum: int
    tellers_sum: int
    branches_sum: int
    history_delta_sum: int
    history_rows: int


def snapshot(db: Database) -> TxSnapshot:
    """Read the sums in one consistent snapshot (one REPEATABLE READ transaction)."""
    with db.connect() as conn:
        with conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            row = conn.execute(
                "SELECT (SELECT coalesce(sum(abalance), 0) FROM pgbench_accounts),"
                " (SELECT coalesce(sum(tbalance), 0) FROM pgbench_tellers),"
                " (SELECT coalesce(sum(bbalance), 0) FROM pgbench_branches),"
                " (SELECT coalesce(sum(delta), 0) FROM pgbench_history),"
                " (SELECT count(*) FROM pgbench_history)"
            ).fetchone()
    return TxSnapshot(*(int(v) for v in row))


def check(before: TxSnapshot, after: TxSnapshot, answered_200: int) -> TxInvariants:
    """Compare the changes between two snapshots with the number of 200 answers in between."""
    accounts = after.accounts_sum - before.accounts_sum
    tellers = after.tellers_sum - before.tellers_sum
    branches = after.branches_sum - before.branches_sum
    history = after.history_delta_sum - before.history_delta_sum
    rows = after.history_rows - before.history_rows
    problems = []
    if not accounts == tellers == branches == history:
        problems.append(
            f"balance changes disagree: accounts {accounts:+}, tellers {tellers:+}, branches {branches:+}, "
            f"history deltas {history:+}"
        )
    if rows != answered_200:
        kind = "lost" if rows < answered_200 else "extra"
        problems.append(f"history gained {rows} rows for {answered_200} answers of 200 ({abs(rows - answered_200)} {kind})")
    return TxInvariants(
        holds=not problems,
        answered_200=answered_200,
        history_rows_added=rows,
        accounts_delta=accounts,
        tellers_delta=tellers,
        branches_delta=branches,
        history_delta=history,
        problem="; ".join(problems) or None,
    )
