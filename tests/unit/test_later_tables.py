"""Issue 21 item 5: the bench profile's quicker windows for the tables after the headline, so every workload
gets an answer inside the budget after the headline had its rounds."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pgarena.config.profiles import PROFILES, build_config
from pgarena.config.run import LaterTables
from pgarena.config.stackdef import RunSpec
from pgarena.pipeline import interleaved
from pgarena.results.models import Cell


@pytest.fixture
def two_cpus(monkeypatch):
    monkeypatch.setattr("pgarena.config.profiles.default_cpu_sets", lambda: ([0], [1]))


def test_bench_keeps_its_later_tables_unless_a_window_setting_is_given(tmp_path: Path, two_cpus):
    bench = build_config(profile="bench", project_dir=tmp_path)
    assert bench.later_tables is not None and bench.later_tables.duration_s <= bench.duration_s
    assert bench.later_tables.warmup_cap_s < bench.warmup_cap_s  # the headline warms up until steady
    assert bench.headline_share == PROFILES["bench"].headline_share
    for option, value in (("duration_s", 3.0), ("rewarm_s", 0.2), ("repetitions", 4), ("warmup_cap_s", 5.0)):
        given = build_config(profile="bench", project_dir=tmp_path, overrides={option: value})
        assert given.later_tables is None, option  # one explicit setting holds for every table
    assert build_config(profile="bench", project_dir=tmp_path, overrides={"vus": [10]}).later_tables is not None
    assert build_config(profile="quick", project_dir=tmp_path).later_tables is None


def test_later_tables_need_two_rounds_for_a_paired_variance():
    with pytest.raises(ValueError):
        LaterTables(duration_s=1, rewarm_s=0.5, warmup_cap_s=1, repetitions=1)


def _cell(stack: str, workload: str, parameter: int | None) -> Cell:
    return Cell(stack=stack, workload=workload, parameter_name="rows" if parameter else None, parameter=parameter,
                vus=50, engine="oha", warmup_seconds=1, duration_seconds=2)


def _run(monkeypatch, later: LaterTables | None, engine: str = "oha"):
    config = SimpleNamespace(later_tables=later, regression_margin=None, workloads=["perf-test", "users", "static"],
                             engine=engine, rewarm_seconds=1.0, warmup_s=1.0,
                             model_copy=lambda update: SimpleNamespace(rewarm_seconds=max(
                                 update["rewarm_s"], 1.0 if engine == "k6" else 0.0)))
    cells = {s: [_cell(s, "perf-test", 1), _cell(s, "users", 20), _cell(s, "static", None)] for s in ("a", "b")}
    monkeypatch.setattr("pgarena.pipeline.plan.plan_cells", lambda _config, stack, _engine: cells[stack.id])
    monkeypatch.setattr("pgarena.pipeline.verified.mark_invalid_answers", lambda _ctx, _cell: None)
    lives = [SimpleNamespace(id=s, stack=SimpleNamespace(id=s, definition=SimpleNamespace(run=RunSpec(command="true"))),
                             loadable={"perf-test", "users", "static"}) for s in ("a", "b")]
    ctx = SimpleNamespace(config=config, engine=SimpleNamespace(name=engine),
                          results=SimpleNamespace(cells=[]))
    run = interleaved.InterleavedRun(ctx, lives, record=SimpleNamespace())  # type: ignore[arg-type]
    return run, run.plan()


def test_the_tables_after_the_headline_get_the_quicker_windows(monkeypatch):
    later = LaterTables(duration_s=1, rewarm_s=0.5, warmup_cap_s=1, repetitions=2)
    run, phases = _run(monkeypatch, later)
    headline, rest = phases[0], phases[1]
    assert headline.name == "headline" and {c.workload for c in headline.cells.values()} == {"perf-test"}
    assert {c.duration_seconds for c in headline.cells.values()} == {2}
    assert {c.duration_seconds for c in rest.cells.values()} == {1}
    assert run.rewarm_seconds(headline) == 1.0 and run.rewarm_seconds(rest) == 0.5


def test_k6_keeps_its_one_second_minimum_re_warm_in_the_later_tables(monkeypatch):
    run, phases = _run(monkeypatch, LaterTables(duration_s=1, rewarm_s=0.5, warmup_cap_s=1, repetitions=2), "k6")
    assert run.rewarm_seconds(phases[1]) == 1.0


def test_without_later_tables_every_table_keeps_the_run_windows(monkeypatch):
    run, phases = _run(monkeypatch, None)
    assert {c.duration_seconds for p in phases for c in p.cells.values()} == {2}
    assert all(run.rewarm_seconds(p) == 1.0 for p in phases)


def test_a_window_after_an_idle_gap_gets_the_longer_rewarm_in_every_phase(monkeypatch):
    run, phases = _run(monkeypatch, LaterTables(duration_s=1, rewarm_s=0.5, warmup_cap_s=1, repetitions=2))
    run.ctx.config.idle_rewarm_s = 1.5
    live = run.lives["a"]
    live.load_ended = None

    def rewarm(phase, now):  # the phase's re-warm and what the idle gap adds, as measure() sums them
        extra, idle = run.idle_rewarm(live, now)
        return run.rewarm_seconds(phase) + extra, idle

    assert rewarm(phases[0], now=100.0) == (1.0, None)  # no load since it started: not known
    live.load_ended = 98.0
    assert rewarm(phases[0], now=100.0) == (1.0, 2.0)
    live.load_ended = 60.0
    assert rewarm(phases[0], now=100.0) == (2.5, 40.0)
    assert rewarm(phases[1], now=100.0) == (2.0, 40.0)  # the later tables' 0.5 s, plus as much
    live.load_ended = 75.0
    assert rewarm(phases[1], now=100.0) == (1.25, 25.0)
    run.ctx.config.idle_rewarm_s = 0.0
    assert rewarm(phases[1], now=100.0) == (0.5, 25.0)
    run.ctx.config.idle_rewarm_s = 1.5
    live.stack.definition.run = RunSpec(command="true", idle_rewarm=False)
    assert rewarm(phases[1], now=100.0) == (0.5, 25.0), "a runtime declared to read no slower after a gap: none"


def test_a_later_tables_first_window_takes_the_warm_up_left_to_it_as_its_lead_in(monkeypatch):
    """pipeline/warming.py leaves a one-window warm-up of a later table to the cell's first window: measure() runs
    that window with a re-warm at least the warm-up's length (the idle gap's longer one when that is longer), records
    the warm-up on the cell and the stack, and the cell's next window has the plain re-warm again."""
    from pgarena.load.schedule import Slot
    from pgarena.results.models import Warmup

    later = LaterTables(duration_s=1, rewarm_s=0.5, warmup_cap_s=1, repetitions=2)
    run, phases = _run(monkeypatch, later)
    rest = phases[1]
    run.ctx.config.idle_rewarm_s = 1.5
    run.ctx.log, run.ctx.db, run.ctx.results.generator_headroom = (lambda line: None), None, None
    run.ctx.progress = SimpleNamespace(cell_done=lambda: None, position=lambda: "", cell_started=lambda *a: None,
                                       repetition_done=lambda *a: None)
    run.saver, run.record.phases = SimpleNamespace(save=lambda now=True: None), []
    now = [1000.0]
    monkeypatch.setattr(interleaved.time, "monotonic", lambda: now[0])
    for live in run.lives.values():
        live.__dict__.update(crashed=lambda: False, connections=None, use_network=lambda cell: None, server=None,
                             base_url="", routes={}, cpu=SimpleNamespace(source="cgroup"), load_ended=999.0,
                             stack_cpu_seconds=None, warmed={("perf-test", None)},
                             info=SimpleNamespace(warmup_seconds=None, warmup_steady=None))
    asked: list[float] = []

    def measure_repetition(cell_run, *, rewarm_s, **kwargs):
        asked.append(rewarm_s)
        return SimpleNamespace(rps=1000.0, idle_seconds=None, peak_connections=None, index=1)
    monkeypatch.setattr(interleaved, "measure_repetition", measure_repetition)
    monkeypatch.setattr(interleaved, "repetition_line", lambda *a: "")
    monkeypatch.setattr(interleaved, "summarize", lambda *a, **k: None)
    monkeypatch.setattr(run, "_cell_run", lambda live, cell: None)
    key = next(k for k in rest.cells if k[0] == "a" and rest.cells[k].workload == "users")
    run.lead_ins[("a", "users", None)] = Warmup(seconds=1.0, steady=False, minimum_seconds=1.0, cap_seconds=1.0,
                                                windows_rps=[], lead_in=True)
    assert run.measure(rest, Slot("a", key[1:], 1)) is not None
    assert asked == [1.0], "the 1 s warm-up, not the 0.5 s re-warm after a second idle"
    cell = rest.cells[key]
    assert cell.warmup is not None and cell.warmup.lead_in and ("users", None) in run.lives["a"].warmed
    now[0] = 1001.0
    run.measure(rest, Slot("a", key[1:], 2))
    assert asked[-1] == 0.5, "the next window: the plain re-warm"
    assert run.once_extras == [0.5, 0.0], "the lead-in's half second beyond the re-warm comes once (RoundsPolicy.once_of)"
    static = next(k for k in rest.cells if k[0] == "b" and rest.cells[k].workload == "static")
    run.lead_ins[("b", "static", None)] = Warmup(seconds=1.0, steady=False, minimum_seconds=1.0, cap_seconds=1.0,
                                                 windows_rps=[], lead_in=True)
    now[0] = 1100.0  # 101 s idle: the idle gap's 0.5 + 1.5 s is longer than the warm-up
    run.measure(rest, Slot("b", static[1:], 1))
    assert asked[-1] == 2.0 and rest.cells[static].warmup is not None and not run.lead_ins
    assert run.once_extras[-1] == 0.0, "the idle gap's re-warm recurs in later rounds; the warm-up added nothing to it"
