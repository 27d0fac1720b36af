"""The database ceiling measured with pgbench against a real managed PostgreSQL."""

from __future__ import annotations

import pytest

from pgarena.db.ceiling import measure_ceiling
from tests.conftest import needs_postgres

pytestmark = [needs_postgres, pytest.mark.postgres]


@pytest.mark.parametrize(("workload", "parameter"), [("perf-test", 1), ("users", 20), ("tx", None)])
def test_pgbench_runs_the_workload_statements(managed_db, tmp_path, workload, parameter):
    found = measure_ceiling(managed_db, workload, parameter, connections=2, seconds=3, log_dir=tmp_path)
    assert found is not None
    assert found.transactions > 0 and found.seconds >= 1 and found.tps > 0
    assert (tmp_path / (f"ceiling-{workload}" + (f"-{parameter}" if parameter else "") + ".log")).exists()


def test_static_has_no_ceiling(managed_db):
    assert measure_ceiling(managed_db, "static", None, connections=2, seconds=1) is None
