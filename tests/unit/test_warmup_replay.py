"""scripts/warmup_replay.py: a stored run's warm-ups replayed under the steadiness rule on the rate alone and in
units of the speed probe's reading; a slow spell common to the stacks shows turn by turn in the first only."""

from __future__ import annotations

import pytest

from pgarena.results.models import Cell, Warmup
from tests.conftest import script_module
from tests.fixtures.report_run import cell


@pytest.fixture(scope="module")
def replay():
    yield from script_module("warmup_replay")


def _warmed(stack: str, rps: list[float], units: list[float | None], minimum: float = 1.0) -> Cell:
    measured = cell(stack, "perf-test", 1, 50, [1000.0, 1010.0], 10.0)
    measured.warmup = Warmup(seconds=len(rps), steady=True, minimum_seconds=minimum, cap_seconds=60.0,
                             windows_rps=rps, windows_unit_ns=units, windows_others_cpu=[0.1] * len(rps))
    return measured


SLOW = [1300.0] * 6 + [1000.0] * 14
"""The probe's unit time: the machine 30 % slow for the first six turns."""


def test_a_common_slow_spell_delays_the_rule_on_the_rate_alone_and_not_with_the_probe(replay) -> None:
    cells = [_warmed(f"s{i}", [v * (1 + i / 10) for v in [760.0] * 6 + [1000.0] * 14], SLOW) for i in range(3)]
    cells.append(_warmed("jit", [300.0 * 1.08 ** k for k in range(20)], SLOW))  # climbing on its own: both rules
    replays = {r.stack: r for r in replay.replay(cells)}
    assert all(replays[f"s{i}"].with_probe == 10 and replays[f"s{i}"].alone == 13 for i in range(3))
    assert replays["jit"].alone is None and replays["jit"].with_probe is None
    turns = replay.by_turn(cells)
    assert turns[0][1] == 4 and turns[0][2] == pytest.approx(0.76) and turns[0][3] == pytest.approx(0.988, abs=0.01)
    assert turns[-1][2] == pytest.approx(1.0) and turns[0][4] == pytest.approx(0.1)


def test_a_warm_up_without_the_probes_readings_or_a_lead_in_is_not_replayed(replay, tmp_path) -> None:
    plain = _warmed("old", [1000.0] * 12, [])
    lead = _warmed("lead", [], [])
    lead.warmup = lead.warmup.model_copy(update={"lead_in": True})
    assert replay.replay([plain, lead]) == []
    assert replay.first_steady([100.0] * 12, None, 11) == 11, "not before the least warm-up"
    assert replay.main([str(tmp_path)]) == 2, "no results.json: one line, exit 2"
