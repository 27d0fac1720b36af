"""`pgarena calibrate` for real: copies of a fixture stack through the run pipeline, the A/A check and its
report; and a user's mistakes as one line and exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pgarena.config.profiles import build_config
from pgarena.pipeline.calibrate import CALIBRATION_FILE, calibrate
from pgarena.results.store import load
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres, require_engine


def _pgarena(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pgarena", *args], cwd=PROJECT_DIR, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("args,needle", [
    (["--stack", "no-such-stack"], "--stack: unknown stack 'no-such-stack'"),
    (["--copies", "1"], "--copies 1: an A/A check needs at least 2 copies"),
    (["--vus", "x"], "--vus must be comma-separated integers"),
    (["--rewarm", "-1"], "--rewarm: Input should be greater than or equal to 0"),
])
def test_a_users_mistake_is_one_line_and_exit_2(tmp_path, args, needle):
    done = _pgarena("calibrate", "--stacks-dir", str(FIXTURE_STACKS), "--results-dir", str(tmp_path), *args)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and needle in lines[0], done.stderr
    assert "Traceback" not in done.stderr and not any(tmp_path.iterdir()), "nothing started, nothing written"


@needs_postgres
@pytest.mark.postgres
@pytest.mark.usefixtures("no_wire")  # reads no wire profile (tests/conftest.py)
def test_copies_of_one_stack_are_measured_and_checked(tmp_path, fixture_env, monkeypatch):
    require_engine("k6")
    config = build_config(project_dir=tmp_path, overrides={
        "ceiling_s": 0, "headroom": False, "engine": "k6", "stacks_dir": FIXTURE_STACKS,
        "results_dir": tmp_path / "results", "run_id": "aa", "workloads": ["static"], "vus": [2],
        "repetitions": 3, "max_repetitions": 3, "warmup_s": 1, "warmup_cap_s": 2, "duration_s": 1.0})
    lines: list[str] = []
    done = calibrate(config, stack_id="fixture-good", copies=2, project_dir=PROJECT_DIR, command_line="t",
                     log=lines.append, max_rounds=None)  # the config's 3 rounds, not the check's 200
    folder = tmp_path / "results" / "aa"
    assert done.folder == folder and done.run_dir == folder / "run" and done.report == folder / CALIBRATION_FILE
    assert sorted(p.name for p in (folder / "stacks").iterdir()) == ["fixture-good-aa1", "fixture-good-aa2"]
    results = load(done.run_dir)
    assert results.status == "complete" and results.schedule.kind == "interleaved"
    assert results.config["resolve_every_pair"] is True and results.config["max_repetitions"] == 3
    assert sorted(c.stack for c in results.cells) == ["fixture-good-aa1", "fixture-good-aa2"]
    assert all(r.round is not None and r.reference_samples >= 7 for c in results.cells for r in c.repetitions)
    table = done.check.tables[0]
    assert table.label == "static · 2 VUs · k6" and table.budget.windows == 6
    assert [(p.a, p.b) for p in table.pairs] == [("fixture-good-aa1", "fixture-good-aa2")]
    assert table.budget.beta is not None  # the probe read every window
    (phase,) = results.schedule.phases  # each window's wall time was measured: at least its 1 s of load
    assert phase.slot_seconds is not None and phase.slot_seconds >= 1.0
    assert done.check.slot_measured and done.check.seconds_per_window == phase.slot_seconds
    text = done.report.read_text()
    assert text.startswith("# pgarena calibrate — ") and "## What this machine can resolve" in text
    assert ("PASSED" in text) == done.check.passed
