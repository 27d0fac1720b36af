"""`--database-url`: pgarena works in its own schema and role and leaves the user's objects alone (issue 10,
item 17), and stores no password (item 18); the managed cluster takes an app's fixed settings (item 21)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from pgarena.db import namespace
from pgarena.db.cluster import ClusterSettings, provide_database
from pgarena.db.data import load_workload_data
from pgarena.db.postgres import PostgresError, free_port
from pgarena.results.store import load
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres

pytestmark = [pytest.mark.postgres, needs_postgres]

USER_PASSWORD = "alice-Secret-7f3k"
USER_OBJECTS = """
CREATE TABLE public.users (id int PRIMARY KEY, nickname text NOT NULL);
INSERT INTO public.users VALUES (1, 'mine'), (2, 'also mine'), (3, 'keep me');
CREATE FUNCTION public.perf_test() RETURNS int LANGUAGE sql AS 'SELECT 42';
CREATE TABLE public.pgbench_accounts (aid int PRIMARY KEY, note text);
INSERT INTO public.pgbench_accounts VALUES (7, 'the user''s account');
"""
FINGERPRINT = """
SELECT (SELECT md5(string_agg(u::text, ',' ORDER BY id)) FROM public.users u),
       (SELECT md5(string_agg(a::text, ',' ORDER BY aid)) FROM public.pgbench_accounts a),
       public.perf_test(), pg_get_functiondef('public.perf_test()'::regprocedure)
"""


def _user_database(server_admin_url: str, name: str) -> str:
    """A database of the user's on the server, with their own users, perf_test and pgbench_accounts;
    returns its URL as the user (role alice, a superuser) would give it."""
    with psycopg.connect(server_admin_url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'alice'").fetchone():
            conn.execute(f"CREATE ROLE alice SUPERUSER LOGIN PASSWORD '{USER_PASSWORD}'")
        conn.execute(f"CREATE DATABASE {name} OWNER alice")
    port = psycopg.conninfo.conninfo_to_dict(server_admin_url)["port"]
    url = f"postgresql://alice:{USER_PASSWORD}@127.0.0.1:{port}/{name}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(USER_OBJECTS)
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    return url


@pytest.fixture(scope="module")
def user_server(tmp_path_factory):
    """A PostgreSQL standing in for a server the user runs (its superuser's URL)."""
    with provide_database(tmp_path_factory.mktemp("server") / "pg", database_url=None, cpus=None) as server:
        yield server.admin_url


def _fingerprint(url: str) -> tuple:
    with psycopg.connect(url) as conn:
        return conn.execute(FINGERPRINT).fetchone()


def _files_containing(folder: Path, secret: str) -> list[str]:
    return [str(p.relative_to(folder)) for p in folder.rglob("*")
            if p.is_file() and secret.encode() in p.read_bytes()]


def test_run_against_a_users_database_leaves_its_objects_untouched_and_stores_no_password(
        user_server, tmp_path, fixture_env):
    url = _user_database(user_server, "app")
    before = _fingerprint(url)
    argv = [sys.executable, "-m", "pgarena", "run", "--database-url", url, "--stacks-dir", str(FIXTURE_STACKS),
            "--stacks", "fixture-good", "--workloads", "perf-test,users,tx,static", "--rows", "1", "--limits", "5",
            "--vus", "2", "--duration", "1", "--warmup", "1", "--warmup-cap", "1", "--repetitions", "1",
            "--engine", "k6",
            "--no-headroom", "--ceiling-seconds", "1", "--results-dir", str(tmp_path), "--run-id", "ext"]
    done = subprocess.run(argv, cwd=PROJECT_DIR, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert _fingerprint(url) == before  # the user's table, function and pgbench table are as they were
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM pgarena.users").fetchone()[0] == 10000
        assert conn.execute("SELECT count(*) FROM pgarena.pgbench_accounts").fetchone()[0] > 1
        assert conn.execute("SELECT rolconfig FROM pg_roles WHERE rolname = 'alice'").fetchone()[0] is None
    results = load(tmp_path / "ext")
    assert results.status == "complete"
    assert all(v.ok for v in results.verifications), [v.checks for v in results.verifications if not v.ok]
    users = next(v for v in results.verifications if v.workload == "users")
    assert users.accounting is not None, users.accounting_unavailable  # alice may read the stacks' statements
    assert {c.workload for c in results.cells if c.status == "ok"} == {"perf-test", "users", "tx", "static"}
    assert "***" in results.command and USER_PASSWORD not in results.command
    assert _files_containing(tmp_path / "ext", USER_PASSWORD) == []


@pytest.mark.parametrize("form", ["separate", "equals", "query"])
def test_a_run_that_cannot_connect_stores_no_password(tmp_path, fixture_env, form):
    secret = f"Wrong-{form}-Pw-91x"
    url = (f"postgresql://alice@127.0.0.1:1/app?password={secret}" if form == "query"
           else f"postgresql://alice:{secret}@127.0.0.1:1/app")
    option = [f"--database-url={url}"] if form == "equals" else ["--database-url", url]
    argv = [sys.executable, "-m", "pgarena", "verify", *option, "--stacks-dir", str(FIXTURE_STACKS),
            "--stacks", "fixture-good", "--workloads", "static", "--results-dir", str(tmp_path), "--run-id", "bad"]
    done = subprocess.run(argv, cwd=PROJECT_DIR, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "cannot connect to --database-url" in done.stderr, done.stderr
    results = load(tmp_path / "bad")
    assert results.status == "failed" and "***" in results.command
    assert _files_containing(tmp_path / "bad", secret) == []
    assert secret not in done.stdout + done.stderr


def test_objects_in_the_way_are_refused_by_name_unless_overwrite_is_allowed(user_server, tmp_path):
    url = _user_database(user_server, "crowded")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA pgarena; CREATE TABLE pgarena.notes (body text); "
                     "INSERT INTO pgarena.notes VALUES ('a note of the user''s')")
    with pytest.raises(PostgresError, match="schema pgarena already exist.*--allow-overwrite"):
        with provide_database(tmp_path, database_url=url, cpus=None):
            pass
    with provide_database(tmp_path, database_url=url, cpus=None, allow_overwrite=True) as db:
        load_workload_data(db, ["users"])
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT body FROM pgarena.notes").fetchone()[0] == "a note of the user's"


def test_a_role_named_pgarena_of_the_users_is_refused(user_server, tmp_path):
    url = _user_database(user_server, "rolecheck")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DO $$ BEGIN CREATE ROLE pgarena LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
        conn.execute("COMMENT ON ROLE pgarena IS 'the user''s own'")
        try:
            with pytest.raises(PostgresError, match="role pgarena already exist"):
                with provide_database(tmp_path, database_url=url, cpus=None):
                    pass
            assert conn.execute("SELECT shobj_description(oid, 'pg_authid') FROM pg_roles "
                                "WHERE rolname = 'pgarena'").fetchone()[0] == "the user's own"
        finally:
            conn.execute(f"COMMENT ON ROLE pgarena IS '{namespace.MARKER}'")


def test_accounting_says_how_to_enable_it_for_an_unprivileged_role(user_server, tmp_path):
    from pgarena.db import accounting

    url = _user_database(user_server, "plain")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE ROLE bob LOGIN CREATEROLE PASSWORD 'bob-pw'; GRANT CREATE ON DATABASE plain TO bob")
        # PostgreSQL 16+: CREATEROLE alters only the roles one holds with ADMIN OPTION; pgarena's role may exist
        # from an earlier test's run against this server, created by alice
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'pgarena'").fetchone():
            conn.execute("GRANT pgarena TO bob WITH ADMIN OPTION")
    bob = url.replace(f"alice:{USER_PASSWORD}", "bob:bob-pw")
    with provide_database(tmp_path, database_url=bob, cpus=None) as db:
        assert "--admin-database-url" in accounting.available(db)
    with provide_database(tmp_path, database_url=bob, cpus=None, admin_url=url) as db:
        assert accounting.available(db) is None


def test_managed_cluster_takes_an_apps_fixed_settings(tmp_path):
    port = free_port()
    settings = ClusterSettings(port=port, user="benchmarkdbuser", password="benchmarkdbpass", name="hello_world")
    with provide_database(tmp_path / "run", database_url=None, cpus=None, settings=settings) as db:
        load_workload_data(db, ["users", "perf-test"])
        fixed = f"postgresql://benchmarkdbuser:benchmarkdbpass@127.0.0.1:{port}/hello_world"
        with psycopg.connect(fixed) as conn:
            assert conn.execute("SELECT current_user, current_database()").fetchone() == (
                "benchmarkdbuser", "hello_world")
            assert conn.execute("SELECT count(*) FROM users").fetchone()[0] == 10000  # via the role's search path
        assert db.url == fixed


def test_managed_cluster_can_give_the_stacks_a_role_named_postgres(tmp_path):
    settings = ClusterSettings(user="postgres", password="postgres", name="postgres")
    with provide_database(tmp_path / "run", database_url=None, cpus=None, settings=settings) as db:
        load_workload_data(db, ["users"])
        with psycopg.connect(db.url) as conn:
            assert conn.execute("SELECT current_user, count(*) FROM users GROUP BY 1").fetchone() == ("postgres", 10000)
        from pgarena.db import accounting

        assert accounting.available(db) is None  # pgarena's own superuser has another name


def test_an_app_with_hard_coded_credentials_and_no_health_endpoint_verifies(tmp_path, fixture_env):
    """An app written elsewhere: it builds its own URL from fixed credentials (in [database]) and has no
    health path of its own, so pgarena polls its users request instead."""
    from pgarena.config.profiles import build_config
    from pgarena.pipeline import runner

    stack = tmp_path / "stacks" / "elsewhere"
    stack.mkdir(parents=True)
    server = FIXTURE_STACKS / "fixture-good" / "server.py"
    (stack / "stack.toml").write_text(f"""
id = "elsewhere"
title = "An app from another benchmark"
language = "Python"
framework = "http.server"
framework_version = "stdlib"
driver = "psycopg"
driver_version = "3"
workloads = ["users"]

[run]
command = 'exec "$FIXTURE_PYTHON" {server}'
health_path = "workload:users"
startup_timeout_s = 30

[run.env]
PGARENA_DATABASE_URL = "postgresql://benchmarkdbuser:benchmarkdbpass@127.0.0.1:${{db_port}}/hello_world"

[database]
user = "benchmarkdbuser"
password = "benchmarkdbpass"
name = "hello_world"
""")
    port = free_port()
    config = build_config(project_dir=tmp_path, overrides={"ceiling_s": 0,
        "stacks_dir": tmp_path / "stacks", "results_dir": tmp_path / "results", "run_id": "v",
        "workloads": ["users"], "users_limits": [5], "db_port": port})
    run_dir = runner.execute(config, kind="verify", project_dir=PROJECT_DIR, command_line="test", log=lambda _: None)
    results = load(run_dir)
    assert results.stacks[0].status == "ok", results.stacks[0].reason
    (verification,) = results.verifications
    assert verification.ok and verification.accounting is not None
    assert results.database.url == f"postgresql://benchmarkdbuser:***@127.0.0.1:{port}/hello_world"
    assert _files_containing(run_dir, "benchmarkdbpass") == []


def test_a_fixed_port_in_use_is_one_clear_error(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(PostgresError, match=f"port {port} is already in use"):
            with provide_database(tmp_path / "run", database_url=None, cpus=None, settings=ClusterSettings(port=port)):
                pass


def test_stacks_wanting_different_databases_are_refused_in_one_line(tmp_path):
    # Free ports, not 5432: with no --stacks a stack whose database port is taken is only marked unavailable
    # (plan.ports_in_use), and seed000-go-pgx's e2e test holds 5432 while it runs beside this one (CI, 2026-11-27).
    first = free_port()
    second = next(p for p in iter(free_port, None) if p != first)
    for stack_id, port in (("wants-a", first), ("wants-b", second)):
        folder = tmp_path / "stacks" / stack_id
        folder.mkdir(parents=True)
        (folder / "stack.toml").write_text(
            f'id = "{stack_id}"\ntitle = "x"\nlanguage = "x"\nframework = "x"\nframework_version = "0"\n'
            f'driver = "x"\ndriver_version = "0"\nworkloads = ["static"]\n[run]\ncommand = "true"\n'
            f'[database]\nport = {port}\n')
    done = subprocess.run([sys.executable, "-m", "pgarena", "verify", "--stacks-dir", str(tmp_path / "stacks"),
                           "--results-dir", str(tmp_path / "results")], cwd=PROJECT_DIR, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert f"stack wants-b wants the managed database's port different from stack wants-a ({first} vs {second})" in (
        " ".join(done.stderr.split())), done.stderr
    assert "Traceback" not in done.stderr
