"""The resilience run through the real pipeline (issue 14), shortened: a fixture stack under k6 load, each
fault injected into the managed PostgreSQL, timelines and recovery read back, tx invariants across faults."""

from __future__ import annotations

import pytest

from pgarena.config.profiles import build_config
from pgarena.pipeline import resilience, runner
from pgarena.report.markdown import render_markdown
from pgarena.results.store import load
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres, require_load_path

pytestmark = [pytest.mark.postgres, needs_postgres, pytest.mark.usefixtures("no_wire")]


def test_each_fault_gets_a_timeline_a_recovery_and_the_stack_answers_again(tmp_path, fixture_env, monkeypatch):
    require_load_path("k6")
    # a shorter window than the profile's: 2 s of baseline, the fault at 3 s, 4 s after it (every fault here
    # ends within 2 s; whether the stack answers again is checked after the window, up to RECOVERY_CHECK_S)
    monkeypatch.setattr(resilience, "WINDOW_S", 7.0)
    monkeypatch.setattr(resilience, "FAULT_AT_S", 3.0)
    monkeypatch.setattr(resilience, "BASELINE_S", 2.0)
    monkeypatch.setattr(resilience, "STALL_S", 1.0)
    monkeypatch.setattr(resilience, "RESET_S", 1.0)
    config = build_config(profile="resilience", project_dir=tmp_path, overrides={
        "stacks_dir": FIXTURE_STACKS, "results_dir": tmp_path, "run_id": "res", "stacks": ["fixture-good"],
        "vus": [4], "repetitions": 2, "duration_s": 1.5, "cold_start_requests": 1, "headroom": False,
        "ceiling_s": 0, "warmup_cap_s": 1})  # one warm-up window: the peak only sets the faults' rate
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="test", log=lambda _: None)
    results = load(run_dir)
    faults = {(r.workload, r.fault): r for r in results.resilience}
    assert set(faults) == {(w, f) for w in ("users", "tx") for f in resilience.FAULTS}
    for (workload, fault), r in faults.items():
        assert r.status != "not-run", (workload, fault, r.reason)
        assert r.recovered_without_restart is True, (workload, fault)
        assert r.timeline_ok and len(r.timeline_ok) == len(r.timeline_failed)
        assert r.rate_rps and r.rate_rps == pytest.approx(0.5 * r.peak_rps, rel=0.01)
        assert 2.9 <= r.fault_start_s <= 3.5 and r.fault_end_s >= r.fault_start_s
        assert r.failed_requests is not None  # k6 records failed requests too
    assert faults[("users", "stall")].fault_end_s - faults[("users", "stall")].fault_start_s >= 1.0
    assert faults[("users", "pg-restart")].failed_requests > 0  # a restart closes every connection
    for fault in resilience.FAULTS:
        inv = faults[("tx", fault)].tx_invariants
        assert inv is not None and inv.holds, (fault, inv)
    text = render_markdown(results)
    assert "## Resilience: faults under load" in text and "### stall on tx" in text
