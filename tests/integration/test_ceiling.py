"""The database ceiling measured with pgbench against a real managed PostgreSQL."""

from __future__ import annotations

import pytest

from pgarena.db.ceiling import measure_ceiling
from tests.conftest import needs_postgres
from tests.integration.test_toxiproxy import binary  # noqa: F401 (the fixture: the pinned Toxiproxy, built once)

pytestmark = [needs_postgres, pytest.mark.postgres]


@pytest.mark.parametrize(("workload", "parameter"), [("perf-test", 1), ("users", 20), ("tx", None)])
def test_pgbench_runs_the_workload_statements(managed_db, tmp_path, workload, parameter):
    found = measure_ceiling(managed_db, workload, parameter, connections=2, seconds=2, runs=3, log_dir=tmp_path,
                            label="c2")
    assert found is not None
    assert found.transactions > 0 and 3 <= found.seconds <= 6.5 and found.tps > 0
    assert len(found.runs_tps) == 3 and found.interval is not None
    low, high = found.interval
    assert low <= found.tps <= high and min(found.runs_tps) < high
    assert (tmp_path / (f"ceiling-{workload}" + (f"-{parameter}" if parameter else "") + "-c2.log")).exists()


def test_static_has_no_ceiling(managed_db):
    assert measure_ceiling(managed_db, "static", None, connections=2, seconds=1) is None


def test_through_a_round_trip_the_ceiling_is_that_round_trips(managed_db, tmp_path, binary):
    """Issue 22 item 3: through a Toxiproxy proxy at 20 ms, one connection's ceiling is bounded by the round
    trip (one prepared statement = one round trip: at most 50 per second), far below the direct one."""
    from dataclasses import replace

    from pgarena.system import toxiproxy

    direct = measure_ceiling(managed_db, "users", 20, connections=1, seconds=2, runs=3)
    with toxiproxy.Toxiproxy(binary, log_path=tmp_path / "toxiproxy.log") as server:
        proxy = server.proxy("ceiling", upstream=f"{managed_db.host}:{managed_db.port}")
        proxy.set_rtt(20)
        far = measure_ceiling(replace(managed_db, host=proxy.host, port=proxy.port), "users", 20, connections=1,
                              seconds=2, runs=3)
    assert direct is not None and far is not None
    assert 25 < far.tps <= 51 and direct.tps > 10 * far.tps
