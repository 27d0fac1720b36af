"""A failed build's reason, the same words for a build here and on an SSH host (pipeline/context.py
`mark_build_failed`, which lifecycle.py and remote.py both call)."""

from __future__ import annotations

from pgarena.pipeline.context import LOG_TAIL_LINES, mark_build_failed
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
