"""A failed build's reason, the same words for a build here and on an SSH host (pipeline/context.py
`mark_build_failed`, which lifecycle.py and remote.py both call)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pgarena.pipeline.context import BUILD_WONT_FIT, LOG_TAIL_LINES, mark_build_failed
from tests.unit.test_compare import make_stack


def _log(tmp_path, lines: int):
    path = tmp_path / "build.log"
    path.write_text("".join(f"line {i}\n" for i in range(lines)))
    return path


def test_a_build_that_exits_non_zero_says_the_code_and_keeps_the_log_tail(tmp_path):
    info, log = make_stack("s"), _log(tmp_path, LOG_TAIL_LINES + 5)
    mark_build_failed(info, log, timed_out=False, timeout_s=600, returncode=2, note="unused without a timeout")
    assert info.status == "build_failed"
    assert info.reason == f"build exit code 2 (log: {log})"
    assert info.log_tail.splitlines() == [f"line {i}" for i in range(5, LOG_TAIL_LINES + 5)]


def test_a_build_that_timed_out_says_the_limit_the_note_and_where(tmp_path):
    info, log = make_stack("s"), _log(tmp_path, 1)
    mark_build_failed(info, log, timed_out=True, timeout_s=299.6, returncode=124, where=" on bench-1",
                      note="the run's --budget keeps 70% of itself for measuring")
    assert info.reason == (f"build on bench-1 timed out after 300 s (the run's --budget keeps 70% of itself for "
                           f"measuring) (log: {log})")
    mark_build_failed(info, log, timed_out=True, timeout_s=60, returncode=124)
    assert info.reason == f"build timed out after 60 s (log: {log})"


def test_a_build_that_declines_to_start_says_its_own_reason(tmp_path):
    """Exit code 75 (BUILD_WONT_FIT): the build's last line is the reason, with the budget's note."""
    log = tmp_path / "build.log"
    log.write_text("checking the tool cache\nthe cold build takes about 60 min, more than the 780 s this build may take\n\n")
    info = make_stack("s")
    mark_build_failed(info, log, timed_out=False, timeout_s=780, returncode=BUILD_WONT_FIT,
                      note="the run's --budget of 40 min keeps 40% of itself for measuring")
    assert info.status == "build_failed"
    assert info.reason == ("not built: the cold build takes about 60 min, more than the 780 s this build may take "
                           f"(the run's --budget of 40 min keeps 40% of itself for measuring) (log: {log})")
    silent = tmp_path / "silent.log"
    silent.write_text("")
    mark_build_failed(info, silent, timed_out=False, timeout_s=780, returncode=BUILD_WONT_FIT)
    assert info.reason == f"build exit code 75 (log: {silent})", "without a line to say why, the plain exit code"


FRAISEQL_BUILD = Path(__file__).resolve().parents[2] / "stacks" / "rust-fraiseql" / "build.sh"


def test_fraiseql_declines_a_cold_build_it_cannot_finish_and_compiles_with_a_cached_tool(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PGARENA_BUILD_TIMEOUT_S": "780"}
    cold = subprocess.run(["sh", str(FRAISEQL_BUILD)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=30, check=False)
    assert cold.returncode == BUILD_WONT_FIT
    assert "its cold build takes about 60 min, more than the 780 s this build may take" in cold.stdout
    assert "pgarena verify --stacks rust-fraiseql" in cold.stdout
    tool = tmp_path / "cache" / "pgarena" / "tools" / "fraiseql-2.19.0" / "bin" / "fraiseql"
    tool.parent.mkdir(parents=True)
    tool.write_text('#!/bin/sh\necho "$@" > compiled-with\n')
    tool.chmod(0o755)
    warm = subprocess.run(["sh", str(FRAISEQL_BUILD)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=30, check=False)
    assert warm.returncode == 0, warm.stderr
    assert (tmp_path / "compiled-with").read_text().startswith("compile fraiseql.toml")


def test_one_long_build_leaves_time_for_the_stacks_after_it():
    """make bench on a fresh machine: rust-fraiseql's cold build ran until the budget's build share was spent and
    the 12 stacks after it were not built at all (bench1, 2026-11-27). Each build now leaves 30 s per later stack."""
    import time
    from types import SimpleNamespace

    from pgarena.pipeline.lifecycle import BUILD_BUDGET_SHARE, LATER_BRING_UP_S, build_timeout

    budget = 40 * 60
    ctx = SimpleNamespace(config=SimpleNamespace(budget_s=budget), deadline=time.monotonic() + budget - 600,
                          later_bring_ups=0)
    alone, why = build_timeout(ctx, 7200)  # 10 minutes into the run: 24 − 10 = 14 min of the build share left
    assert alone == pytest.approx(BUILD_BUDGET_SHARE * budget - 600, abs=2)
    assert why == "the run's --budget of 40 min keeps 40% of itself for measuring"
    ctx.later_bring_ups = 12
    limited, why = build_timeout(ctx, 7200)
    assert limited == pytest.approx(alone - 12 * LATER_BRING_UP_S, abs=2)
    assert why.endswith("and 6 min for the 12 stacks still to build")
    assert build_timeout(ctx, 60) == (60, None), "a build declared shorter than what is left keeps its own limit"
    ctx.later_bring_ups = 40
    assert build_timeout(ctx, 7200)[0] == 0.0
