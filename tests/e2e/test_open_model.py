"""Open model, SLO search, headroom, cold start and exact CPU accounting on a real (slow) stack (issue 5).

The fixture stack (stdlib ThreadingHTTPServer) serves a few hundred to a few thousand requests/s here, so
an arrival rate of 20,000 requests/s is certainly beyond it. In the closed model the generator waits for each answer before
sending the next (coordinated omission: the queue never forms); in the open model requests keep arriving
on schedule, the queue grows and latency measured from the scheduled start shows it.
"""

from __future__ import annotations

import pytest

from pgarena.config.profiles import build_config
from pgarena.contract.flags import DROPPED
from pgarena.load.engines import EngineUnavailable, get_engine
from pgarena.pipeline import runner
from pgarena.results.store import load
from pgarena.system import cgroups
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, needs_postgres, pytest.mark.usefixtures("no_wire")]


def _engine_or_skip(name: str) -> None:
    try:
        get_engine(name).binary  # noqa: B018
    except EngineUnavailable as exc:
        pytest.skip(f"{name} not installed here ({exc}); `make test` installs it via scripts/setup.sh")


def _run(tmp_path, engine: str, **overrides):
    config = build_config(project_dir=tmp_path, overrides={"ceiling_s": 0,
        "stacks_dir": FIXTURE_STACKS, "results_dir": tmp_path / "results", "run_id": engine, "engine": engine,
        "stacks": ["fixture-good"], "workloads": ["static"], "vus": [8], "arrival_rates": ["20000"],
        "open_connections": 50, "repetitions": 2, "warmup_s": 1, "duration_s": 2,
        "warmup_cap_s": 1, **overrides})  # one warm-up window: no assertion reads a steadier one
    lines: list[str] = []
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="test", log=lines.append)
    results = load(run_dir)
    closed, opened = sorted(results.cells, key=lambda c: c.model)
    assert (closed.model, opened.model) == ("closed", "open")
    assert closed.status == opened.status == "ok", (closed.error, opened.error, lines[-20:])
    return results, closed, opened


def test_open_model_beyond_capacity_shows_what_the_closed_model_hides(tmp_path, fixture_env):
    _engine_or_skip("oha")
    results, closed, opened = _run(tmp_path, "oha", slo_p99_ms=100.0, slo_budget_steps=4)
    peak = closed.summary.rps.median
    assert opened.arrival_rate == 20_000 and opened.arrival_rate_spec == "20000"
    assert opened.summary.latency_p99_ms.median > closed.summary.latency_p99_ms.median, \
        "queueing behind a saturated server must show in open-model p99"
    assert opened.summary.dropped_total > 0 and DROPPED in opened.flags
    assert opened.summary.rps.median < opened.arrival_rate, "the stack cannot keep up with 20,000 requests/s"

    (search,) = results.slo_searches
    assert search.stack == "fixture-good" and 1 <= len(search.curve) <= 4
    assert [p.passed for p in search.curve] == [p.latency.p99_ms <= 100 and p.error_rate <= 0.01 and p.timeouts == 0
                                                for p in search.curve]
    if search.answer_level is not None:
        assert search.answer_level == max(p.level for p in search.curve if p.passed)

    headroom = results.generator_headroom
    assert headroom is not None and headroom.rps > peak, "the generator outruns the slow fixture by far"

    cold = results.stack("fixture-good").cold_start
    assert cold is not None and len(cold.first_requests_ms) == 20 and cold.failed == 0
    assert cold.first_correct_seconds >= cold.healthy_seconds

    backend = cgroups.probe()
    if not isinstance(backend, str):
        assert closed.summary.cpu_accounting.startswith("cgroup")
    assert closed.summary.stack_cpu_us_per_request > 0 and closed.summary.db_cpu_us_per_request is not None

    report = (tmp_path / "results" / "oha" / "report.md").read_text()
    assert "## Max sustainable throughput under the SLO" in report and "## Cold start" in report
    assert "open model" in report and "Generator headroom" in report


def test_k6_open_model_counts_dropped_iterations(tmp_path, fixture_env):
    _engine_or_skip("k6")
    _, closed, opened = _run(tmp_path, "k6", headroom=False)
    assert opened.summary.dropped_total > 0, "k6 drops iterations that find no free VU"
    assert all(r.offered_requests == round(opened.arrival_rate * 2) for r in opened.repetitions)
