"""`pgarena run --resume` re-checks a stack briefly when it is unchanged since its stored verification, and
verifies it whole again when its build inputs changed (issue 21 item 6)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pgarena.config.profiles import build_config
from pgarena.load.engines import EngineUnavailable, get_engine
from pgarena.pipeline import runner
from pgarena.results.models import RunResults
from pgarena.results.store import load, save
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres

pytestmark = [pytest.mark.postgres, needs_postgres, pytest.mark.usefixtures("no_wire"),
              pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")]
STACK = "fixture-good"


def _interrupt(run_dir: Path) -> RunResults:
    """The run as a kill during its last cell leaves it: status interrupted, that cell not stored."""
    results = load(run_dir)
    results.status = "interrupted"
    results.cells.pop()
    save(results, run_dir)
    return results


def _resume(run_dir: Path) -> tuple[list[str], RunResults]:
    lines: list[str] = []
    config, previous = runner.load_for_resume(run_dir)
    runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="test", log=lines.append,
                   resume=(run_dir, previous))
    return lines, load(run_dir)


@pytest.mark.parametrize("schedule", ["interleaved", "sequential"])
def test_an_unchanged_stack_is_checked_briefly_and_a_changed_one_verified_again(tmp_path, fixture_env, schedule):
    try:
        get_engine("k6").binary  # noqa: B018
    except EngineUnavailable as exc:
        pytest.skip(f"k6 not installed: {exc}")
    stacks = tmp_path / "stacks"
    shutil.copytree(FIXTURE_STACKS / STACK, stacks / STACK)
    subprocess.run(["git", "init", "-q", str(stacks)], check=True)  # untracked files are inputs too
    config = build_config(project_dir=tmp_path, overrides={
        "stacks_dir": stacks, "results_dir": tmp_path, "run_id": "resumed", "stacks": [STACK],
        "workloads": ["static", "users"], "users_limits": [5], "vus": [1, 2], "repetitions": 1, "warmup_s": 1.0,
        "duration_s": 1.0, "engine": "k6", "cold_start_requests": 1, "headroom": False,
        "warmup_cap_s": 1.0, "ceiling_s": 0, "schedule": schedule})  # nothing measured that is not asserted
    first_lines: list[str] = []
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="test",
                             log=first_lines.append)
    assert f"[{STACK}] verifying static, users" in first_lines
    first = load(run_dir)
    assert first.stack(STACK).build_inputs_sha256 is not None
    stored = [v.model_dump() for v in first.verifications]

    interrupted = _interrupt(run_dir)
    lines, resumed = _resume(run_dir)
    assert not any(line.startswith(f"[{STACK}] verifying") for line in lines), lines
    brief = [line for line in lines if "brief check instead" in line]
    assert brief and "static ✅" in brief[0] and "users ✅" in brief[0], lines
    assert [v.model_dump() for v in resumed.verifications] == stored, "the stored verification is kept"
    assert resumed.stack(STACK).cold_start == first.stack(STACK).cold_start, "the cold start is the first start's"
    assert resumed.status == "complete" and len(resumed.cells) == len(interrupted.cells) + 1

    server = stacks / STACK / "server.py"
    server.write_text(server.read_text() + "# changed after the interruption\n")
    _interrupt(run_dir)
    lines, again = _resume(run_dir)
    assert f"[{STACK}] resumed: its build inputs changed since its verification; verified again" in lines
    assert f"[{STACK}] verifying static, users" in lines
    assert again.stack(STACK).build_inputs_sha256 != first.stack(STACK).build_inputs_sha256
    assert again.status == "complete" and all(v.ok for v in again.verifications)
