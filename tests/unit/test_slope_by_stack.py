"""scripts/slope_by_stack.py: the three least-squares fits of a table's windows recover the slopes they were made
with, and a folder without results is one line and exit code 2."""

from __future__ import annotations

import math
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import script_module

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "slope_by_stack.py"


@pytest.fixture(scope="module")
def script():
    yield from script_module("slope_by_stack")


def _table(slopes: dict[str, float], rounds: int, noise: float, seed: int = 1):
    """2xx/s and probe unit ns per round: ln y = level + round drift + slope · ln(z / 5e5) + noise."""
    rng = random.Random(seed)
    drift = [rng.gauss(0, 0.1) for _ in range(rounds)]
    y, z = {}, {}
    for k, (stack, slope) in enumerate(slopes.items()):
        speed = [rng.gauss(0, 0.1) for _ in range(rounds)]
        z[stack] = [5e5 * math.exp(s) for s in speed]
        y[stack] = [math.exp(7 + 0.1 * k + d + slope * s + rng.gauss(0, noise)) for d, s in zip(drift, speed)]
    return y, z


def test_a_slope_per_stack_is_recovered_and_leaves_less_noise_where_the_slopes_differ(script):
    slopes = {"a": -2.0, "b": -2.0, "c": -0.5, "d": -0.5, "e": -1.0}
    y, z = _table(slopes, rounds=60, noise=0.02)
    none, one, each = (script.fit(y, z, how) for how in ("none", "one", "per-stack"))
    assert none.slopes == {} and len(set(one.slopes.values())) == 1
    for stack, slope in slopes.items():
        assert each.slopes[stack] == pytest.approx(slope, abs=0.1)
    assert each.sd < one.sd < none.sd
    assert each.sd == pytest.approx(0.02, rel=0.25)  # what is left is the noise the table was made with
    assert (none.df, one.df, each.df) == (300 - 5 - 59, 300 - 5 - 59 - 1, 300 - 5 - 59 - 5)


def test_one_slope_for_every_stack_leaves_nothing_for_a_slope_per_stack(script):
    y, z = _table({s: -1.2 for s in "abcdef"}, rounds=40, noise=0.03, seed=2)
    one, each = script.fit(y, z, "one"), script.fit(y, z, "per-stack")
    assert next(iter(one.slopes.values())) == pytest.approx(-1.2, abs=0.05)
    assert each.sd == pytest.approx(one.sd, rel=0.1)  # the extra slopes only spend degrees of freedom


def test_a_folder_without_results_is_one_line_and_exit_2(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
