"""The headline returns after the later tables' least rounds (pipeline/rounds.py `headline_returns`): the time the
forecast kept for the later tables with its margin goes back to the headline, whose rounds go on from where they
stopped (load/scheduler.py `run_rounds(closed_rounds=...)`), and its report says which rounds came after."""

from __future__ import annotations

import math
import random
import time
from types import SimpleNamespace

import pytest

from pgarena.load.scheduler import RoundsPolicy, run_rounds
from pgarena.pipeline import rounds
from pgarena.pipeline.rounds import headline_returns, return_fits
from pgarena.report.conditions import _stop_sentence
from pgarena.results.models import PhaseRecord

CELL = ("perf-test", 1, "closed", 50)
RATES = {"a": 1000.0, "b": 1030.0, "c": 2000.0, "d": 2040.0}


def figure(stack: str, r: int) -> float:
    rng = random.Random(f"{stack}:{r}")
    return RATES[stack] * math.exp(rng.gauss(0, 0.05))


def first_stint(closed: int, absent: dict[int, set[str]]) -> dict:
    """The windows of `closed` rounds as a resume hands them back, `absent[r]` the stacks the race had left in r."""
    return {(s, CELL, r): figure(s, r) for r in range(1, closed + 1) for s in RATES if s not in absent.get(r, set())}


def test_the_rounds_over_are_judged_again_never_measured_and_the_race_goes_on_after_them():
    known = first_stint(6, absent={5: {"c", "d"}, 6: {"c", "d"}})
    measured: list[tuple[str, int]] = []

    def measure(slot):
        measured.append((slot.stack, slot.round))
        return figure(slot.stack, slot.round)

    policy = RoundsPolicy(min_rounds=3, max_rounds=40, forecast=False)
    outcome = run_rounds([(s, CELL) for s in RATES], seed=1, policy=policy, measure=measure, known=known,
                         closed_rounds=6)
    assert measured and min(r for _, r in measured) == 7, "no window is taken in a round that is over"
    assert outcome.stop_reason in ("max-rounds", "settled") and outcome.rounds > 6
    if outcome.stop_reason == "max-rounds":
        # c and d had left in rounds 5 and 6: whatever they do after, their pairs' count of rounds was the race's
        assert set(outcome.horizon[CELL]) <= {"a", "b"}
    # the same windows without closed rounds: the replayed race measures c and d in the rounds they had left
    replayed: list[tuple[str, int]] = []
    run_rounds([(s, CELL) for s in RATES], seed=1, policy=policy, known=known,
               measure=lambda slot: replayed.append((slot.stack, slot.round)) or figure(slot.stack, slot.round))
    assert any(r <= 6 for _, r in replayed), "the check above can fail: a plain resume fills the rounds in"


def test_a_stack_measured_in_every_round_of_both_stints_keeps_the_final_look():
    known = first_stint(4, absent={})
    outcome = run_rounds([(s, CELL) for s in RATES], seed=2, policy=RoundsPolicy(min_rounds=2, max_rounds=6,
                         forecast=False), measure=lambda slot: figure(slot.stack, slot.round), known=known,
                         closed_rounds=4)
    if outcome.stop_reason == "max-rounds":
        assert outcome.horizon[CELL], "the cap ended the cell: its stacks measured throughout get the final look"
    assert outcome.windows <= 2 * len(RATES), "only rounds 5 and 6 were measured"


def fake_run(stop: str | None = "budget", final: bool = True, deadline: float | None = 10_000.0, phases: int = 2,
             slot: float | None = 1.7, **config):
    settings = {"regression_margin": None, "restart_every": None, "slo_p99_ms": None, "pool_sizes": [],
                "rewarm_seconds": 0.5, "resolve_every_pair": False, "later_tables": object(), **config}
    cells = {(f"s{i}", "perf-test"): SimpleNamespace(summary=SimpleNamespace(final_look=final), duration_seconds=1.0)
             for i in range(20)}
    head = SimpleNamespace(name="headline", cells=cells)
    later = [SimpleNamespace(name=name, cells={}) for name in ("closed", "open")[:phases - 1]]
    record = PhaseRecord(name="headline", cells=1, rounds=30, stop_reason=stop, slot_seconds=slot)
    return SimpleNamespace(ctx=SimpleNamespace(deadline=deadline, config=SimpleNamespace(**settings)),
                           phases=[head, *later], record=SimpleNamespace(phases=[record]), pool=None,
                           _later=lambda phase: None, rewarm_seconds=lambda phase: 0.5)


def test_the_headline_returns_only_when_the_time_ended_it_and_tables_followed():
    assert headline_returns(fake_run())
    assert not headline_returns(fake_run(stop="out-of-reach")), "its data, not the time, stopped it"
    assert not headline_returns(fake_run(stop="settled"))
    assert not headline_returns(fake_run(final=False)), "no final look: the race's forecast gave it up"
    assert not headline_returns(fake_run(phases=1)), "no later table"
    assert not headline_returns(fake_run(deadline=None)), "no budget"
    assert not headline_returns(fake_run(regression_margin=0.05)), "an A/B races in one phase"
    assert not headline_returns(fake_run(slo_p99_ms=100.0)), "SLO searches follow: not the batch's last"
    assert not headline_returns(fake_run(resolve_every_pair=True)), "calibrate: every pair of every table matters"
    assert not headline_returns(fake_run(later_tables=None)), "no quick later tables: every table is as the headline"


def test_the_return_needs_time_for_a_round_of_all_its_stacks():
    now = time.monotonic()
    need = rounds.PHASE_START_S + 1.7 * 20
    fits = lambda run: return_fits(run, run.phases[0])  # noqa: E731
    assert fits(fake_run(deadline=now + rounds.BUDGET_RESERVE_S + need + 5))
    assert not fits(fake_run(deadline=now + rounds.BUDGET_RESERVE_S + need - 5))
    # no slot recorded: a window, its re-warm and a warm-up's overhead
    guess = rounds.PHASE_START_S + (1.0 + 0.5 + rounds.WARMUP_OVERHEAD_S) * 20
    assert not fits(fake_run(slot=None, deadline=now + rounds.BUDGET_RESERVE_S + guess - 5))


@pytest.mark.parametrize(("record", "words"), [
    (PhaseRecord(name="headline", cells=1, rounds=52, stop_reason="budget", returned_after=40),
     "stopped when the time budget ran out (52 rounds; rounds 41–52 after the later tables' least rounds)"),
    (PhaseRecord(name="closed", cells=11, rounds=2, stop_reason="budget", yielded=True),
     "stopped at its least rounds (2), the time left going to the headline's return"),
    (PhaseRecord(name="headline", cells=1, rounds=40, stop_reason="budget", returned_after=40),
     "stopped when the time budget ran out (40 rounds)"),
])
def test_the_schedule_says_which_rounds_came_after_the_later_tables(record, words):
    assert _stop_sentence(record, every_pair=False) == words
