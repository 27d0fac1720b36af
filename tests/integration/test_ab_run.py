"""An A/B with fixture stacks, end to end: two versions built and verified as stacks, measured in the same
interleaved rounds against a real PostgreSQL with real oha, judged by the gate; and the history store on a
real PostgreSQL (--history-url).

The fixture stack answers `static` after a fixed sleep (FIXTURE_DRIFT with no drift): the base sleeps 1 ms,
the head version (stack.toml [versions]) 60 ms, so the head is truly slower by far more than the margin.
"""

from __future__ import annotations

import pytest

from pgarena.analysis.abgate import GATE_MIN_BLOCKS, GATE_MIN_ROUNDS, ab_gate
from pgarena.config.profiles import build_config
from pgarena.history.points import run_points
from pgarena.history.store import open_store
from pgarena.load.engines import get_engine
from pgarena.load.engines.base import EngineUnavailable
from pgarena.pipeline import runner
from pgarena.pipeline.ab import prepare_ab
from pgarena.results.store import load
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres

pytestmark = [needs_postgres, pytest.mark.postgres, pytest.mark.usefixtures("no_wire")]


def _stack(folder, epoch):
    (folder / "fx").mkdir(parents=True)
    good = FIXTURE_STACKS / "fixture-good"
    (folder / "fx" / "stack.toml").write_text(
        f'extends = "{good}"\nid = "fx"\n'
        f'[run]\ncommand = \'exec "$FIXTURE_PYTHON" {good / "server.py"}\'\n'
        f'[run.env]\nFIXTURE_DRIFT = "{epoch}:1:0"\n'
        f'[versions.slower]\ndriver_version = "3-slower"\nrun_env = {{ FIXTURE_DRIFT = "{epoch}:60:0" }}\n')
    return folder


def _ab(tmp_path, head: str, run_id: str, workloads: tuple[str, ...] = ("static",), log=lambda _: None, **more):
    try:
        get_engine("oha").binary  # noqa: B018
    except EngineUnavailable as exc:
        pytest.skip(f"oha is not installed: {exc}")
    plan = prepare_ab(_stack(tmp_path / f"stacks-{run_id}", tmp_path / f"epoch-{run_id}"), "fx", "current", head,
                      tmp_path / "results" / ".ab" / run_id)
    config = build_config(project_dir=tmp_path, overrides={
        "ceiling_s": 0, "stacks_dir": plan.stacks_dir, "results_dir": tmp_path / "results", "run_id": run_id,
        "stacks": [plan.base.stack_id, plan.head.stack_id], "workloads": list(workloads), "vus": [4], "repetitions": 3,
        "max_repetitions": 8, "warmup_s": 0.3, "duration_s": 0.5, "warmup_cap_s": 2, "cell_budget_s": 10,
        "headroom": False, "engine": "oha", "schedule": "interleaved", "schedule_seed": 5, "seed": 0,
        "rewarm_s": 0.2, "baseline": plan.base.stack_id, "equivalence_margin": 0.05, "regression_margin": 0.05,
        **more})
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="t", log=log)
    return plan, load(run_dir)


def test_a_slower_head_fails_the_gate_and_both_sides_were_verified(tmp_path, fixture_env):
    plan, results = _ab(tmp_path, "slower", "ab-slow")
    assert {s.id: s.status for s in results.stacks} == {"fx-base": "ok", "fx-head": "ok"}
    assert {v.stack for v in results.verifications} == {"fx-base", "fx-head"}
    gate = ab_gate(results, plan.base.stack_id, plan.head.stack_id, 0.05)
    assert gate.outcome == "regression", gate.sentence()
    interval = gate.tables[0].interval
    assert interval is not None and 0.3 < interval.ratio < 0.8 and interval.high < 0.95
    assert interval.rounds >= GATE_MIN_ROUNDS and interval.blocks is None


def test_an_ab_restarted_between_blocks_is_judged_over_them(tmp_path, fixture_env):
    """restart_every 3: both sides stopped and started again (on their ports, warmed again) before rounds 4 and 7;
    the gate decides from its three blocks."""
    lines: list[str] = []
    plan, results = _ab(tmp_path, "slower", "ab-blocks", log=lines.append, restart_every=3)
    gate = ab_gate(results, plan.base.stack_id, plan.head.stack_id, 0.05)
    assert gate.outcome == "regression", gate.sentence()
    interval = gate.tables[0].interval
    assert interval is not None and interval.blocks is not None and interval.blocks >= GATE_MIN_BLOCKS
    assert interval.rounds == 3 * interval.blocks and interval.high < 0.95
    logs = tmp_path / "results" / "ab-blocks" / "logs"
    for side in ("fx-base", "fx-head"):
        assert (logs / side / "run-block-2.log").is_file() and (logs / side / "run-block-3.log").is_file()
    text = "\n".join(lines)
    assert "block 2: restarting" in text and "restarted for block 3" in text and "after the restart" in text


def test_a_self_ab_is_never_a_regression_and_races_its_tables_in_one_phase(tmp_path, fixture_env):
    plan, results = _ab(tmp_path, "current", "ab-self", workloads=("static", "users"))
    gate = ab_gate(results, plan.base.stack_id, plan.head.stack_id, 0.05)
    assert gate.exit_code in (0, 2), gate.sentence()
    assert len(gate.tables) == 2
    for table in gate.tables:
        assert table.interval is not None and table.interval.high > 0.95  # (but for the stated ≤ 5 % of runs)
    # self-ab-10: perf-test's phase spent its 7-minute share unsettled, users' settled in 8 rounds, and the run
    # ended with 6 minutes unspent; an A/B's tables now share one phase, so a settled one leaves its time
    assert results.schedule is not None and [(p.name, p.cells) for p in results.schedule.phases] == [("headline", 2)]


def test_history_on_postgresql(managed_db):
    from tests.fixtures.report_run import sample_results

    points = run_points(sample_results())
    store = open_store(PROJECT_DIR, managed_db.admin_url)
    try:
        store.record(points)
        store.record(points)  # replaced, not doubled
        assert sorted(store.points("go-fast"), key=lambda p: p.cell) == sorted(
            (p for p in points if p.stack == "go-fast"), key=lambda p: p.cell)
    finally:
        with store.transaction():
            store.connection.cursor().execute("drop table pgarena_history")
        store.close()


def test_the_ab_command_gates_writes_the_summary_and_records_the_history(tmp_path, fixture_env):
    from typer.testing import CliRunner

    from pgarena.cli import app

    try:
        get_engine("oha").binary  # noqa: B018
    except EngineUnavailable as exc:
        pytest.skip(f"oha is not installed: {exc}")
    stacks = _stack(tmp_path / "stacks", tmp_path / "epoch")
    results_dir = tmp_path / "results"
    done = CliRunner().invoke(app, [
        "ab", "fx", "--head", "slower", "--fail-on-regression", "5%", "--profile", "quick", "--workloads", "static",
        "--vus", "4", "--duration", "0.5", "--budget", "5m", "--restart-every", "3", "--run-id", "cli", "--stacks-dir", str(stacks),
        "--results-dir", str(results_dir), "--summary", str(tmp_path / "comment.md")])
    assert done.exit_code == 1, done.output
    summary = (results_dir / "cli" / "ab-summary.md").read_text()
    assert summary == (tmp_path / "comment.md").read_text()
    assert summary.startswith("### pgarena ab fx: current (3) → slower (3-slower)") and "❌ regression" in summary
    store = open_store(results_dir)
    assert {(p.stack, p.version) for p in store.points()} == {("fx", "current (3)"), ("fx", "slower (3-slower)")}
    store.close()
