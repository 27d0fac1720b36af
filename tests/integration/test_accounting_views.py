"""Database accounting sees a stack that reads pgarena's tables through a view of its own (FraiseQL's v_user)."""

from __future__ import annotations

from pgarena.db import accounting
from pgarena.db.accounting import StatementCounts, object_pattern, split_calls
from pgarena.db.data import load_workload_data
from tests.conftest import needs_postgres

pytestmark = [needs_postgres]


def test_a_view_over_the_workload_tables_counts_as_the_workload(managed_db):
    load_workload_data(managed_db, ["users-posts"])
    with managed_db.connect() as conn:
        conn.execute("CREATE OR REPLACE VIEW pgarena.v_user AS SELECT u.id, jsonb_build_object('id', u.id, 'posts', "
                     "(SELECT jsonb_agg(p.id) FROM pgarena.posts p WHERE p.user_id = u.id)) AS data FROM pgarena.users u")
        conn.execute("CREATE OR REPLACE VIEW pgarena.v_user_page AS SELECT * FROM pgarena.v_user")  # a view on it
    try:
        pattern = object_pattern(managed_db, "graphql-nested")
        query = "SELECT data FROM v_user_page ORDER BY id LIMIT $1"
        calls = split_calls("graphql-nested", StatementCounts({}), StatementCounts({query: (20, 400)}), pattern)
        assert calls[0] == 20 and calls[2] == 0
        assert split_calls("graphql-nested", StatementCounts({}), StatementCounts({query: (20, 400)}))[0] == 0
        assert object_pattern(managed_db, "perf-test") is accounting.OBJECTS["perf-test"]  # no tables: unchanged
    finally:
        with managed_db.connect() as conn:
            conn.execute("DROP VIEW IF EXISTS pgarena.v_user_page, pgarena.v_user")
