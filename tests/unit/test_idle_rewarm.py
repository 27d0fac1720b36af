"""The idle gap's re-warm (pgarena.contract.idle) and where the schedule applies and records it."""

from __future__ import annotations

import pytest

from pgarena.contract.idle import IDLE_FROM_S, IDLE_FULL_S, idle_rewarm_s, rule_sentence


@pytest.mark.parametrize(("idle", "extra"), [
    (None, 0.0), (0.0, 0.0), (2.0, 0.0), (IDLE_FROM_S, 0.0),
    ((IDLE_FROM_S + IDLE_FULL_S) / 2, 0.75), (IDLE_FULL_S, 1.5), (45.0, 1.5), (600.0, 1.5),
])
def test_the_longer_rewarm_grows_with_the_idle_time_beyond_its_threshold(idle, extra):
    assert idle_rewarm_s(idle, 1.5) == pytest.approx(extra)


def test_no_longer_rewarm_when_it_is_turned_off():
    assert idle_rewarm_s(120.0, 0.0) == 0.0


def test_the_rule_is_said_with_its_thresholds():
    assert rule_sentence(1.5) == "up to 1.5 s more after more than 15 s without load (in full after 35 s)"
