"""The whole pipeline on fixture stacks: a fake generator for exact numbers, and a real interrupted run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from pgarena.config.profiles import build_config
from pgarena.db.postgres import find_bin_dir, server_major
from pgarena.load.engines.oha import OhaEngine
from pgarena.load.warmup import STEADY_SPAN
from pgarena.pipeline import runner
from pgarena.report.markdown import render_markdown
from pgarena.results.models import SCHEMA_VERSION
from pgarena.results.store import load
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres

pytestmark = [pytest.mark.postgres, needs_postgres]
OHA_OK = PROJECT_DIR / "tests" / "fixtures" / "engines" / "oha_ok.json"


class FakeOha(OhaEngine):
    """Prints a real oha JSON document instead of generating load (hyperfine's MockExecutor idea)."""

    lead_in = False  # no per-request file to cut a window from its lead-in: re-warms stay runs of their own

    @property
    def binary(self) -> Path:
        return Path("/bin/cat")

    def version(self) -> str:
        return "fake-oha"

    def command(self, spec, workdir, stem):
        return ["/bin/cat", str(OHA_OK)]


def test_pipeline_records_every_outcome_and_renders_the_report(tmp_path, monkeypatch, fixture_env):
    monkeypatch.setattr(runner, "get_engine", lambda name: FakeOha())
    config = build_config(project_dir=tmp_path, overrides={"ceiling_s": 1,  # 3 pgbench runs of 1 s per condition
        "stacks_dir": FIXTURE_STACKS, "results_dir": tmp_path / "results", "run_id": "r1",
        "stacks": ["fixture-good", "fixture-exits", "fixture-typo", "fixture-faulty"],
        "workloads": ["perf-test", "static"], "perf_test_rows": [1], "vus": [1, 4], "repetitions": 2,
        "warmup_s": 0.1, "duration_s": 0.1,
    })
    lines: list[str] = []
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="test", log=lines.append)
    results = load(run_dir)
    assert results.status == "complete" and results.schema_version == SCHEMA_VERSION
    status = {s.id: s for s in results.stacks}
    assert status["fixture-good"].status == "ok" and status["fixture-good"].startup_seconds > 0
    assert status["fixture-exits"].status == "start_failed"
    assert "exited with code 3" in status["fixture-exits"].reason
    assert "cannot start" in status["fixture-exits"].log_tail
    assert status["fixture-typo"].status == "config_error"
    assert "unknown key 'workload'" in status["fixture-typo"].reason
    assert sum("fixture-typo" in line for line in lines) == 1  # one clear message

    good = [c for c in results.cells if c.stack == "fixture-good"]
    assert [(c.workload, c.parameter, c.vus) for c in good] == [
        ("perf-test", 1, 1), ("perf-test", 1, 4), ("static", None, 1), ("static", None, 4)]
    expected = json.loads(OHA_OK.read_text())
    expected_requests = sum(expected["statusCodeDistribution"].values())
    for cell in good:
        assert len(cell.repetitions) == 2 and cell.status == "ok"
        assert cell.summary.requests_total == 2 * expected_requests
        assert cell.summary.latency_p99_ms.median == pytest.approx(expected["latencyPercentiles"]["p99"] * 1000)
        assert (run_dir / cell.repetitions[0].raw_output).exists()
        assert all(r.pgarena_cpu_seconds is not None and r.pgarena_cpu_seconds >= 0 for r in cell.repetitions)
        assert cell.summary.generator_set_cpu_fraction >= cell.summary.generator_cpu_fraction
    ceilings = {c.vus: results.ceiling_for(c) for c in good if c.workload == "perf-test"}
    assert {vus: (c.connections, c.db_rtt_ms, len(c.runs_tps)) for vus, c in ceilings.items()} == {
        1: (1, None, 3), 4: (4, None, 3)}, "min(VUs, pool size) connections, direct, 3 runs"
    assert all(c.tps_low <= c.tps <= c.tps_high for c in ceilings.values())
    assert results.ceiling("static", None) is None and results.ceiling_unavailable is None
    faulty = {(c.workload, c.vus): c for c in results.cells if c.stack == "fixture-faulty"}
    assert "columns-wrong" in faulty[("perf-test", 1)].flags
    assert faulty[("static", 1)].status == "failed" and "verification failed" in faulty[("static", 1)].error

    report = (run_dir / "report.md").read_text()
    assert report == render_markdown(results)
    assert "### perf-test — 4 Virtual Users, 1 Record" in report
    assert "unknown key 'workload'" in report and "start_failed" in report
    assert (run_dir / "postgres.log").exists() and not (run_dir / "postgres").exists()
    # issue 22 item 17: the server's version (the newest installed: find_bin_dir) and the pgbench beside it
    assert results.environment.postgres_version == results.database.version
    assert results.environment.postgres_version.split(".")[0] == str(server_major(find_bin_dir()))
    assert results.environment.toolchains["pgbench --version"].startswith("pgbench (PostgreSQL) ")
    assert f"| PostgreSQL | {results.database.version} |" in report


@pytest.mark.usefixtures("no_wire")  # reads no wire profile (tests/conftest.py)
@pytest.mark.parametrize("engine", ["oha", "k6"])
def test_wrong_answers_under_load_fail_the_sampled_checks(tmp_path, fixture_env, engine):
    from pgarena.load.engines import EngineUnavailable, get_engine

    try:
        get_engine(engine).binary  # noqa: B018
    except EngineUnavailable as exc:
        pytest.skip(f"{engine} not installed: {exc}")
    config = build_config(project_dir=tmp_path, overrides={"ceiling_s": 0,
        "stacks_dir": FIXTURE_STACKS, "results_dir": tmp_path, "run_id": engine, "stacks": ["fixture-degrading"],
        "workloads": ["users"], "users_limits": [5], "vus": [4], "repetitions": 1, "warmup_s": 1.0,
        "duration_s": 1.5, "engine": engine, "warmup_cap_s": 1, "headroom": False})
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="test", log=lambda _: None)
    (cell,) = load(run_dir).cells
    rep = cell.repetitions[0]
    # the fixture answers wrongly whenever another request is in flight: sampled answers are wrong (how many
    # depends on how often the sampler's request meets another one)
    assert rep.checks_total > 0 and rep.checks_failed >= 1, (rep.checks_total, rep.checks_failed)
    assert "checks-failed>1%" in cell.flags
    assert rep.errors.total == 0  # every status was 200: only the checks can see the wrong answers


@pytest.mark.usefixtures("no_wire")  # reads no wire profile (tests/conftest.py)
def test_tx_cell_checks_the_invariants_and_fails_on_lost_writes(tmp_path, fixture_env):
    config = build_config(project_dir=tmp_path, overrides={"ceiling_s": 0,
        "stacks_dir": FIXTURE_STACKS, "results_dir": tmp_path, "run_id": "tx", "stacks": ["fixture-good"],
        "workloads": ["tx"], "vus": [4], "repetitions": 2, "warmup_s": 1, "duration_s": 1, "engine": "k6",
        "warmup_cap_s": 1, "headroom": False})
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="test", log=lambda _: None)
    (cell,) = load(run_dir).cells
    assert cell.status == "ok" and cell.tx_invariants.holds, (cell.error, cell.flags)
    assert cell.tx_invariants.history_rows_added == cell.tx_invariants.answered_200 > cell.summary.requests_total // 2
    assert "✅ hold" in (run_dir / "report.md").read_text()


def test_report_command_rerenders_from_stored_json_only(tmp_path, monkeypatch, fixture_env):
    monkeypatch.setattr(runner, "get_engine", lambda name: FakeOha())
    config = build_config(project_dir=tmp_path, overrides={"ceiling_s": 0,
        "stacks_dir": FIXTURE_STACKS, "results_dir": tmp_path, "run_id": "r2", "stacks": ["fixture-good"],
        "workloads": ["static"], "vus": [2], "repetitions": 1, "warmup_s": 0.1, "duration_s": 0.1})
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="test", log=lambda _: None)
    original = (run_dir / "report.md").read_text()
    (run_dir / "report.md").unlink()
    done = subprocess.run([sys.executable, "-m", "pgarena", "report", str(run_dir)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (run_dir / "report.md").read_text() == original


def test_ctrl_c_keeps_finished_cells_stops_everything_and_resume_completes(tmp_path, fixture_env):
    """A real run (k6) interrupted mid-cell after its first cell: results are kept, the cluster and stack
    stop; `run --resume` then redoes only the missing cells and ends with the uninterrupted run's set."""
    argv = [sys.executable, "-m", "pgarena", "run", "--stacks-dir", str(FIXTURE_STACKS), "--stacks", "fixture-good",
            "--workloads", "static", "--vus", "1,2,3,4", "--duration", "1", "--warmup", "1", "--repetitions", "1",
            "--warmup-cap", "1", "--engine", "k6", "--no-headroom", "--ceiling-seconds", "0",
            "--results-dir", str(tmp_path), "--run-id", "int",
            "--schedule", "sequential"]
    # As from a terminal: a test run started in the background by a non-interactive shell inherits SIGINT
    # ignored (POSIX), and Python keeps an ignored SIGINT ignored, so restore the default for the child.
    proc = subprocess.Popen(argv, cwd=PROJECT_DIR, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    results_path = tmp_path / "int" / "results.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if results_path.exists() and json.loads(results_path.read_text()).get("cells"):
            break
        assert proc.poll() is None, proc.stdout.read()
        time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("no cell finished within 120 s")
    descendants = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, output
    results = load(tmp_path / "int")
    assert results.status == "interrupted"
    assert 1 <= len(results.cells) < 4 and all(c.summary for c in results.cells)
    time.sleep(0.5)
    alive = [p for p in descendants if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, [p.cmdline() for p in alive]
    assert (tmp_path / "int" / "report.md").read_text().startswith("# pgarena run int — **interrupted**")

    kept = {c.key: c for c in results.cells}
    done = subprocess.run([sys.executable, "-m", "pgarena", "run", "--resume", str(tmp_path / "int")], cwd=PROJECT_DIR,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{len(kept)} cell(s) kept" in done.stdout
    # not a terminal: line-oriented progress, counting the kept cells as done
    assert f"(cell {len(kept) + 1}/4" in done.stdout and "ETA" in done.stdout
    resumed = load(tmp_path / "int")
    assert resumed.status == "complete" and len(resumed.resumed) == 1
    keys = [c.key for c in resumed.cells]
    assert sorted(keys) == sorted(("fixture-good", "static", None, "closed", str(v)) for v in (1, 2, 3, 4))
    for key, cell in kept.items():
        assert next(c for c in resumed.cells if c.key == key) == cell, "finished cells are kept as they were"
    assert all(c.status == "ok" and c.summary for c in resumed.cells)
    again = subprocess.run([sys.executable, "-m", "pgarena", "run", "--resume", str(tmp_path / "int")],
                           cwd=PROJECT_DIR, capture_output=True, text=True, timeout=60)
    assert again.returncode == 2 and "already complete" in again.stderr


@pytest.mark.usefixtures("no_wire")  # reads no wire profile (tests/conftest.py)
def test_a_declared_min_warmup_is_the_least_warmup_before_the_stacks_first_cell(tmp_path, monkeypatch, fixture_env):
    """Every cell warms until steady (warmup.py); a stack's min_warmup_s only raises the least warm-up of its first
    cell after the start (a JIT compiles the server's shared paths then)."""
    stacks_dir = tmp_path / "stacks"
    (stacks_dir / "fixture-jit").mkdir(parents=True)
    (stacks_dir / "fixture-jit" / "stack.toml").write_text(
        f'extends = "{FIXTURE_STACKS / "fixture-good"}"\nid = "fixture-jit"\n'
        f'[run]\ncommand = \'exec "$FIXTURE_PYTHON" {FIXTURE_STACKS / "fixture-good" / "server.py"}\'\n'
        'min_warmup_s = 0.4\n')
    monkeypatch.setattr(runner, "get_engine", lambda name: FakeOha())
    config = build_config(project_dir=tmp_path, overrides={"ceiling_s": 0,
        "stacks_dir": stacks_dir, "results_dir": tmp_path / "results", "run_id": "jit", "workloads": ["static", "users"],
        "users_limits": [5], "vus": [1, 2], "repetitions": 1, "warmup_s": 0.1, "duration_s": 0.1,
        "schedule": "sequential"})
    results = load(runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="t", log=lambda _: None))
    assert [(c.workload, c.vus, c.warmup_seconds) for c in results.cells] == [
        ("static", 1, 0.4), ("static", 2, 0.1), ("users", 1, 0.1), ("users", 2, 0.1)]
    assert all(c.warmup.minimum_seconds == c.warmup_seconds for c in results.cells)
    # the fake generator answers the same every window: steady after the two spans of windows the rule compares
    assert all(c.warmup.steady and len(c.warmup.windows_rps) == STEADY_SPAN for c in results.cells)
    assert results.stack("fixture-jit").warmup_seconds == max(c.warmup.seconds for c in results.cells)
    assert results.stack("fixture-jit").warmup_steady is True



@pytest.mark.usefixtures("no_wire")  # reads no wire profile (tests/conftest.py)
def test_a_stack_returning_numeric_as_a_float_is_flagged_and_ranked_among_all_only(tmp_path, monkeypatch, fixture_env):
    from pgarena.analysis.ranking import UNRANKED
    from pgarena.analysis.verdicts import run_verdicts

    config = build_config(project_dir=tmp_path, overrides={"ceiling_s": 0,
        "stacks_dir": FIXTURE_STACKS, "results_dir": tmp_path, "run_id": "numeric",
        "stacks": ["fixture-good", "fixture-numeric-float"], "workloads": ["perf-test"], "perf_test_rows": [10],
        "vus": [2], "repetitions": 2, "warmup_s": 0.5, "duration_s": 0.5, "warmup_cap_s": 3, "headroom": False,
    })
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="test", log=lambda _: None)
    results = load(run_dir)
    verification = results.verification("fixture-numeric-float", "perf-test")
    assert verification.wrong_columns == ["numeric_val"]
    flags = {cell.stack: [f for f in cell.flags if f != "noisy"] for cell in results.cells}
    assert flags == {"fixture-numeric-float": ["columns-wrong"], "fixture-good": []}
    (verdict,) = run_verdicts(results).values()
    assert verdict.rank_exact == {"fixture-good": "1", "fixture-numeric-float": UNRANKED}
    assert verdict.rank_all["fixture-numeric-float"] != UNRANKED, "❌ columns: ranked among all stacks"
    assert verdict.wrong_columns == {"fixture-numeric-float": ["numeric_val"]}
    report = (run_dir / "report.md").read_text()
    assert "fixture-numeric-float · `numeric_val` ❌" in report and "other digits" in report


@pytest.mark.usefixtures("no_wire")  # reads no wire profile (tests/conftest.py)
def test_a_table_whose_least_rounds_no_longer_fit_the_budget_is_not_measured_and_says_so(tmp_path, monkeypatch,
                                                                                       fixture_env):
    """With the budget spent when the headline ends (a reserve of a minute is kept for the closing checks, and
    the budget is shorter), the tables after it are left out before their first round, and the report names them."""
    monkeypatch.setattr(runner, "get_engine", lambda name: FakeOha())
    config = build_config(project_dir=tmp_path, overrides={"ceiling_s": 0,
        "stacks_dir": FIXTURE_STACKS, "results_dir": tmp_path / "results", "run_id": "spent", "stacks": ["fixture-good"],
        "workloads": ["static", "users"], "users_limits": [5], "vus": [1], "repetitions": 2, "warmup_s": 0.1,
        "duration_s": 0.1, "budget_s": 30})
    lines: list[str] = []
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="t", log=lines.append)
    results = load(run_dir)
    assert results.status == "complete"
    headline, closed = results.schedule.phases
    assert headline.rounds >= 1 and not headline.not_measured, "the headline is always taken"
    assert (closed.rounds, closed.windows, closed.stop_reason) == (0, 0, "budget")
    assert closed.not_measured == ["users limit5 @ 1 VU"]
    assert [c.workload for c in results.cells] == ["static"], "no cell of a table that was not measured"
    assert any("1 table(s) not measured, their least rounds no longer fit the budget: users limit5 @ 1 VU" in line
               for line in lines)
    report = (run_dir / "report.md").read_text()
    assert "> 1 table(s) not measured: the time budget was spent before their least rounds (users limit5 @ 1 VU)" \
        in report
