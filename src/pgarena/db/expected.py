"""The expected answer of a workload's request, computed by PostgreSQL itself (`json_agg` over the same
function or query), never written by hand."""

from __future__ import annotations

import json
from typing import Any

from pgarena.contract.values import parse_json
from pgarena.contract.workloads import (
    MANY_PARAMS_TYPES,
    NESTED_RECORDS,
    PERF_LARGE_PAYLOAD,
    PERF_MANY_PARAMS,
    PERF_MINIMAL,
    PERF_NESTED,
    PERF_POST,
    PERF_TEST,
    PERF_TEST_PARAMETERS,
    SEED_MANY_PARAMS,
    SEED_PERF_TEST_VALUES,
    SEED_POST_PAYLOAD,
    USERS,
)
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


def expected_users_posts(db: Database, limit: int, posts_limit: int) -> list[dict[str, Any]]:
    """The first `limit` users by id, each `{id, username, posts: [{id, title}, ...]}` with its first
    `posts_limit` posts by id, as PostgreSQL's own JSON (graphql-nested's data.users, users-posts' answer)."""
    with db.connect() as conn:
        row = conn.execute(
            "SELECT coalesce(json_agg(json_build_object('id', u.id, 'username', u.username, 'posts', "
            "(SELECT coalesce(json_agg(json_build_object('id', p.id, 'title', p.title) ORDER BY p.id), '[]') "
            "FROM (SELECT id, title FROM posts WHERE user_id = u.id ORDER BY id LIMIT %s) p)) ORDER BY u.id), "
            "'[]')::text FROM (SELECT id, username FROM users ORDER BY id LIMIT %s) u",
            [posts_limit, limit],
        ).fetchone()
    return parse_json(row[0])


def column_types(db: Database, workload: str) -> dict[str, str]:
    """The result columns of a workload's query and their type names, as the database reports them."""
    sql = {
        PERF_TEST: "SELECT * FROM perf_test(1, 'a', 1, 1, 1, 1, 1, true, '2024-01-01', '2024-01-01', "
        "'2024-01-01', gen_random_uuid(), '{}', '{}', '{1}', '{a}') LIMIT 0",
        USERS: "SELECT id, username, full_name, email, age, created_at FROM users LIMIT 0",
        PERF_MINIMAL: "SELECT * FROM perf_minimal() LIMIT 0",
        PERF_POST: "SELECT * FROM perf_post(1, '{}') LIMIT 0",
        PERF_NESTED: "SELECT * FROM perf_nested(1, 1) LIMIT 0",
        PERF_LARGE_PAYLOAD: "SELECT * FROM perf_large_payload(1) LIMIT 0",
        PERF_MANY_PARAMS: "SELECT * FROM perf_many_params(" + ", ".join(["NULL"] * len(MANY_PARAMS_TYPES)) + ") LIMIT 0",
    }[workload]
    with db.connect() as conn:
        cur = conn.execute(sql)
        oids = [col.type_code for col in cur.description]
        names = dict(conn.execute("SELECT oid::int, typname FROM pg_type WHERE oid = ANY(%s)", [oids]).fetchall())
        return {col.name: names[col.type_code] for col in cur.description}


def _rows(db: Database, sql: str, args: list[Any]) -> list[dict[str, Any]]:
    with db.connect() as conn:
        # NOTE: a subquery, not `FROM f() t`: for a function with one output column `t` would be that
        # column (json_agg of strings), not the row
        row = conn.execute(f"SELECT coalesce(json_agg(t), '[]')::text FROM (SELECT * FROM {sql}) t", args).fetchone()
    return parse_json(row[0])


def expected_perf_post(db: Database, records: int, payload: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """perf_post's rows for the payload a request carries (the seed payload unless given)."""
    payload = SEED_POST_PAYLOAD if payload is None else payload
    return _rows(db, "perf_post(%s, %s::jsonb)", [records, json.dumps(payload, ensure_ascii=False)])


def expected_perf_nested(db: Database, depth: int, records: int = NESTED_RECORDS) -> list[dict[str, Any]]:
    return _rows(db, "perf_nested(%s, %s)", [records, depth])


def expected_perf_large_payload(db: Database, size_kb: int) -> list[dict[str, Any]]:
    return _rows(db, "perf_large_payload(%s)", [size_kb])


def expected_perf_many_params(db: Database, values: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """perf_many_params's row for the query parameters a request carries (absent ones are NULL), each
    parameter cast by PostgreSQL from its text like a stack binding text does."""
    values = SEED_MANY_PARAMS if values is None else values
    casts = ", ".join(f"%s::{kind}" for kind in MANY_PARAMS_TYPES)
    args = [values.get(f"_p{i + 1}") for i in range(len(MANY_PARAMS_TYPES))]
    return _rows(db, f"perf_many_params({casts})", args)


def expected_answer(db: Database, workload: str, parameter: int | None) -> list[dict[str, Any]] | None:
    """The expected answer of a cell's load request (`contract.workloads.load_request`); None where it
    is not a fixed list of rows (static, tx, perf-minimal's now())."""
    if workload == PERF_TEST:
        return expected_perf_test(db, parameter)
    if workload == USERS:
        return expected_users(db, parameter)
    if workload == PERF_POST:
        return expected_perf_post(db, parameter)
    if workload == PERF_NESTED:
        return expected_perf_nested(db, parameter)
    if workload == PERF_LARGE_PAYLOAD:
        return expected_perf_large_payload(db, parameter)
    if workload == PERF_MANY_PARAMS:
        return expected_perf_many_params(db)
    return None
