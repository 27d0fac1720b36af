"""scripts/race_allocation.py: the other rules the race was compared with (docs/methodology.md, "Does the race give
up too early?") do what they say, and the script runs each through the real scheduler."""

from __future__ import annotations

import math

import pytest

from pgarena.analysis.sequential import judge
from pgarena.load.scheduler import _CellState
from tests.conftest import script_module


@pytest.fixture(scope="module")
def ra():
    yield from script_module("race_allocation")


def test_a_pairs_chance_is_none_without_rounds_and_grows_with_them_where_its_ratio_is_clear(ra):
    ask = dict(variance=0.02, rounds=3, alpha=1e-4, df=20, margin=0.10, final=True)
    assert ra.chance(0.3, more=0, **ask) == 0.0
    chances = [ra.chance(0.3, more=m, **ask) for m in (1, 5, 20, 60)]
    assert chances == sorted(chances) and chances[-1] > 0.99 and chances[0] < 0.5
    # at a ratio of 1 only equivalence can resolve it, and that needs a half-width under the margin
    assert ra.chance(0.0, more=5, **ask) < 0.01 < ra.chance(0.0, more=200, **ask)
    # the confidence sequence is wider than the final look, so its chance is lower
    assert ra.chance(0.2, more=10, **{**ask, "final": False}) < ra.chance(0.2, more=10, **ask)


def test_the_expected_race_keeps_the_far_pair_alone_when_time_is_short_and_both_when_it_is_not(ra):
    noise = [0.15, -0.2, 0.05]
    per_round = {"x": [5000 * math.exp(math.log(1.5) + e) for e in noise],
                 "y": [5000 * math.exp(-e) for e in noise],
                 "z": [5000 * math.exp(2 * e) for e in noise]}
    kept = []
    for seconds in (20.0, 100.0):  # one window a second: 10 or 50 rounds of two stacks
        state = _CellState(inference=judge(per_round, horizon=()), active={"x", "y", "z"},
                           open_pairs=[("x", "y"), ("y", "z")])
        stops = ra.expected_race({"cell": state}, 50, None, lambda cell: ["x", "y", "z"], (seconds, 1.0))
        assert stops == {"cell": None}
        kept.append(state.active)
    assert kept == [{"x", "y"}, {"x", "y", "z"}]
    # no time left for a round: nothing is kept, and the cell stops on the budget
    state = _CellState(inference=judge(per_round, horizon=()), active={"x", "y", "z"}, open_pairs=[("x", "y")])
    assert ra.expected_race({"cell": state}, 50, None, lambda cell: ["x", "y", "z"], (1.0, 1.0)) == {"cell": "budget"}


def test_the_script_races_each_rule_and_refuses_an_unknown_one(ra, capsys):
    assert ra.main(["--runs", "4", "--identical", "4", "--windows", "40", "race", "expected", "benefit=2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("4 identical stacks, 40 windows' time") and len(out) == 4
    assert [line.split()[0] for line in out[1:]] == ["race", "expected", "benefit=2"]
    assert all("of 3 pairs" in line for line in out[1:])
    assert ra.main(["fastest"]) == 2
    assert "unknown rule 'fastest'" in capsys.readouterr().err
