"""scripts/idle_gap.py: the major page faults it reads are this machine's own counter, and a stack that does not
exist is one line and exit code 2 (before any database or stack starts)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def test_major_faults_reads_the_process_trees_counter():
    sys.path.insert(0, str(SCRIPTS))
    try:
        import idle_gap
    finally:
        sys.path.remove(str(SCRIPTS))
    own = int(Path(f"/proc/{os.getpid()}/stat").read_text().rsplit(")", 1)[1].split()[9])
    assert idle_gap.major_faults(os.getpid()) >= own
    assert idle_gap.major_faults(2**22 + 12345) == 0  # no such process: nothing to count


def test_an_unknown_stack_is_one_line_and_exit_2():
    done = subprocess.run([sys.executable, str(SCRIPTS / "idle_gap.py"), "--stacks", "no-such-stack", "--pairs", "1"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def _idle_gap():
    sys.path.insert(0, str(SCRIPTS))
    try:
        import idle_gap
    finally:
        sys.path.remove(str(SCRIPTS))
    return idle_gap


def test_a_stacks_runtime_is_its_ids_first_word_and_runtimes_pool_with_random_effects():
    idle_gap = _idle_gap()
    assert [idle_gap.runtime_of(s) for s in ("go-nethttp-pgx", "seed000-go-pgx", "python-django", "bun-postgresjs")] \
        == ["go", "go", "python", "bun"]
    mean, se, tau = idle_gap.pooled([(-0.1, 0.1), (0.0, 0.1)])
    assert (mean, se, tau) == pytest.approx((-0.05, 0.1 / 2 ** 0.5, 0.0)), "within their errors: no spread"
    mean, se, _ = idle_gap.pooled([(-0.1, 0.05), (0.0, 0.1)])
    assert mean == pytest.approx(-0.08), "the surer estimate weighs four times the other"
    # 2026-11-29's four Go stacks: they differ by more than their errors, so the runtime's mean is less sure
    go = [(0.105, 0.043), (-0.059, 0.059), (-0.126, 0.064), (0.092, 0.060)]
    mean, se, tau = idle_gap.pooled(go)
    fixed_se = (sum(1 / s ** 2 for _, s in go)) ** -0.5
    assert tau == pytest.approx(0.098, abs=0.002) and se > 2 * fixed_se and mean - 1.96 * se < -idle_gap.NO_DROP
    assert idle_gap.pooled([(0.1, float("inf"))])[1] == float("inf"), "one pair has no standard error"
    assert idle_gap.mean_se([0.1, 0.3]) == pytest.approx((0.2, 0.1))
