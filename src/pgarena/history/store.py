"""The history store: SQLite in the results folder by default, PostgreSQL when the user names one.

One table, `pgarena_history`, one row per point (history/points.py), keyed by run, the stack's id in the run and cell; recording
a run again replaces its rows, so re-recording is harmless. Both backends speak DB-API: sqlite3 from the
standard library, psycopg (already pgarena's driver) for a `postgresql://` URL — imported only then.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import astuple, fields
from pathlib import Path

from pgarena.history.points import Point

DEFAULT_HISTORY_FILE = "history.sqlite"
"""The default store: this file in the results folder."""
TABLE = "pgarena_history"
_COLUMNS = [f.name for f in fields(Point)]
_TYPES = {"rps_median": "double precision", "rps_low": "double precision", "rps_high": "double precision",
          "db_ceiling_tps": "double precision", "headroom_rps": "double precision"}
_NOT_NULL = {"run_id", "recorded_at", "run_stack", "stack", "version", "cell", "machine", "rps_median"}


class HistoryError(Exception):
    """The store cannot be opened or written; the message names it."""


def _schema() -> str:
    columns = ", ".join(f"{c} {_TYPES.get(c, 'text')}{' not null' if c in _NOT_NULL else ''}" for c in _COLUMNS)
    return f"create table if not exists {TABLE} ({columns}, primary key (run_id, run_stack, cell))"


class HistoryStore:
    """An open store. `placeholder` is the backend's parameter marker ('?' or '%s')."""

    def __init__(self, connection, placeholder: str, where: str) -> None:
        self.connection = connection
        self.placeholder = placeholder
        self.where = where
        """The file or the URL (password redacted) of the store, for messages."""
        with self.transaction():
            self.connection.cursor().execute(_schema())

    def transaction(self):
        """A context that commits on success and rolls back on an error (psycopg's `with connection` would
        close the connection instead; sqlite3's commits)."""
        make = getattr(self.connection, "transaction", None)
        return make() if make is not None else self.connection

    def record(self, points: Sequence[Point]) -> int:
        """Store a run's points, replacing any earlier rows of the same runs; return how many were stored."""
        marks = ", ".join([self.placeholder] * len(_COLUMNS))
        with self.transaction():
            cursor = self.connection.cursor()
            for run_id in {p.run_id for p in points}:
                cursor.execute(f"delete from {TABLE} where run_id = {self.placeholder}", (run_id,))
            for point in points:
                cursor.execute(f"insert into {TABLE} ({', '.join(_COLUMNS)}) values ({marks})", astuple(point))
        return len(points)

    def points(self, stack: str | None = None) -> list[Point]:
        """Every stored point (of one stack), oldest run first."""
        where = f" where stack = {self.placeholder}" if stack else ""
        cursor = self.connection.cursor()
        cursor.execute(f"select {', '.join(_COLUMNS)} from {TABLE}{where} order by recorded_at, run_id, stack, cell",
                       (stack,) if stack else ())
        return [Point(*row) for row in cursor.fetchall()]

    def close(self) -> None:
        self.connection.close()


def open_store(results_dir: Path, url: str | None = None) -> HistoryStore:
    """The store named by `url` (postgresql://… or a file path), else `results_dir`/history.sqlite."""
    if url and url.startswith(("postgresql://", "postgres://")):
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover — psycopg is a dependency
            raise HistoryError(f"--history-url: psycopg is not installed ({exc})") from None
        try:
            return HistoryStore(psycopg.connect(url), "%s", url.split("@")[-1])
        except psycopg.Error as exc:
            raise HistoryError(f"--history-url: cannot use the database at {url.split('@')[-1]}: "
                               f"{str(exc).strip().splitlines()[0]}") from None
    path = Path(url) if url else results_dir / DEFAULT_HISTORY_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return HistoryStore(sqlite3.connect(path), "?", str(path))
    except (OSError, sqlite3.Error) as exc:
        raise HistoryError(f"cannot open the history store {path}: {exc}") from None


def series(points: Iterable[Point]) -> dict[tuple[str, str, str], list[Point]]:
    """(stack, cell, machine) → its points in run order: a series is one cell of one stack on one machine."""
    out: dict[tuple[str, str, str], list[Point]] = {}
    for point in sorted(points, key=lambda p: (p.recorded_at, p.run_id)):
        out.setdefault((point.stack, point.cell, point.machine), []).append(point)
    return out
