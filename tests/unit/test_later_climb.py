"""scripts/later_climb.py: a stack that reads slow in the first round of the tables after the headline, against the
other stacks of each table, stands out by its z against their spread; the headline is left out."""

from __future__ import annotations

import math
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import script_module
from pgarena.results.models import Cell
from tests.fixtures.report_run import cell

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "later_climb.py"
LATER = [("users", 20), ("tx", None), ("perf-post", 10), ("static", None), ("perf-minimal", None)]
WORKLOADS = ["perf-test", *(w for w, _ in LATER)]


@pytest.fixture(scope="module")
def climb():
    yield from script_module("later_climb")


def _cells(cold: float, seed: int = 5) -> list[Cell]:
    """Eight stacks; the headline (perf-test) with `jvm` cold in its first round too, then five later tables of
    three rounds with ln scatter 0.05 and a round factor, where `jvm` reads `cold` (ln) slow in round 1 only."""
    rng = random.Random(seed)
    stacks = ["jvm", *(f"s{i}" for i in range(7))]
    cells = []
    for workload, parameter in [("perf-test", 1), *LATER]:
        factor = [rng.gauss(0, 0.1) for _ in range(3)]
        for k, stack in enumerate(stacks):
            slow = [cold if stack == "jvm" and r == 0 else 0.0 for r in range(3)]
            rps = [1000 * (1 + k / 4) * math.exp(factor[r] - slow[r] + rng.gauss(0, 0.05)) for r in range(3)]
            cells.append(cell(stack, workload, parameter, 50, rps, 10.0))
    return cells


def test_a_stack_cold_in_the_first_round_of_each_later_table_stands_out(climb) -> None:
    found = climb.climbs(_cells(cold=0.3), WORKLOADS)
    assert set(found) == {"jvm", *(f"s{i}" for i in range(7))} and all(len(v) == len(LATER) for v in found.values())
    means = {stack: sum(v) / len(v) for stack, v in found.items()}
    assert max(means, key=means.get) == "jvm"
    assert means["jvm"] == pytest.approx(0.3 * 7 / 8, abs=0.08)  # less its share of the table's mean rise
    assert means["jvm"] / climb.spread(list(means.values())) > 4


def test_without_a_cold_stack_none_stands_out(climb) -> None:
    means = [sum(v) / len(v) for v in climb.climbs(_cells(cold=0.0), WORKLOADS).values()]
    assert max(abs(m) for m in means) / climb.spread(means) < 4


def test_a_folder_without_results_is_one_line_and_exit_2(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": str(SCRIPT.parents[1] / "src"), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
