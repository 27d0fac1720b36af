"""Issue 22 item 12: an app that names its schema (`public.perf_test(...)`) finds pgarena's objects there on the
managed database (stack.toml `[database] schema`), and a user's own database is never given them."""

from __future__ import annotations

import dataclasses
import uuid

import psycopg
import pytest

from pgarena.contract import workloads as wl
from pgarena.db.data import load_workload_data
from pgarena.db.exposed import expose_in_schema
from pgarena.db.postgres import PostgresError
from tests.conftest import needs_postgres

pytestmark = [pytest.mark.postgres, needs_postgres]
SCHEMA = "seedapp"  # not public: the shared cluster's other tests reload (drop) pgarena's tables


def test_pgarenas_functions_and_tables_are_reachable_in_the_named_schema(managed_db):
    load_workload_data(managed_db, wl.SCENARIOS)
    try:
        made = expose_in_schema(managed_db, SCHEMA)
        assert f"{SCHEMA}.perf_minimal()" in made and f"{SCHEMA}.users (view)" in made
        assert not any("pg_stat_statements" in m or "uuid_generate" in m for m in made)  # extensions' own
        with psycopg.connect(managed_db.url, autocommit=True) as conn:  # as the stacks' role, as an app would
            rows = conn.execute(
                f"SELECT row_num, timestamptz_val FROM {SCHEMA}.perf_test(2, 'a', 1, 2, 3.5, 1.5, 2.5, true, "
                "'2024-01-15', '2024-01-15 10:30:00', '2024-01-15 10:30:00+00', "
                "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{}', '{}', '{1}', '{a}')").fetchall()
            assert [r[0] for r in rows] == [1, 2]
            assert conn.execute(f"SELECT status FROM {SCHEMA}.perf_minimal()").fetchone()[0] == "ok"
            assert conn.execute(f"SELECT count(*) FROM {SCHEMA}.users").fetchone()[0] == 10_000
            balance = conn.execute("SELECT abalance FROM pgarena.pgbench_accounts WHERE aid = 1").fetchone()[0]
            conn.execute(f"UPDATE {SCHEMA}.pgbench_accounts SET abalance = abalance + 5 WHERE aid = 1")
            # a write through the view lands in pgarena's table, where the tx consistency check reads it
            assert conn.execute("SELECT abalance FROM pgarena.pgbench_accounts WHERE aid = 1").fetchone()[0] == balance + 5
            conn.execute(f"UPDATE {SCHEMA}.pgbench_accounts SET abalance = abalance - 5 WHERE aid = 1")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):  # no more than the role has on pgarena's
                conn.execute(f"DELETE FROM {SCHEMA}.users WHERE id = 1")
        with managed_db.connect() as conn:
            comment = conn.execute(f"SELECT obj_description('{SCHEMA}.perf_post(int, jsonb)'::regprocedure)"
                                   ).fetchone()[0]
        assert comment == "HTTP POST"
    finally:
        with managed_db.connect() as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")


def test_a_users_own_database_is_never_given_the_objects(managed_db):
    external = dataclasses.replace(managed_db, managed=False)
    with pytest.raises(PostgresError, match="on its managed database only"):
        expose_in_schema(external, SCHEMA)
    with managed_db.connect() as conn:
        assert conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", [SCHEMA]).fetchone() is None


def test_the_managed_log_names_the_role_of_every_error(managed_db):
    """Item 13: the cause of a stack's 500s (a function it calls that does not exist) is found in postgres.log
    by the stacks' role, as a failed start shows it."""
    from pgarena.db.serverlog import role_errors

    # the session's cluster is shared: the tests before this one on its worker (bad input, wrong types) leave more
    # frequent errors in the same log, so the function's name is this run's own and every distinct error is read
    function = f"nowhere_schema_fn_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(managed_db.url, autocommit=True) as conn:
        for _ in range(3):
            with pytest.raises(psycopg.errors.UndefinedFunction):
                conn.execute(f"SELECT * FROM {function}(1)")
    errors = role_errors(managed_db.log_path, managed_db.user, limit=100_000)
    assert any(e.startswith(f"ERROR: function {function}(integer) does not exist") and e.endswith("(3 times)")
               for e in errors), errors
