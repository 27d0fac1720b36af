"""What pgarena puts in the database for its workloads (schema pgarena), and what it reads back about the server."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import psycopg
from psycopg import sql as pgsql

from pgarena.db import namespace
from pgarena.db.postgres import INSTALL_HINT, Database, PostgresError, find_bin_dir
from pgarena.system.process import first_line


def packaged_sql(name: str) -> str:
    return resources.files("pgarena").joinpath("sql", name).read_text(encoding="utf-8")


TX_PART = "pgbench"
"""The data part of tx: pgbench's TPC-B tables (the other parts are packaged SQL files, src/pgarena/sql)."""
TX_STEPS = "dtGvp"
"""pgbench -i's steps for the tx data (load_tx_data)."""


def data_parts(workloads: Sequence[str]) -> tuple[str, ...]:
    """The pieces of data `workloads` need, in load order (SQL files, then TX_PART for tx): two
    workload lists with the same parts leave the same objects in schema `pgarena`."""
    nested = any(name in workloads for name in ("graphql-nested", "users-posts"))
    wanted = {
        "perf_test.sql": "perf-test" in workloads,
        "users.sql": nested or "users" in workloads or "graphql" in workloads,
        "posts.sql": nested,
        "scenarios.sql": any(name.startswith("perf-") and name != "perf-test" for name in workloads),
        TX_PART: "tx" in workloads,
    }
    return tuple(part for part, needed in wanted.items() if needed)


def data_definition(parts: Sequence[str]) -> str:
    """What defines `parts`' data, as text: each SQL file's content and pgbench's scale and steps (a cached
    copy of the data is valid while this text is unchanged: db/template.py)."""
    from pgarena.contract.workloads import TX_SCALE

    return "\n".join(f"-- {part}\n" + (packaged_sql(part) if part != TX_PART else
                                         f"pgbench -i -s {TX_SCALE} -I {TX_STEPS}") for part in parts)


def load_workload_data(db: Database, workloads: Sequence[str]) -> None:
    """Create the extensions and, in schema `pgarena`, the objects each workload needs (idempotent).

    Nothing outside that schema is dropped or replaced: a user's `public.users` or `public.perf_test`
    stays as it was. An extension missing on a user's server is created there (in schema `pgarena`)
    if pgarena's role may; otherwise accounting says it is unavailable and why. A managed cluster copied from
    a template that holds these workloads' data (`db.preloaded`, db/template.py) is left as it is.
    """
    parts = data_parts(workloads)
    if db.preloaded and set(parts) <= db.preloaded:
        return
    with db.connect() as conn:
        for extension in ("pg_stat_statements", "uuid-ossp"):
            try:
                conn.execute(f'CREATE EXTENSION IF NOT EXISTS "{extension}"')
            except psycopg.Error as exc:
                if db.managed:
                    raise PostgresError(f"cannot create extension {extension}: {exc}") from None
        for part in parts:
            if part != TX_PART:
                conn.execute(packaged_sql(part))
        conn.execute(pgsql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(
            pgsql.Identifier(namespace.SCHEMA), pgsql.Identifier(db.user)))
    if TX_PART in parts:
        from pgarena.contract.workloads import TX_SCALE

        load_tx_data(db, TX_SCALE)


def pgbench_binary() -> str:
    """pgbench from PATH, next to the server binaries, or from Debian's server packages (the npm registry's
    PostgreSQL ships no pgbench: pgbench speaks the protocol of any later server)."""
    found = shutil.which("pgbench")
    if found:
        return found
    for candidate in [find_bin_dir() / "pgbench", *sorted(Path(p) for p in glob.glob("/usr/lib/postgresql/*/bin/pgbench"))]:
        if candidate.is_file():
            return str(candidate)
    raise PostgresError(f"pgbench not found (it ships with the PostgreSQL server binaries): {INSTALL_HINT}")


def client_versions() -> dict[str, str]:
    """`{"pgbench --version": "pgbench (PostgreSQL) 15.18 (…)"}`: the pgbench pgarena runs (tx data, the database
    ceiling), recorded beside the server's version because it need not be the server's build (the npm registry's
    PostgreSQL 18 ships the server only; Debian's pgbench is used with it)."""
    try:
        binary = pgbench_binary()
    except PostgresError as exc:
        return {"pgbench --version": f"not available: {exc}"}
    return {"pgbench --version": first_line([binary, "--version"]) or "not available"}


def load_tx_data(db: Database, scale: int) -> None:
    """pgbench's TPC-B tables at `scale` in schema `pgarena`, created by `pgbench -i` as the stacks' role.

    Steps `dtGvp`: drop old tables, create, generate data server-side, vacuum, primary keys.
    NOTE: pgbench names its tables unqualified; with the search path `pgarena` alone its `DROP TABLE IF
    EXISTS pgbench_*` can only reach pgarena's own tables, never a user's `public.pgbench_accounts`.
    """
    argv = [pgbench_binary(), "-i", "-s", str(scale), "-I", TX_STEPS, "-q",
            "-h", db.host, "-p", str(db.port), "-U", db.user, db.name]
    env = {**os.environ, "PGPASSWORD": db.password, "PGOPTIONS": f"-c search_path={namespace.SCHEMA}"}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=env)
    if done.returncode != 0:
        raise PostgresError(f"pgbench -i failed: {done.stderr.strip()[-500:]}")


def server_facts(db: Database) -> tuple[str, dict[str, str]]:
    """(server version, every setting whose value does not come from the built-in default)."""
    with psycopg.connect(db.admin_url, autocommit=True) as conn:  # no session SET: settings as configured
        version = conn.execute("SHOW server_version").fetchone()[0]
        rows = conn.execute(
            "SELECT name, setting || coalesce(' ' || unit, '') FROM pg_settings "
            "WHERE source NOT IN ('default', 'override', 'client', 'session') ORDER BY name"
        ).fetchall()
    return version, {name: value for name, value in rows}
