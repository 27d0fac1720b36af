"""The managed cluster and the workload data, against a real PostgreSQL."""

from __future__ import annotations

import socket

import psutil
import psycopg
import pytest
from psycopg import sql

from pgarena.contract import workloads as wl
from pgarena.db.cluster import provide_database
from pgarena.db.data import load_workload_data, server_facts
from pgarena.db.expected import column_types, expected_perf_test, expected_users
from pgarena.db.postgres import PostgresError, find_bin_dir
from tests.conftest import needs_postgres, process_gone

pytestmark = [pytest.mark.postgres, needs_postgres]


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_managed_cluster_starts_configured_and_is_removed(tmp_path):
    workdir = tmp_path / "run"
    with provide_database(workdir, database_url=None, cpus=None) as db:
        assert db.managed and db.host == "127.0.0.1" and _port_open(db.port)
        load_workload_data(db, ["perf-test", "users"])
        version, settings = server_facts(db)
        assert version.startswith(("15", "16", "17", "18"))
        assert settings["shared_preload_libraries"] == "pg_stat_statements"
        assert settings["TimeZone"] == "UTC"
        with psycopg.connect(db.url) as conn:  # the application role, by password over TCP
            extensions = {r[0] for r in conn.execute("SELECT extname FROM pg_extension")}
            assert {"pg_stat_statements", "uuid-ossp"} <= extensions
            assert conn.execute("SELECT count(*) FROM users").fetchone()[0] == 10000
            assert not conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0]
        pid = db.postmaster_pid
        assert pid and psutil.pid_exists(pid)
    assert not _port_open(db.port)
    assert process_gone(pid, timeout_s=5.0)
    assert not (workdir / "postgres").exists()
    assert "database system is ready" in (workdir / "postgres.log").read_text()


def test_a_cluster_copied_from_a_template_has_the_data_its_own_passwords_and_settings(tmp_path):
    """Two runs' clusters from one template (db/template.py): the first builds it (initdb and the data load, the
    product's path), both copy it; each has the workloads' data without loading it, its own port and random
    passwords (the other's do not log in), and the template stays a stopped cluster with initdb's settings."""
    templates, workloads = tmp_path / "templates", ["users", "perf-test"]
    with provide_database(tmp_path / "a", database_url=None, cpus=None, workloads=workloads,
                          templates=templates) as first:
        with provide_database(tmp_path / "b", database_url=None, cpus=None, workloads=workloads,
                              templates=templates) as second:
            assert first.preloaded == second.preloaded == {"perf_test.sql", "users.sql"}
            assert first.port != second.port and first.password != second.password
            assert first.admin_url != second.admin_url
            for db in (first, second):
                load_workload_data(db, workloads)  # a no-op: the copy holds the data
                with psycopg.connect(db.url) as conn:  # the stacks' role, by its new password over TCP
                    assert conn.execute("SELECT count(*) FROM users").fetchone()[0] == 10000
                    assert conn.execute("SELECT count(*) FROM pg_proc WHERE proname = 'perf_test'").fetchone()[0] == 1
                _, settings = server_facts(db)
                assert settings["port"] == str(db.port) and settings["shared_preload_libraries"] == "pg_stat_statements"
            swapped = first.url.replace(f":{first.password}@", f":{second.password}@")
            for url in (swapped, first.admin_url.replace(f":{first.port}/", f":{second.port}/")):
                with pytest.raises(psycopg.OperationalError):  # one cluster's password never opens the other
                    psycopg.connect(url, connect_timeout=5)
    (folder,) = [p for p in templates.iterdir() if p.is_dir()]
    conf = (folder / "data" / "postgresql.conf").read_text()
    assert "pgarena settings profile" not in conf and not (folder / "data" / "postmaster.pid").exists()
    assert (folder / "template.json").is_file()


def test_cluster_is_stopped_when_the_body_raises(tmp_path):
    with pytest.raises(RuntimeError):
        with provide_database(tmp_path / "run", database_url=None, cpus=None) as db:
            pid = db.postmaster_pid
            raise RuntimeError("boom")
    assert process_gone(pid, timeout_s=5.0)


def test_declared_column_types_match_the_database(managed_db):
    assert column_types(managed_db, wl.PERF_TEST) == wl.PERF_TEST_COLUMNS
    assert column_types(managed_db, wl.USERS) == wl.USERS_COLUMNS


def test_perf_test_is_call_compatible_with_the_seed(managed_db):
    with managed_db.connect() as conn:
        args = conn.execute(
            "SELECT pg_get_function_identity_arguments('pgarena.perf_test'::regproc)").fetchone()[0]
    names = [part.split()[0] for part in args.split(", ")]
    assert names == [name for name, _ in wl.PERF_TEST_PARAMETERS]


def test_perf_test_body_is_planned_generically_and_never_inlined(managed_db):
    with managed_db.connect() as conn:
        config = conn.execute("SELECT proconfig FROM pg_proc WHERE oid = 'pgarena.perf_test'::regproc").fetchone()[0]
        assert "plan_cache_mode=force_generic_plan" in config
        casts = ", ".join(f"${i}::{t}" for i, (_, t) in enumerate(wl.PERF_TEST_PARAMETERS, 1))
        conn.execute(f"PREPARE p AS SELECT * FROM perf_test({casts})")
        conn.execute("SET plan_cache_mode = force_generic_plan")
        values = sql.SQL(", ").join(sql.Literal(v) for v in ["5", *wl.SEED_PERF_TEST_VALUES.values()])
        plan = "\n".join(r[0] for r in conn.execute(sql.SQL("EXPLAIN EXECUTE p({})").format(values)))
    assert "Function Scan on perf_test" in plan  # an inlined body would show generate_series instead


def test_expected_answer_is_derived_from_parameters(managed_db):
    rows = expected_perf_test(managed_db, 2)
    assert [r["row_num"] for r in rows] == [1, 2]
    assert rows[0]["bigint_val"] == 9223372036854770000 - 1
    assert rows[0]["json_val"] == {"i": 1, "key": "value"}
    assert rows[1]["int_array_val"] == [1, 2, 3, 2]
    assert rows[1]["nullable_text"] is None and rows[0]["nullable_text"] == "text1"
    varied = expected_perf_test(managed_db, 1, wl.VARIED_PERF_TEST_VALUES)
    assert varied[0]["bigint_val"] == -9007199254740993 - 1
    assert varied[0]["text_val"].startswith("Zürich")


def test_perf_test_rejects_out_of_range_rows_as_a_data_exception(managed_db):
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        expected_perf_test(managed_db, 1001)


def test_users_table_is_deterministic(managed_db):
    query = "SELECT md5(json_agg(u ORDER BY id)::text) FROM users u"
    with managed_db.connect() as conn:
        before = conn.execute(query).fetchone()[0]
    load_workload_data(managed_db, ["users"])  # drop and regenerate
    with managed_db.connect() as conn:
        assert conn.execute(query).fetchone()[0] == before
    first = expected_users(managed_db, 1)[0]
    assert first == {"id": 1, "username": "user00001", "full_name": "Grace Lovelace",
                     "email": "user00001@example.com", "age": 25, "created_at": "2024-01-01T00:37:11.5+00:00"}


def test_unreachable_external_database_is_one_clear_error(tmp_path):
    with pytest.raises(PostgresError, match="cannot connect"):
        with provide_database(tmp_path, database_url="postgresql://u:p@127.0.0.1:1/db", cpus=None):
            pass


def test_missing_server_binaries_say_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr("pgarena.db.postgres.glob.glob", lambda pattern: [])
    monkeypatch.setattr("pgarena.db.postgres.shutil.which", lambda name: None)
    monkeypatch.setattr("pgarena.db.postgres.registry_postgres_dirs", lambda: [tmp_path / "none"])
    with pytest.raises(PostgresError, match="apt-get install postgresql"):
        find_bin_dir()
    with pytest.raises(PostgresError, match=f"--postgres-bin {tmp_path}: no initdb, pg_ctl, postgres there"):
        find_bin_dir(tmp_path)  # an explicit folder is used or refused, never silently replaced


def test_a_chosen_port_taken_before_the_server_binds_it_is_replaced_by_another(tmp_path, monkeypatch):
    """free_port() returns a port that was free a moment ago; another process may take it before the server binds
    it (a fresh-clone CI: 'could not bind IPv4 address: Address already in use'). The server starts on another."""
    import pgarena.db.cluster as cluster
    from pgarena.db.postgres import free_port

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    ports = iter([taken.getsockname()[1], free_port()])
    monkeypatch.setattr(cluster, "free_port", lambda: next(ports))
    try:
        with provide_database(tmp_path / "run", database_url=None, cpus=None) as db:
            assert db.port != taken.getsockname()[1] and _port_open(db.port)
        log = (tmp_path / "run" / "postgres.log").read_text()
        assert cluster.PORT_IN_USE in log and "database system is ready" in log
    finally:
        taken.close()
