"""The wire observer in the real pipeline (issue 25): `pgarena verify` of real Go stacks through it, and a
`pgarena run` whose measured stack never sees it (a second, brief start is observed instead)."""

from __future__ import annotations

import shutil

import pytest

from pgarena.config.profiles import build_config
from pgarena.pipeline import runner
from pgarena.report.markdown import render_markdown
from pgarena.results.store import load
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres, require_load_path

pytestmark = [pytest.mark.postgres, needs_postgres]


def test_verify_counts_each_drivers_round_trips_per_transaction(tmp_path):
    if shutil.which("go") is None:
        pytest.skip("Go is not on PATH: it builds the Go stacks and the wire observer")
    config = build_config(project_dir=tmp_path, overrides={
        "stacks_dir": PROJECT_DIR / "stacks", "results_dir": tmp_path, "run_id": "wire",
        "stacks": ["go-nethttp-pgx-simple", "go-nethttp-libpq"], "workloads": ["tx"], "cold_start_requests": 1})
    run_dir = runner.execute(config, kind="verify", project_dir=PROJECT_DIR, command_line="test", log=lambda _: None)
    results = load(run_dir)
    simple = results.verification("go-nethttp-pgx-simple", "tx").wire
    libpq = results.verification("go-nethttp-libpq", "tx").wire
    assert simple is not None and libpq is not None
    # pgx's simple protocol: BEGIN, 5 statements, COMMIT, one Query each; lib/pq: two round trips per statement
    assert simple.round_trips_per_request == 7 and simple.client_messages_per_request == {"Query": 7}
    assert libpq.round_trips_per_request == 12 and libpq.unnamed_parses_per_request == 5
    assert simple.answered == simple.requests == 20 and not simple.across_requests and not libpq.across_requests
    assert simple.added_per_request("transaction") == 2 and libpq.added_per_request("session") == 0
    text = render_markdown(results)
    assert "## On the wire" in text and "- go-nethttp-libpq · tx: `BEGIN READ WRITE` × 1 per request" in text


def test_a_run_observes_a_second_start_and_measures_the_stack_direct(tmp_path, fixture_env):
    require_load_path("oha")
    config = build_config(project_dir=tmp_path, overrides={
        "stacks_dir": FIXTURE_STACKS, "results_dir": tmp_path, "run_id": "wire-run", "stacks": ["fixture-good"],
        "workloads": ["users"], "users_limits": [5], "vus": [2], "repetitions": 1, "warmup_s": 1.0,
        "duration_s": 1.0, "cold_start_requests": 1, "headroom": False, "ceiling_s": 0, "warmup_cap_s": 1})
    lines: list[str] = []
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="test", log=lines.append)
    results = load(run_dir)
    wire = results.verification("fixture-good", "users").wire
    assert wire is not None, results.verification("fixture-good", "users").wire_unavailable
    # fixture-good opens a connection per request: each is new, with its own set-up round trips
    assert wire.connections_opened >= wire.requests and wire.setup_round_trips >= wire.requests
    assert wire.round_trips_per_request >= 1 and wire.statements_per_request >= 1
    assert any("a second start through the observer" in line for line in lines)
    assert (run_dir / "logs" / "fixture-good" / "run-wire.log").exists()
    assert all("pipelines-across-requests" not in c.flags for c in results.cells)


def test_wire_under_load_profiles_the_second_start_under_the_runs_generator(tmp_path, fixture_env):
    """`--wire-under-load`: after the bursts, a window of oha at the highest VU count through the observer.
    fixture-good opens a connection per request (churn: one new connection per request, no more open at once
    than requests in flight); fixture-pooled serves from a fixed pool opened at start (none opened under load, at
    most the pool open). Both send one statement per users request."""
    require_load_path("oha")
    config = build_config(project_dir=tmp_path, overrides={
        "stacks_dir": FIXTURE_STACKS, "results_dir": tmp_path, "run_id": "wire-load",
        "stacks": ["fixture-good", "fixture-pooled"], "workloads": ["users"], "users_limits": [5], "vus": [1, 4],
        "pool_size": 3, "repetitions": 1, "warmup_s": 1.0, "duration_s": 1.0, "cold_start_requests": 1,
        "headroom": False, "ceiling_s": 0, "warmup_cap_s": 1, "wire_under_load": True, "wire_load_s": 3.0,
        "wire_load_max_requests": 5000})
    lines: list[str] = []
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="test", log=lines.append)
    results = load(run_dir)
    profiles = {}
    for stack in ("fixture-good", "fixture-pooled"):
        verification = results.verification(stack, "users")
        burst, under = verification.wire, verification.wire_under_load
        assert burst is not None and under is not None, verification.wire_under_load_unavailable
        assert under.load is not None and under.load.vus == 4 and under.load.engine == "oha"
        assert under.requests > burst.requests + burst.concurrent_requests and under.answered == under.requests
        # NOTE: at most one connection per VU in use, plus, with churn, the one each VU's stack connection is still
        # closing when its next request opens a new one (the observer sees the close a moment later: 5 once in CI)
        assert under.load.peak_open_connections <= 2 * 4 and under.observer_cpu_seconds is not None
        profiles[stack] = (burst, under)
    good_burst, good = profiles["fixture-good"]
    # a new connection for each request, in the same round trips (BEGIN, the query, COMMIT) as in the burst
    assert good.round_trips_per_request == good_burst.round_trips_per_request, (good_burst, good)
    assert good.connections_opened >= good.answered and good.load.connections_closed >= good.answered - 4
    _, pooled = profiles["fixture-pooled"]
    assert pooled.connections_opened == 0 and pooled.load.connections_closed == 0
    assert pooled.load.pool_size == 3 and pooled.load.peak_open_connections == 3  # the pool it was given
    assert pooled.connections <= 3
    assert pooled.round_trips_per_request == 1  # prepared in the bursts (psycopg's threshold): one flight each
    assert any("users under load (4 VUs" in line for line in lines)
    text = render_markdown(results)
    assert "Under load (`--wire-under-load`)" in text and "| fixture-pooled | users | 4 VUs · " in text
    assert all(c.summary is not None for c in results.cells)  # the measured start was loaded as always
