"""The expected answer of a workload's request, computed by PostgreSQL itself (`json_agg` over the same
function or query), never written by hand."""

from __future__ import annotations

from typing import Any

from pgarena.contract.values import parse_json
from pgarena.contract.workloads import PERF_TEST, PERF_TEST_PARAMETERS, SEED_PERF_TEST_VALUES, USERS
from pgarena.db.postgres import Database


def expected_perf_test(db: Database, records: int, values: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """perf_test's rows as PostgreSQL's own JSON, parsed with exact numbers."""
    values = values or SEED_PERF_TEST_VALUES
    args = [str(records)] + [values[name] for name, _ in PERF_TEST_PARAMETERS[1:]]
    casts = ", ".join(f"%s::{sql_type}" for _, sql_type in PERF_TEST_PARAMETERS)
    with db.connect() as conn:
        row = conn.execute(f"SELECT coalesce(json_agg(t), '[]')::text FROM perf_test({casts}) t", args).fetchone()
    return parse_json(row[0])


def expected_users(db: Database, limit: int) -> list[dict[str, Any]]:
    """The first `limit` users by id as PostgreSQL's own JSON."""
    with db.connect() as conn:
        row = conn.execute(
            "SELECT coalesce(json_agg(u), '[]')::text FROM "
            "(SELECT id, username, full_name, email, age, created_at FROM users ORDER BY id LIMIT %s) u",
            [limit],
        ).fetchone()
    return parse_json(row[0])


def column_types(db: Database, workload: str) -> dict[str, str]:
    """The result columns of a workload's query and their type names, as the database reports them."""
    sql = {
        PERF_TEST: "SELECT * FROM perf_test(1, 'a', 1, 1, 1, 1, 1, true, '2024-01-01', '2024-01-01', "
        "'2024-01-01', gen_random_uuid(), '{}', '{}', '{1}', '{a}') LIMIT 0",
        USERS: "SELECT id, username, full_name, email, age, created_at FROM users LIMIT 0",
    }[workload]
    with db.connect() as conn:
        cur = conn.execute(sql)
        oids = [col.type_code for col in cur.description]
        names = dict(conn.execute("SELECT oid::int, typname FROM pg_type WHERE oid = ANY(%s)", [oids]).fetchall())
        return {col.name: names[col.type_code] for col in cur.description}
