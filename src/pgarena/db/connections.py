"""Database connections a stack holds, observed in pg_stat_activity while it runs.

A background thread of pgarena's own process polls pg_stat_activity every POLL_INTERVAL_S and counts the
client backends of the stack's database role, leaving out pgarena's own connections (their
application_name is ADMIN_APPLICATION_NAME, and the poller's own backend). A stack behind pgbouncer is
counted the same way: the backends PostgreSQL sees are pgbouncer's server connections. The peak is kept
over the whole stack and per segment (`take_peak`), so a cell and each of its repetitions get their own
figure. A burst shorter than the poll interval can be missed; the figure is a lower bound of the true peak.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import psycopg

from pgarena.contract.flags import POOL_EXCEEDED

POLL_INTERVAL_S = 0.2
ADMIN_APPLICATION_NAME = "pgarena-admin"
"""application_name of every connection pgarena itself opens (postgres.Database.connect)."""

COUNT_SQL = """
SELECT count(*) FROM pg_stat_activity
WHERE backend_type = 'client backend' AND usename = %s AND pid <> pg_backend_pid()
  AND application_name IS DISTINCT FROM %s
"""
PORTS_SQL = """
SELECT client_port FROM pg_stat_activity
WHERE backend_type = 'client backend' AND usename = %s AND pid <> pg_backend_pid()
  AND application_name IS DISTINCT FROM %s
"""


class TreeDbPorts:
    """Local TCP ports of the connections that a process tree (its root's pid read at each call) holds to
    `db_port`: the `ports` of a `ConnectionPoller`.

    NOTE: with several stacks up at once (the interleaved schedule) they share pgarena's database role, so
    a role-wide count would add them up; matching pg_stat_activity's client_port with the ports the stack's
    own processes hold attributes each connection to its stack (pgbouncer's too: it is the stack's child).
    Read from the tree's own namespace's tables (procnet: --netns too) through a cache that rereads them only
    for sockets it has not seen: psutil's per-process `net_connections` read the whole table for each process of
    the tree (27 ms a read of a two-process tree, two reads a poll, five polls a second during every window)."""

    def __init__(self, root_pid: Callable[[], int | None], db_port: int) -> None:
        from pgarena.system.procnet import SocketCache

        self._root_pid, self._db_port, self._sockets = root_pid, db_port, SocketCache()

    def __call__(self) -> set[int]:
        pid = self._root_pid()
        if pid is None:
            return set()
        return {s.local_port for s in self._sockets.tree(pid) if s.remote_port == self._db_port}


class ConnectionPoller:
    """Polls the number of connections held by one database role for the duration of a `with` block.

    `peak` is the highest count seen since the block started; `take_peak()` returns the highest count
    seen since the previous call (or the start) and starts a new segment. Both are None when no poll
    succeeded (the database could not be reached); a failed poll never stops the run.
    """

    def __init__(self, admin_url: str, role: str, interval_s: float = POLL_INTERVAL_S,
                 ports: Callable[[], set[int]] | None = None, direct: bool = False) -> None:
        self._admin_url = admin_url
        self._role = role
        self._ports = ports
        """When given, only connections from these client ports count (one stack among several on the role)."""
        self._direct = direct
        """Count the stack's own connections (`ports()`) without pg_stat_activity: a stack behind a TCP proxy
        (--db-rtt) connects to the proxy, which opens exactly one server connection for each of its clients,
        so PostgreSQL sees the proxy's ports, not the stack's. A socket that never became a session counts here
        and not in pg_stat_activity (lib/pq 1.12.3 left its refused SSL attempt open: README, "On the wire")."""
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="pgarena-connections", daemon=True)
        self._conn: psycopg.Connection | None = None
        self.peak: int | None = None
        self._segment_peak: int | None = None
        self.error: str | None = None
        self.active = True
        """Polls only while True: a stack idle between its interleaved windows is not polled (each poll
        costs pgarena's own CPU, which shares the generator's CPUs)."""

    def _poll(self) -> None:
        with self._lock:
            try:
                if self._conn is None:
                    self._conn = psycopg.connect(self._admin_url, autocommit=True, connect_timeout=5,
                                                 application_name=ADMIN_APPLICATION_NAME)
                if self._direct and self._ports is not None:
                    row = (len(self._ports()),)
                elif self._ports is None:
                    row = self._conn.execute(COUNT_SQL, (self._role, ADMIN_APPLICATION_NAME)).fetchone()
                else:
                    # NOTE: the stack's ports are read before and after pg_stat_activity, and a connection counts
                    # if either read saw it: a connection opened per request lives a few milliseconds, and
                    # one read alone would miss those born or gone in between.
                    before = self._ports()
                    seen = self._conn.execute(PORTS_SQL, (self._role, ADMIN_APPLICATION_NAME)).fetchall()
                    mine = before | self._ports()
                    row = (sum(1 for (port,) in seen if port in mine),)
            except psycopg.Error as exc:
                self.error = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                if self._conn is not None:
                    self._conn.close()
                self._conn = None
                return
            count = int(row[0]) if row else 0
            self.peak = count if self.peak is None else max(self.peak, count)
            self._segment_peak = count if self._segment_peak is None else max(self._segment_peak, count)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            if self.active:
                self._poll()

    def take_peak(self, poll: bool = True) -> int | None:
        """The peak since the previous call (polled once more now, if active and `poll`); starts the next
        segment. Before a window, `poll=False` only starts it: a poll there would count for the segment it ends."""
        if self.active and poll:
            self._poll()
        with self._lock:
            peak, self._segment_peak = self._segment_peak, None
        return peak

    def __enter__(self) -> ConnectionPoller:
        if self.active:
            self._poll()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def pool_exceeded(peak: int | None, pool_size: int) -> bool:
    """A stack held more database connections than PGARENA_POOL_SIZE allowed (None: not observed)."""
    return peak is not None and peak > pool_size


def add_pool_flag(flags: list[str], peak: int | None, pool_size: int) -> None:
    """Append 'pool-exceeded' to a cell's or a stack's flags when its peak exceeded the pool size (once)."""
    if pool_exceeded(peak, pool_size) and POOL_EXCEEDED not in flags:
        flags.append(POOL_EXCEEDED)


PGARENA_CONNECTIONS = 5
"""Connections pgarena itself may hold at once besides one poller per stack that is up (verification,
accounting, the samplers' expected answers): kept free when the pools are checked against the database."""

LIMIT_SQL = """
SELECT name, setting::int FROM pg_settings
WHERE name IN ('max_connections', 'superuser_reserved_connections', 'reserved_connections')
"""


def connection_limit(conn: psycopg.Connection) -> tuple[int, int]:
    """(max_connections, the connections it reserves for superusers and, PostgreSQL 16+, for roles with
    pg_use_reserved_connections): an ordinary role such as the stacks' may open the difference."""
    settings = dict(conn.execute(LIMIT_SQL).fetchall())
    return settings["max_connections"], settings.get("superuser_reserved_connections", 0) + settings.get(
        "reserved_connections", 0)


def pools_refusal(max_connections: int, reserved: int, pool_size: int, stacks_together: int) -> str | None:
    """Why the database cannot hold the pools of the stacks that are up at once (with pgarena's own
    connections and one poller per stack), or None."""
    needed = stacks_together * (pool_size + 1) + PGARENA_CONNECTIONS
    usable = max_connections - reserved
    if needed <= usable:
        return None
    who = "one stack" if stacks_together == 1 else f"{stacks_together} stacks up together"
    return (f"--pool-size {pool_size} is larger than the database allows: {who} × {pool_size} connections, plus "
            f"pgarena's own, need {needed}, but max_connections {max_connections} leaves {usable} to ordinary roles "
            f"({reserved} reserved); use a smaller --pool-size or a server with a higher max_connections")


def split_pool(pool_size: int, workers: int) -> list[int]:
    """Each worker's share of `pool_size` connections: `pool_size // workers` each, the remainder given one
    by one to the first workers, so the shares add up to `pool_size` exactly ([4, 3, 3] for 10 over 3).
    With more workers than connections the later shares are 0 (a stack that forks one pool per worker is
    refused then: see `pool_refusal`)."""
    if pool_size < 1 or workers < 1:
        raise ValueError(f"pool size and workers must be at least 1 (got {pool_size} and {workers})")
    base, remainder = divmod(pool_size, workers)
    return [base + 1 if index < remainder else base for index in range(workers)]


def pool_refusal(pool_per_worker: bool, pool_size: int, workers: int) -> str | None:
    """Why a stack cannot run with this envelope, or None: a stack that forks one pool per worker needs at
    least one connection per worker, else its total would exceed PGARENA_POOL_SIZE."""
    if pool_per_worker and workers > pool_size:
        return (f"it forks one database pool per worker, so {workers} workers need at least {workers} connections "
                f"but the pool size is {pool_size}; pass --pool-size {workers} or more, or --workers {pool_size}")
    return None
