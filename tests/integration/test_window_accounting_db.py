"""Per-window accounting against a real pg_stat_statements: readings, and when it cannot be trusted."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from pgarena.contract.values import Verdict
from pgarena.db import accounting
from pgarena.verify.windowcheck import judge_window
from tests.conftest import needs_postgres

pytestmark = [pytest.mark.postgres, needs_postgres]


def test_statements_of_the_stacks_role_are_counted_per_window(managed_db):
    import psycopg

    assert accounting.available(managed_db) is None
    before = accounting.read_counts(managed_db)
    with psycopg.connect(managed_db.url, autocommit=True) as conn:  # as a stack would
        for limit in (3, 3, 3, 4):
            conn.execute("SELECT id, username, full_name, email, age, created_at FROM users ORDER BY id LIMIT %s",
                         [limit])
    record = judge_window("users", 3, before, accounting.read_counts(managed_db), answered_2xx=4, unknown=0,
                          in_flight=0)
    assert record.workload_statement_calls == 4 and record.workload_rows == 13
    assert record.verdict is Verdict.EXACT


def test_a_role_that_cannot_read_other_roles_statements_makes_accounting_unavailable(managed_db):
    role, password = f"reader_{uuid.uuid4().hex[:8]}", "pw"
    with managed_db.connect() as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        conn.execute(f"GRANT CONNECT ON DATABASE {managed_db.name} TO {role}")
    try:
        weak = dataclasses.replace(managed_db, admin_url=(
            f"postgresql://{role}:{password}@{managed_db.host}:{managed_db.port}/{managed_db.name}"))
        assert "pg_read_all_stats" in accounting.available(weak)
        with managed_db.connect() as conn:
            conn.execute(f"GRANT pg_read_all_stats TO {role}")
        assert accounting.available(weak) is None
    finally:
        with managed_db.connect() as conn:
            conn.execute(f"REVOKE CONNECT ON DATABASE {managed_db.name} FROM {role}")
            conn.execute(f"DROP ROLE {role}")
