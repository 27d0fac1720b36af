"""The headline's deadline moves with its measured slot (pipeline/rounds.py): it gets every second up to the run's
end that the phases after it are not forecast to need at their least rounds, and never less than its own least
rounds. A phase after it takes only the tables whose least rounds still fit its share (rounds.tables_that_fit)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pgarena.config.stackdef import RunSpec
from pgarena.pipeline.rounds import (
    BUDGET_RESERVE_S,
    FORECAST_MARGIN,
    HEADLINE_CLOSE_S,
    LATER_OVERHEAD_RATIO,
    PHASE_START_S,
    WARMUP_OVERHEAD_S,
    WARMUP_WINDOW_OVERHEAD_S,
    PhaseNeed,
    drop_what_cannot_fit,
    headline_deadline_of,
    later_need_s,
    measured_overhead_s,
    moving_deadline,
    phase_need,
    tables_that_fit,
    warmup_overhead_s,
)
from pgarena.results.models import PhaseRecord

# bench3 (2026-11-27): the closed phase after the headline, 180 windows a round at 1 s + 0.5 s, 180 warm-ups
CLOSED = PhaseNeed(windows=180, rounds=2, window_s=1.5, warmup_s=180 * (1.0 + WARMUP_OVERHEAD_S))


def test_what_the_later_phases_need_is_forecast_from_the_headlines_own_overhead_per_window():
    need = later_need_s([CLOSED], slot_s=1.733, own_window_s=1.5)
    warmups = 180 * (1.0 + WARMUP_OVERHEAD_S)
    later_overhead = LATER_OVERHEAD_RATIO * 0.233  # a later window's own work: more than the headline's
    assert need == pytest.approx(FORECAST_MARGIN * (PHASE_START_S + warmups + 2 * 180 * (1.5 + later_overhead)))
    assert 900 < need < 1100, "bench3's closed phase took 923 s for its two rounds and warm-ups"
    assert later_need_s([CLOSED], slot_s=1.2, own_window_s=1.5) == pytest.approx(
        FORECAST_MARGIN * (PHASE_START_S + warmups + 2 * 180 * 1.5)), "a slot shorter than its window: no overhead"
    slower = PhaseNeed(windows=180, rounds=2, window_s=3.0, warmup_s=0)
    assert later_need_s([slower], 1.733, 1.5) - later_need_s([slower], 1.5, 1.5) == pytest.approx(
        FORECAST_MARGIN * 2 * 180 * later_overhead), "the overhead is per window, the later windows' own length added"
    assert later_need_s([CLOSED, CLOSED], 1.733, 1.5) == pytest.approx(2 * later_need_s([CLOSED], 1.733, 1.5))


def test_the_headline_takes_what_is_left_but_never_less_than_its_least_rounds():
    deadline = moving_deadline(start=100.0, least_windows=60, end=3000.0, needs=[CLOSED], own_window_s=1.5)
    assert deadline(1.733) == pytest.approx(3000.0 - HEADLINE_CLOSE_S - later_need_s([CLOSED], 1.733, 1.5)), \
        "what the later tables need, and the headline's own closing before they start"
    assert HEADLINE_CLOSE_S > 0
    assert deadline(1.733) > deadline(2.5), "a slower slot leaves the headline less"
    # later tables that need more than is left take all but the headline's least rounds (bench15, 2026-11-28: a
    # share of 40 % kept for the headline left a later table out)
    assert deadline(30.0) == pytest.approx(100.0 + FORECAST_MARGIN * 60 * 30.0)
    late = moving_deadline(start=2500.0, least_windows=60, end=3000.0, needs=[CLOSED], own_window_s=1.5)
    assert late(1.733) == pytest.approx(2500.0 + FORECAST_MARGIN * 60 * 1.733), "its least rounds, whatever is left"
    assert moving_deadline(100.0, 60, 3000.0, [], 1.5)(1.7) == 3000.0, "nothing after it: all of the time"


def _run(phases, *, deadline=5000.0, slo=None, pools=(), pool=None, warmed=(), measured=(), idle_rewarm=0.0):
    lives = {"s1": SimpleNamespace(id="s1", warmed=set(warmed), stack=SimpleNamespace(
        definition=SimpleNamespace(run=RunSpec(command="true")))),
             "s2": SimpleNamespace(id="s2", warmed=set(), stack=SimpleNamespace(
                 definition=SimpleNamespace(run=RunSpec(command="true", min_warmup_s=5.0))))}
    config = SimpleNamespace(slo_p99_ms=slo, pool_sizes=list(pools), warmup_s=1.0, warmup_cap_s=10.0, repetitions=3,
                             idle_rewarm_s=idle_rewarm)
    later = SimpleNamespace(warmup_cap_s=1.0, repetitions=2)
    return SimpleNamespace(ctx=SimpleNamespace(config=config, deadline=deadline, log=lambda line: None),
                           lives=lives, phases=phases, finished_phases=set(), pool=pool,
                           record=SimpleNamespace(phases=list(measured)),
                           _later=lambda p: None if p.name.startswith("headline") else later,
                           rewarm_seconds=lambda p: 0.5, idle_extras=[])


def _cell(workload, status="ok", repetitions=()):
    return SimpleNamespace(workload=workload, db_rtt_ms=None, status=status, repetitions=list(repetitions),
                           duration_seconds=1.0, parameter_name=None, parameter=None, level_label="50 VUs",
                           pool_dimension=None)


def _phases():
    headline = SimpleNamespace(name="headline", cells={("s1", "perf-test"): _cell("perf-test"),
                                                       ("s2", "perf-test"): _cell("perf-test")})
    closed = SimpleNamespace(name="closed", cells={("s1", "users"): _cell("users"), ("s2", "users"): _cell("users"),
                                                   ("s1", "static"): _cell("static"),
                                                   ("s2", "static"): _cell("static", status="failed")})
    return headline, closed


def test_a_phases_need_counts_its_measurable_cells_and_the_warm_ups_still_to_come():
    headline, closed = _phases()
    need = phase_need(_run([headline, closed], warmed=[("users", None)]), closed)
    assert (need.windows, need.rounds, need.window_s) == (3, 2, 1.5), "the failed cell takes no window"
    # s1 warmed users already: s1 static at the later cap (1 s), the lead-in of its first window, 0.5 s longer than
    # the re-warm (pipeline/warming.py); s2 users at its declared 5 s, a warm-up of its own
    lead_in = 1.0 - 0.5
    assert need.warmup_s == pytest.approx(lead_in + (5.0 + WARMUP_OVERHEAD_S + 5 * WARMUP_WINDOW_OVERHEAD_S))
    # once s2 has warmed the headline's workload, its declared 5 s are spent: users and static at the cap
    run = _run([headline, closed])
    run.lives["s2"].warmed.add(("perf-test", None))
    closed.cells[("s2", "static")].status = "ok"
    assert phase_need(run, closed).warmup_s == pytest.approx(4 * lead_in)
    # a JIT's declared least warm-up of each later workload (RunSpec.min_workload_warmup_s) counts at its length
    run.lives["s2"].stack.definition.run = RunSpec(command="true", min_warmup_s=5.0, min_workload_warmup_s=3.0)
    assert phase_need(run, closed).warmup_s == pytest.approx(2 * lead_in + 2 * (3.0 + warmup_overhead_s(3.0)))
    # a re-warm as long as the warm-up leaves nothing of it to forecast
    run.rewarm_seconds = lambda p: 1.0
    assert phase_need(run, closed).warmup_s == pytest.approx(2 * (3.0 + warmup_overhead_s(3.0)))


def test_only_a_headline_with_nothing_but_its_batchs_phases_after_it_moves(monkeypatch):
    import pgarena.pipeline.rounds as rounds

    monkeypatch.setattr(rounds.time, "monotonic", lambda: 1000.0)
    headline, closed = _phases()
    moving = headline_deadline_of(_run([headline, closed]), headline, static=1000.0, last=False, least=3)
    assert moving is not None and moving(1.7) == pytest.approx(
        5000.0 - BUDGET_RESERVE_S - HEADLINE_CLOSE_S
        - later_need_s([phase_need(_run([headline, closed]), closed)], 1.7, 1.5))
    # its least rounds: 3 of its 2 stacks, from now on
    assert moving(1000.0) == pytest.approx(1000.0 + FORECAST_MARGIN * 3 * 2 * 1000.0)
    assert headline_deadline_of(_run([headline, closed]), closed, 1000.0, False) is None, "not the headline"
    assert headline_deadline_of(_run([headline]), headline, 1000.0, True) is None, "the last phase has it all"
    assert headline_deadline_of(_run([headline, closed], deadline=None), headline, None, False) is None
    assert headline_deadline_of(_run([headline, closed], slo=50.0), headline, 1000.0, False) is None, \
        "SLO searches follow, and are not forecast"
    assert headline_deadline_of(_run([headline, closed], pools=(5, 10), pool=5), headline, 1000.0, False) is None, \
        "another pool size follows"
    assert headline_deadline_of(_run([headline, closed], pools=(5, 10), pool=10), headline, 1000.0, False) is not None


def _measured(slot_s=1.75):
    return PhaseRecord(name="headline", cells=1, window_seconds=1.0, rewarm_seconds=0.5, slot_seconds=slot_s)


def test_the_overhead_per_window_is_the_latest_measured_slot_less_its_window_and_re_warm():
    assert measured_overhead_s(_run([])) is None, "no phase has measured its slot"
    assert measured_overhead_s(_run([], measured=[_measured(1.75)])) == pytest.approx(LATER_OVERHEAD_RATIO * 0.25), \
        "a later window's, from the headline's"
    later = _measured(2.0).model_copy(update={"name": "closed"})
    assert measured_overhead_s(_run([], measured=[_measured(1.75), later])) == pytest.approx(0.5), "a later phase's own"
    assert measured_overhead_s(_run([], measured=[_measured(1.2)])) == 0.0, "never below nothing"


def test_a_warm_up_costs_its_start_and_a_little_per_window():
    assert warmup_overhead_s(1.0) == pytest.approx(WARMUP_OVERHEAD_S + WARMUP_WINDOW_OVERHEAD_S)
    assert warmup_overhead_s(10.0) == pytest.approx(WARMUP_OVERHEAD_S + 10 * WARMUP_WINDOW_OVERHEAD_S)
    assert warmup_overhead_s(2.5) == pytest.approx(WARMUP_OVERHEAD_S + 3 * WARMUP_WINDOW_OVERHEAD_S)
    # bench25's closed phase: the JVMs' 11 warm-ups of 10 s and 8 of 15 s ended 251 s after the phase's start (15 s
    # of it the database's levelling): the forecast within 10 % of that
    forecast = 11 * (10 + warmup_overhead_s(10)) + 8 * (15 + warmup_overhead_s(15))
    assert abs(forecast - 251) / 251 < 0.10


def test_a_later_phase_takes_the_tables_whose_least_rounds_fit_first_come_first_served():
    headline, closed = _phases()
    run = _run([headline, closed], measured=[_measured(1.75)])
    run.lives["s1"].warmed.add(("perf-test", None))
    run.lives["s2"].warmed.add(("perf-test", None))
    overhead = LATER_OVERHEAD_RATIO * 0.25
    users = phase_need(run, closed, [("users",)]).seconds(overhead) * FORECAST_MARGIN
    both = phase_need(run, closed, [("users",), ("static",)]).seconds(overhead) * FORECAST_MARGIN
    static = phase_need(run, closed, [("static",)]).seconds(overhead) * FORECAST_MARGIN
    assert static < users < both, "static has one cell that can be measured, users two"
    assert tables_that_fit(_run([headline, closed]), closed, 100.0, 0.0) is None, "no slot measured: all taken"
    assert tables_that_fit(run, closed, both, 0.0) == [("users",), ("static",)]
    assert tables_that_fit(run, closed, 1000.0 + users, 1000.0) == [("users",)]
    assert tables_that_fit(run, closed, users - 0.01, 0.0) == [("static",)], "the smaller table after it still fits"
    assert tables_that_fit(run, closed, static - 0.01, 0.0) == []


def _phase_run(begun: bool = False):
    headline, closed = _phases()
    if begun:
        closed.cells[("s1", "users")].repetitions = [object()]
    run = _run([headline, closed], measured=[_measured(1.75)])
    return run, closed, PhaseRecord(name="closed", cells=2)


def test_tables_that_no_longer_fit_are_left_out_of_the_phase_and_named_on_its_record(monkeypatch):
    import pgarena.pipeline.rounds as rounds

    monkeypatch.setattr(rounds.time, "monotonic", lambda: 0.0)
    run, closed, record = _phase_run()
    need_static = phase_need(run, closed, [("static",)]).seconds(LATER_OVERHEAD_RATIO * 0.25) * FORECAST_MARGIN
    assert drop_what_cannot_fit(run, closed, record, need_static + 1)
    assert list(closed.cells) == [("s1", "static"), ("s2", "static")]
    assert record.not_measured == ["users @ 50 VUs"]
    run, closed, record = _phase_run()
    assert not drop_what_cannot_fit(run, closed, record, 1.0), "nothing fits: nothing is left"
    assert record.not_measured == ["users @ 50 VUs", "static @ 50 VUs"] and not closed.cells
    run, closed, record = _phase_run(begun=True)
    assert drop_what_cannot_fit(run, closed, record, 1.0), "a table begun before a resume stays"
    assert set(closed.cells) == {("s1", "users"), ("s2", "users")}
    run, closed, record = _phase_run()
    record.not_measured = ["users @ 50 VUs"]  # a resume: what the run before left out is decided anew
    assert drop_what_cannot_fit(run, closed, record, None) and len(closed.cells) == 4, "no budget"
    assert record.not_measured == []
    headline, _ = _phases()
    assert drop_what_cannot_fit(run, headline, record, 1.0) and len(headline.cells) == 2, \
        "the headline is always taken"


def test_the_longer_rewarms_after_idle_gaps_are_forecast_and_not_taken_for_overhead(monkeypatch):
    import pgarena.pipeline.rounds as rounds

    monkeypatch.setattr(rounds.time, "monotonic", lambda: 1000.0)
    headline, closed = _phases()
    need = phase_need(_run([headline, closed], idle_rewarm=1.5), closed)
    plain = phase_need(_run([headline, closed]), closed)
    assert need.idle_rewarm_s == 2 * 1.5, "each stack's first window of a round comes after the others' windows"
    assert need.seconds(0.2) - plain.seconds(0.2) == pytest.approx(need.rounds * 2 * 1.5)
    # the headline's own longer re-warms are part of its slot, not of pgarena's overhead per window
    bare = moving_deadline(100.0, 60, 3000.0, [CLOSED], 1.5)
    idle = moving_deadline(100.0, 60, 3000.0, [CLOSED], 1.5, idle_rewarm_of=lambda: 0.4)
    assert idle(2.133) == pytest.approx(bare(1.733))
    # the slot is its last 50 windows': so are the longer re-warms taken out of it (bench20: the whole phase's mean,
    # 0.62 s, against narrowed rounds' slot of 1.8 s left no overhead, and a later table was left out)
    run = _run([headline, closed], idle_rewarm=1.5)
    run.idle_extras = [1.5] * 100 + [0.0] * 45 + [0.5] * 5
    moving = headline_deadline_of(run, headline, static=1000.0, last=False, least=3)
    assert moving is not None
    with_idle = moving(1.8 + 0.05)  # the last 50 windows: 0.05 s of longer re-warm each on average
    run.idle_extras = []  # read again at every look
    assert with_idle == pytest.approx(moving(1.8)) and moving(1.8 + 0.05) < with_idle
    record = PhaseRecord(name="headline", cells=1, windows=10, window_seconds=1.0, rewarm_seconds=0.5,
                         slot_seconds=2.0, idle_rewarm_windows=4, idle_rewarm_seconds=3.0)
    assert measured_overhead_s(_run([headline, closed], measured=[record])) == pytest.approx(
        LATER_OVERHEAD_RATIO * (2.0 - 1.5 - 0.3))
