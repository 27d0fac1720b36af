"""Shared fixtures: a managed PostgreSQL for the session, the fixture stacks, the project's paths."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from pgarena.postgres import PostgresError, find_bin_dir, load_workload_data, provide_database

PROJECT_DIR = Path(__file__).resolve().parents[1]
FIXTURE_STACKS = PROJECT_DIR / "tests" / "fixtures" / "stacks"


def _postgres_available() -> str | None:
    try:
        find_bin_dir()
    except PostgresError as exc:
        return str(exc)
    return None


needs_postgres = pytest.mark.skipif(
    _postgres_available() is not None, reason=f"PostgreSQL server binaries missing: {_postgres_available()}"
)


@pytest.fixture(scope="session")
def managed_db(tmp_path_factory):
    """One managed cluster with every workload's data, shared by the integration tests."""
    if _postgres_available():
        pytest.skip(f"PostgreSQL server binaries missing: {_postgres_available()}")
    workdir = tmp_path_factory.mktemp("pg") / "run"
    with provide_database(workdir, database_url=None, cpus=None) as db:
        load_workload_data(db, ["perf-test", "users", "static", "tx", "graphql"])
        yield db


@pytest.fixture
def fixture_env(monkeypatch):
    """The fixture stacks run `$FIXTURE_PYTHON server.py`: this interpreter has psycopg."""
    monkeypatch.setenv("FIXTURE_PYTHON", sys.executable)
    return dict(os.environ)


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden files under tests/golden instead of comparing with them")


@pytest.fixture
def update_golden(request) -> bool:
    """True when the run was asked to rewrite golden files (--update-golden)."""
    return bool(request.config.getoption("--update-golden"))
