"""scripts/idle_gap.py: the major page faults it reads are this machine's own counter, and a stack that does not
exist is one line and exit code 2 (before any database or stack starts)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
