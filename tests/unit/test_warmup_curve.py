"""scripts/warmup_curve.py: a curve's bins of load and when it arrived near its last bin; a user's mistake is one
line and exit code 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import script_module

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "warmup_curve.py"


@pytest.fixture(scope="module")
def curve():
    yield from script_module("warmup_curve")


def test_bins_are_answers_over_seconds_of_load_and_a_partial_last_bin_is_dropped(curve) -> None:
    visits = [(1.0, 100), (1.0, 300), (1.0, 500), (1.0, 700), (1.0, 900)]
    assert curve.bin_rates(visits, 2.0) == [200.0, 600.0]
    assert curve.bin_rates([(0.5, 50)] * 4, 1.0) == [100.0, 100.0]


@pytest.mark.parametrize(("rates", "first"), [
    ([10, 50, 95, 102, 100], 2), ([100, 100, 100], 0), ([10, 50, 100], None), ([100, 50, 100], None),
    ([], None),
])
def test_arrival_is_the_first_bin_after_which_every_bin_stays_within_10_percent_of_the_last(curve, rates, first):
    assert curve.arrival([float(r) for r in rates]) == first


def test_an_unknown_arm_or_impossible_lengths_are_one_line_and_exit_2() -> None:
    for args in (["--stacks", "go-nethttp-pgx", "--arms", "sideways"],
                 ["--stacks", "go-nethttp-pgx", "--load-s", "5", "--bin-s", "10"],
                 ["--stacks", "go-nethttp-pgx", "--workloads", "users=20,userz"],
                 ["--stacks", "go-nethttp-pgx", "--workloads", "users=twenty"],
                 ["--stacks", "go-nethttp-pgx", "--prewarm-s", "-1"]):
        out = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60,
                             env={"PYTHONPATH": str(SCRIPT.parents[1] / "src"), "PATH": "/usr/bin:/bin"})
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and out.stderr.startswith("error: "), out.stderr


def test_workloads_are_read_with_their_parameters(curve) -> None:
    assert curve.workload_list("users=20,perf-post=10,static") == [("users", 20), ("perf-post", 10), ("static", None)]
