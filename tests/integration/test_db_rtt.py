"""--db-rtt through the real pipeline (issue 14): cells at each round trip, the proxy between the stack and
PostgreSQL measured and recorded, its CPU counted apart, and the round trip visible in the stack's latency."""

from __future__ import annotations

import pytest

from pgarena.config.profiles import build_config
from pgarena.pipeline import runner
from pgarena.report.markdown import render_markdown
from pgarena.results.store import load
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres, require_load_path

pytestmark = [pytest.mark.postgres, needs_postgres, pytest.mark.usefixtures("no_wire")]


def test_a_round_trip_is_a_load_dimension_and_shows_in_the_answers(tmp_path, fixture_env):
    require_load_path("oha")
    config = build_config(project_dir=tmp_path, overrides={
        "stacks_dir": FIXTURE_STACKS, "results_dir": tmp_path, "run_id": "rtt", "stacks": ["fixture-good"],
        "workloads": ["users"], "users_limits": [5], "vus": [2], "repetitions": 2, "warmup_s": 1.0,
        "duration_s": 1.5, "cold_start_requests": 1, "db_rtt_ms": ["0", "5ms"], "headroom": False, "ceiling_s": 1,
        "warmup_cap_s": 1})
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="test", log=lambda _: None)
    results = load(run_dir)
    assert results.network is not None and results.network.db_rtt_ms == [0.0, 5.0]
    assert [o["configured_rtt_ms"] for o in results.network.overhead] == [0.0, 5.0]
    assert results.network.overhead[1]["added_median_us"] >= 4500  # the proxy adds what it was asked to
    cells = {c.db_rtt_ms: c for c in results.cells}
    assert set(cells) == {0.0, 5.0} and all(c.status == "ok" and c.summary for c in cells.values())
    assert all(r.proxy_cpu_seconds is not None for c in cells.values() for r in c.repetitions)
    # fixture-good opens a connection per request: a handshake and a query, each at least one round trip
    near, far = (min(r.latency.p50_ms for r in cells[rtt].repetitions) for rtt in (0.0, 5.0))
    assert far >= near + 5, (near, far)
    assert cells[5.0].summary.rps.median < cells[0.0].summary.rps.median
    text = render_markdown(results)
    assert "## Throughput by database round trip" in text and "database 5 ms away" in text
    assert "Toxiproxy 2.5.0" in text
    # issue 22 item 3: each round trip's cells beside a ceiling measured through that round trip, over
    # min(VUs, pool size) = 2 connections; one query is one round trip, so at 5 ms 2 connections get ≤ 400/s
    ceilings = {rtt: results.ceiling_for(cell) for rtt, cell in cells.items()}
    assert {rtt: (c.db_rtt_ms, c.connections, len(c.runs_tps)) for rtt, c in ceilings.items()} == {
        0.0: (0.0, 2, 3), 5.0: (5.0, 2, 3)}
    assert ceilings[5.0].tps <= 400 < ceilings[0.0].tps
    assert "| users | limit=5 | 5 ms | 2 |" in text
