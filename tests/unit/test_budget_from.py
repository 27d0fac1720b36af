"""`make bench`'s budget counts from the command's start, setup included (`--budget-from`): on a fresh machine
setup built oha and installed the tools for 9 minutes before the run's own 40-minute budget began."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from pgarena.cli import app
from pgarena.cli.common import BUDGET_FROM_PAST_S, budget_start

ROOT = Path(__file__).resolve().parents[2]


def test_budget_from_is_a_recent_unix_time_and_a_moment_ahead_is_now():
    now = 1_800_000_000.0
    assert budget_start(None, now) is None
    assert budget_start(now - 540, now) == now - 540
    assert budget_start(now + 2, now) == now, "a clock a moment ahead counts as now, never as a longer budget"
    for wrong in (now - BUDGET_FROM_PAST_S - 1, now + 60, 0.0):
        with pytest.raises(typer.Exit) as exc:
            budget_start(wrong, now)
        assert exc.value.exit_code == 2


@pytest.mark.parametrize("args", [["--budget-from", "5"], ["--budget-from", "soon"],
                                  ["--resume", "nowhere", "--budget-from", "{now}"]])
def test_a_wrong_budget_from_is_one_line_and_exit_code_2(args, tmp_path):
    args = [a.replace("{now}", str(int(time.time()))) for a in args]
    result = CliRunner().invoke(app, ["run", *args, "--results-dir", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "--budget-from" in result.output
    assert "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == [], "nothing was started"


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make to expand the Makefile's bench recipe")
def test_make_bench_passes_its_own_start_to_the_run():
    before = int(time.time())
    out = subprocess.run(["make", "-n", "bench"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    found = re.search(r"pgarena run --profile bench --budget-from (\d+)", out.stdout)
    assert found, out.stdout
    assert before <= int(found.group(1)) <= int(time.time())
