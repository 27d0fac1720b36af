"""Faults a resilience run injects into PostgreSQL (issue 14): a restart, the stack's connections
terminated, the server stalled. (A connection reset by the network is a Toxiproxy toxic: pipeline/resilience.)

Each function returns when the fault is over (the restart done, the backends gone, the stall released), so the
caller's clock reads the fault's start and end around it.
"""

from __future__ import annotations

import signal
import time

import psutil

from pgarena.db.connections import ADMIN_APPLICATION_NAME
from pgarena.db.postgres import Database, PostgresError

TERMINATE_SQL = """
SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE backend_type = 'client backend' AND usename = %s AND pid <> pg_backend_pid()
  AND application_name IS DISTINCT FROM %s
"""


def unavailable(db: Database, fault: str) -> str | None:
    """Why `fault` cannot be injected into this database (None: it can)."""
    if fault in ("pg-restart", "stall") and not db.managed:
        return "needs the managed database (pgarena does not restart or stop a server it was handed)"
    if fault == "pg-restart" and db.restart is None:
        return "the database cannot be restarted from here"
    return None


def restart(db: Database) -> int:
    """`pg_ctl restart -m fast`: every connection is closed, the server is down until it is back."""
    if db.restart is None:
        raise PostgresError("the database cannot be restarted from here")
    return db.restart()


def terminate_backends(db: Database) -> int:
    """pg_terminate_backend on every backend of the stacks' role (pgarena's own excepted); how many."""
    with db.connect() as conn:
        return int(conn.execute(TERMINATE_SQL, (db.user, ADMIN_APPLICATION_NAME)).fetchone()[0])


def stall(db: Database, seconds: float) -> int:
    """SIGSTOP the postmaster and every process of the server for `seconds`, then SIGCONT them (always): the
    database accepts TCP connections (the kernel's backlog) but answers nothing. How many processes."""
    if db.data_dir is None:
        raise PostgresError("the database's processes are not known here")
    pid = int((db.data_dir / "postmaster.pid").read_text().splitlines()[0])
    root = psutil.Process(pid)
    processes = [root, *root.children(recursive=True)]
    stopped = []
    try:
        for process in processes:
            try:
                process.send_signal(signal.SIGSTOP)
                stopped.append(process)
            except psutil.Error:
                continue
        time.sleep(seconds)
    finally:
        for process in stopped:
            try:
                process.send_signal(signal.SIGCONT)
            except psutil.Error:
                continue
    return len(stopped)
