"""--pool-size through the real pipeline (issue 14): the stack is started once per pool size with that
PGARENA_POOL_SIZE, checked after its restart, measured at each pool size, and the report tables it."""

from __future__ import annotations

import pytest

from pgarena.config.profiles import build_config
from pgarena.load.engines import EngineUnavailable, get_engine
from pgarena.pipeline import runner
from pgarena.report.markdown import render_markdown
from pgarena.results.store import load
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres

pytestmark = [pytest.mark.postgres, needs_postgres, pytest.mark.usefixtures("no_wire")]


def test_each_pool_size_is_its_own_start_of_the_stack(tmp_path, fixture_env):
    try:
        get_engine("oha").binary  # noqa: B018
    except EngineUnavailable as exc:
        pytest.skip(f"oha is not installed: {exc}")
    config = build_config(project_dir=tmp_path, overrides={
        "stacks_dir": FIXTURE_STACKS, "results_dir": tmp_path, "run_id": "pool", "stacks": ["fixture-pooled"],
        "workloads": ["users"], "users_limits": [5], "vus": [4], "repetitions": 2, "warmup_s": 1.0,
        "warmup_cap_s": 3.0, "duration_s": 1.0, "cold_start_requests": 1, "pool_sizes": [2, 4],
        "headroom": False, "ceiling_s": 0})
    lines: list[str] = []
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="test", log=lines.append)
    results = load(run_dir)
    cells = {c.pool_size: c for c in results.cells}
    assert set(cells) == {2, 4} and all(c.status == "ok" and c.summary and c.pool_size_varied for c in cells.values())
    # fixture-pooled opens exactly PGARENA_POOL_SIZE connections at start: the peak shows what it was given
    assert [cells[p].peak_connections for p in (2, 4)] == [2, 4]
    assert not any("pool-exceeded" in c.flags for c in cells.values())
    stack = results.stack("fixture-pooled")
    assert [(s.pool_size, s.peak_connections, s.problem) for s in stack.pool_starts] == [(2, 2, None), (4, 4, None)]
    assert stack.pool_starts[1].verified == {"users": True}  # checked after its restart
    assert sum("building" in line or "verifying" in line for line in lines) == 1  # built and verified once
    assert [p.name for p in results.schedule.phases] == ["headline · pool 2", "headline · pool 4"]
    text = render_markdown(results)
    assert "## Throughput by pool size" in text and "| pool size 2 | pool size 4 | pool 4 / pool 2 |" in text
    assert "users — 4 Virtual Users, pool size 4 configured, limit 5" in text
