"""The same start line for every stack: a shuffled, seeded stack order and a levelled database.

Stacks run one after another on one database, so whatever the previous stack left behind (dead tuples
of its tx cells, WAL not yet checkpointed, stale planner statistics) would weigh on the next. Before
each stack pgarena runs VACUUM (ANALYZE) on the workload tables and a CHECKPOINT, as the admin user.
Whatever order is left still favours some stack somehow (a warmer page cache, a longer-running
machine), so the order is shuffled with a seed that is stored in the config (`--seed` repeats it).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

import psycopg

from pgarena.db.postgres import Database

WORKLOAD_TABLES = ("users", "pgbench_accounts", "pgbench_tellers", "pgbench_branches", "pgbench_history")
"""The tables pgarena's workloads read and write; only these are vacuumed (never the user's other tables)."""

T = TypeVar("T")


def new_seed() -> int:
    """A fresh random seed for the stack order (recorded, so the order can be repeated)."""
    return random.SystemRandom().randrange(2**31)


def shuffled(items: Sequence[T], seed: int | None) -> list[T]:
    """`items` in the order a `random.Random(seed)` shuffle gives (unchanged when seed is None)."""
    order = list(items)
    if seed is not None:
        random.Random(seed).shuffle(order)
    return order


def level_database(db: Database) -> str:
    """VACUUM (ANALYZE) the workload tables that exist, then CHECKPOINT; return what was done, or why not
    (a role that may not CHECKPOINT on an external server: the run goes on, the stack records the reason)."""
    done = []
    try:
        with db.connect() as conn:
            present = [t for t in WORKLOAD_TABLES
                       if conn.execute("SELECT to_regclass(%s)", (t,)).fetchone()[0] is not None]  # type: ignore[index]
            if present:
                conn.execute(f"VACUUM (ANALYZE) {', '.join(present)}")
                done.append(f"VACUUM (ANALYZE) {', '.join(present)}")
            conn.execute("CHECKPOINT")
            done.append("CHECKPOINT")
    except psycopg.Error as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return "; ".join([*done, f"not levelled: {message}"])
    return "; ".join(done)
