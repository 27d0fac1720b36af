"""TPC-B consistency of the tx workload: every 200 answer is exactly one committed transaction.

Around a cell pgarena takes a snapshot of the sums that each transaction changes by the same delta
(accounts, tellers, branches, history) and of the history's row count. Afterwards the four sums must
have moved by the same amount and the history must have gained exactly one row per 200 answer: a
lost write, a half-applied transaction or a duplicated write breaks one of these equalities.

NOTE: a request that got no answer at all (a client timeout, a connection reset) has an *unknown
outcome*: the stack may have committed it before the client gave up. The balance sums must still agree
exactly (a committed transaction moves all four by the same delta), but the history may hold up to one
extra row per unknown outcome without blaming the stack; the report says how many there were and how many
of them committed. Requests answered with a non-2xx status are the stack's word that nothing was written:
a history row for one of those is an extra write.
"""

from __future__ import annotations

from dataclasses import dataclass

from pgarena.db.postgres import Database
from pgarena.results.models import TxInvariants


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


ZERO = TxSnapshot(0, 0, 0, 0, 0)
"""The origin for summing per-window changes (see `add`)."""


def add(total: TxSnapshot, before: TxSnapshot, after: TxSnapshot) -> TxSnapshot:
    """`total` plus the changes between two snapshots: per-window changes of one cell whose windows were
    measured between other stacks' windows (interleaved rounds) add up to the cell's changes."""
    return TxSnapshot(*(t + (a - b) for t, b, a in zip(
        (total.accounts_sum, total.tellers_sum, total.branches_sum, total.history_delta_sum, total.history_rows),
        (before.accounts_sum, before.tellers_sum, before.branches_sum, before.history_delta_sum, before.history_rows),
        (after.accounts_sum, after.tellers_sum, after.branches_sum, after.history_delta_sum, after.history_rows))))


def check(before: TxSnapshot, after: TxSnapshot, answered_200: int, unknown_outcome: int = 0) -> TxInvariants:
    """Compare the changes between two snapshots with the number of 200 answers in between, allowing up to
    `unknown_outcome` extra history rows for requests that got no answer (timeouts, resets)."""
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
    if rows < answered_200:
        problems.append(f"history gained {rows} rows for {answered_200} answers of 200 ({answered_200 - rows} lost)")
    elif rows > answered_200 + unknown_outcome:
        extra = rows - answered_200 - unknown_outcome
        problems.append(f"history gained {rows} rows for {answered_200} answers of 200"
                        + (f" and {unknown_outcome} requests of unknown outcome" if unknown_outcome else "")
                        + f" ({extra} extra)")
    return TxInvariants(
        holds=not problems,
        answered_200=answered_200,
        history_rows_added=rows,
        accounts_delta=accounts,
        tellers_delta=tellers,
        branches_delta=branches,
        history_delta=history,
        unknown_outcome=unknown_outcome,
        unknown_committed=max(0, min(rows - answered_200, unknown_outcome)),
        problem="; ".join(problems) or None,
    )
