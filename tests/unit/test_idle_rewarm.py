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


def test_the_schedule_names_the_stacks_whose_runtime_needs_no_idle_rewarm():
    from pgarena.report.conditions import _rewarm_phrase
    from pgarena.results.models import ScheduleRecord

    record = ScheduleRecord(kind="interleaved", rewarm_seconds=0.5, idle_rewarm_seconds=1.5)
    plain = _rewarm_phrase(record)
    assert plain == ", 0.5 s re-warm before each window, " + rule_sentence(1.5)
    record.idle_rewarm_exempt = ["go-nethttp-pgx", "python-django"]
    assert _rewarm_phrase(record) == plain + (" (not for go-nethttp-pgx, python-django: their runtimes were measured "
                                              "not to read slower after an idle gap)")


def test_a_stack_declared_without_the_idle_rewarm_is_left_out_of_the_forecast():
    from types import SimpleNamespace

    from pgarena.config.stackdef import RunSpec
    from pgarena.pipeline.rounds import phase_need

    def live(sid: str, rule: bool):
        definition = SimpleNamespace(run=RunSpec(command="t", idle_rewarm=rule))
        return SimpleNamespace(id=sid, warmed={("users", None)}, stack=SimpleNamespace(definition=definition))

    cell = SimpleNamespace(workload="users", db_rtt_ms=None, status="ok", repetitions=[], duration_seconds=1.0)
    phase = SimpleNamespace(name="closed", cells={("a", "users"): cell, ("b", "users"): cell})
    config = SimpleNamespace(warmup_s=1.0, warmup_cap_s=1.0, repetitions=2, idle_rewarm_s=1.5)
    run = SimpleNamespace(ctx=SimpleNamespace(config=config), _later=lambda p: None, rewarm_seconds=lambda p: 0.5,
                          lives={"a": live("a", True), "b": live("b", True)}, idle_extras=[])
    assert phase_need(run, phase).idle_rewarm_s == 2 * 1.5
    run.lives["b"] = live("b", False)
    assert phase_need(run, phase).idle_rewarm_s == 1.5
