"""The interleaved schedule's warm-up (pipeline/warming.py): stacks warm in turns until each is steady."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pgarena.config.run import LaterTables
from pgarena.config.stackdef import RunSpec
from pgarena.load.warmup import STEADY_SPAN, WindowResult
from pgarena.pipeline import warming
from pgarena.results.models import Cell


def _live(stack: str, min_warmup_s: float = 0.0, min_workload_warmup_s: float = 0.0) -> SimpleNamespace:
    spec = RunSpec(command="true", min_warmup_s=min_warmup_s, min_workload_warmup_s=min_workload_warmup_s)
    return SimpleNamespace(id=stack, warmed=set(), crashed=lambda: False, connections=None,
                           use_network=lambda cell: None, stack_cpu_seconds=None, cpu=SimpleNamespace(probe=None),
                           info=SimpleNamespace(warmup_seconds=None, warmup_steady=None, warmup_idle_cpu_fraction=None),
                           stack=SimpleNamespace(definition=SimpleNamespace(run=spec)))


def _cell(stack: str, vus: int = 50) -> Cell:
    return Cell(stack=stack, workload="perf-test", parameter_name="rows", parameter=1, vus=vus, engine="oha",
                warmup_seconds=1, duration_seconds=1)


class _Config(SimpleNamespace):
    def model_copy(self, update: dict) -> _Config:
        return _Config(**{**vars(self), **update})


def _run(cells: list[Cell], lives: dict[str, SimpleNamespace], cap_s: float, log: list[str],
         later: LaterTables | None = None) -> SimpleNamespace:
    config = _Config(warmup_s=1.0, warmup_cap_s=cap_s, pool_size=10)
    ctx = SimpleNamespace(config=config, engine="oha", db=None, log=log.append)
    def idle_meters(busy: str) -> dict[str, float]:  # as InterleavedRun._idle_meters
        return {sid: live.stack_cpu_seconds() for sid, live in lives.items()
                if sid != busy and live.stack_cpu_seconds is not None}
    return SimpleNamespace(ctx=ctx, lives=lives, _later=lambda phase: later, _cell_run=lambda live, cell: live.id,
                           lead_ins={}, warm_idle_cpu_s={}, warm_idle_wall_s={}, _idle_meters=idle_meters)


@pytest.fixture
def windows(monkeypatch: pytest.MonkeyPatch):
    """Scripted warm-up windows by stack; returns (script, the stacks in the order they were loaded, sleeps)."""
    script: dict[str, list[float]] = {}
    order: list[str] = []
    sleeps: list[float] = []
    clock = [0.0]

    def warm_window(stack, *, engine, config, db, seconds):
        order.append(stack)
        clock[0] += seconds
        return WindowResult(rps=script[stack][order.count(stack) - 1], duration_s=seconds, answered_2xx=10)
    monkeypatch.setattr(warming, "warm_window", warm_window)
    monkeypatch.setattr(warming, "time", SimpleNamespace(sleep=sleeps.append, monotonic=lambda: clock[0],
                                                         monotonic_ns=lambda: int(clock[0] * 1e9)))
    return script, order, sleeps


def test_stacks_warm_in_turns_and_a_steady_one_leaves_the_turn(windows) -> None:
    script, order, sleeps = windows
    script["go"] = [1000.0] * 40  # steady as soon as the rule can tell
    script["jvm"] = [100.0 * 1.05 ** i for i in range(20)] + [265.0] * 20  # climbing for 20 windows, then flat
    lives = {"go": _live("go"), "jvm": _live("jvm")}
    cells = [_cell("go"), _cell("jvm")]
    log: list[str] = []
    phase = SimpleNamespace(cells={c.key: c for c in cells})
    warming.warm_stacks(_run(cells, lives, 60, log), phase)  # type: ignore[arg-type]
    first = STEADY_SPAN
    assert order[:2 * first] == ["go", "jvm"] * first, "in turns while both warm"
    alone = len(order) - 2 * first
    assert set(order[2 * first:]) == {"jvm"} and sleeps == [1.0] * (alone - 1), "then the JIT alone, pausing between"
    go, jvm = cells
    assert go.warmup.steady and go.warmup.seconds == first
    assert jvm.warmup.steady and 20 < jvm.warmup.seconds < 20 + first + 1, jvm.warmup.windows_rps
    assert lives["jvm"].info.warmup_seconds == jvm.warmup.seconds and lives["jvm"].info.warmup_steady is True
    assert any("[go] perf-test: warmed 10 s" in line for line in log)


def test_one_warm_up_per_stack_and_workload_and_the_cap_is_said(windows) -> None:
    script, order, sleeps = windows
    script["jvm"] = [100.0 * 1.05 ** i for i in range(40)]
    lives = {"jvm": _live("jvm")}
    cells = [_cell("jvm", 1), _cell("jvm", 50)]
    log: list[str] = []
    warming.warm_stacks(_run(cells, lives, 15, log), SimpleNamespace(cells={c.key: c for c in cells}))  # type: ignore[arg-type]
    assert len(order) == 15 and cells[0].warmup is not None and cells[1].warmup is None
    assert not cells[0].warmup.steady and lives["jvm"].info.warmup_steady is False
    assert log == ["[jvm] perf-test: warmed 15 s (not steady at the cap)"]


def test_cells_with_windows_are_warmed_only_again_after_a_restart_and_keep_their_first_record(windows) -> None:
    script, order, _sleeps = windows
    script["go"] = [1000.0] * 40
    lives = {"go": _live("go")}
    (cell,) = cells = [_cell("go")]
    first = SimpleNamespace(seconds=99.0)
    cell.repetitions.append(SimpleNamespace())  # type: ignore[arg-type]
    run = _run(cells, lives, 60, [])
    phase = SimpleNamespace(cells={cell.key: cell})
    warming.warm_stacks(run, phase)  # type: ignore[arg-type]
    assert order == []
    cell.warmup = first  # type: ignore[assignment]
    warming.warm_stacks(run, phase, {cell.key}, again=True)  # type: ignore[arg-type]
    assert order == ["go"] * STEADY_SPAN and cell.warmup is first


def test_a_declared_least_warm_up_holds_once_after_a_start_not_for_each_workload(windows) -> None:
    script, order, _sleeps = windows
    script["jvm"] = [1000.0] * 60  # steady at once: only the declared minimum keeps it warming
    lives = {"jvm": _live("jvm", min_warmup_s=25.0)}
    cells = [_cell("jvm"), Cell(stack="jvm", workload="users", parameter_name="limit", parameter=20, vus=50,
                                engine="oha", warmup_seconds=1, duration_seconds=1)]
    run = _run(cells, lives, 60, [])
    warming.warm_stacks(run, SimpleNamespace(cells={cells[0].key: cells[0]}))  # type: ignore[arg-type]
    assert cells[0].warmup.seconds == 25 and cells[0].warmup.minimum_seconds == 25
    script["jvm"] = [1000.0] * 60
    order.clear()
    warming.warm_stacks(run, SimpleNamespace(cells={cells[1].key: cells[1]}))  # type: ignore[arg-type]
    assert cells[1].warmup.seconds == STEADY_SPAN and cells[1].warmup.minimum_seconds == 1.0, \
        "a later workload of the warmed JIT warms by the rule alone"
    lives["jvm"] = _live("jvm", min_warmup_s=25.0)  # restarted: nothing warmed since its start
    order.clear()
    cells[1].repetitions.append(SimpleNamespace())  # type: ignore[arg-type]
    warming.warm_stacks(run, SimpleNamespace(cells={cells[1].key: cells[1]}), again=True)  # type: ignore[arg-type]
    assert len(order) == 25, "after a restart the first warm-up holds the declared least again"


def _users(stack: str) -> Cell:
    return Cell(stack=stack, workload="users", parameter_name="limit", parameter=20, vus=50, engine="oha",
                warmup_seconds=1, duration_seconds=1)


def test_a_table_after_the_headline_warms_a_jit_workload_its_declared_least_and_no_one_else_longer(windows) -> None:
    """The tables after the headline warm each cell a second (LaterTables.warmup_cap_s); a JIT stack that declares
    min_workload_warmup_s warms each of its workloads after its first that long, its cap raised to it."""
    script, order, _sleeps = windows
    script["jvm"], script["go"] = [300.0 * 1.1 ** i for i in range(20)], [1000.0] * 20  # the JVM still climbing
    lives = {"jvm": _live("jvm", min_warmup_s=25.0, min_workload_warmup_s=4.0), "go": _live("go")}
    for live in lives.values():
        live.warmed.add(("perf-test", None))  # the headline warmed both
    cells = [_users("jvm"), _users("go")]
    later = LaterTables(duration_s=1, rewarm_s=0.5, warmup_cap_s=1, repetitions=2)
    phase = SimpleNamespace(cells={c.key: c for c in cells})
    log: list[str] = []
    run = _run(cells, lives, 60, log, later)
    warming.warm_stacks(run, phase)  # type: ignore[arg-type]
    jvm, go = cells
    assert order == ["jvm"] * 4, "go's one-second warm-up is left to its first window's lead-in"
    assert (jvm.warmup.seconds, jvm.warmup.minimum_seconds, jvm.warmup.steady) == (4, 4.0, False)
    assert go.warmup is None and ("users", None) not in lives["go"].warmed
    # the first window of go's users cell takes it: its re-warm is at least the warm-up, recorded as one
    assert warming.lead_in_s(run, lives["go"], go) == 1.0 and warming.lead_in_s(run, lives["go"], go) == 0.0
    warming.took_lead_in(run, lives["go"], go, peak=None)
    assert (go.warmup.seconds, go.warmup.minimum_seconds, go.warmup.lead_in, go.warmup.windows_rps) == (1, 1, True, [])
    assert ("users", None) in lives["go"].warmed and lives["go"].info.warmup_steady is False
    assert log[-1] == "[go] users: warmed 1 s as its first window's lead-in (not steady at the cap)"


def test_a_lead_in_warm_up_is_taken_by_whichever_cell_of_the_workload_comes_first_and_not_after_a_restart(
        windows) -> None:
    script, order, _sleeps = windows
    script["go"] = [1000.0] * 5
    lives = {"go": _live("go")}
    lives["go"].warmed.add(("perf-test", None))
    cells = [_users("go"), Cell(stack="go", workload="users", parameter_name="limit", parameter=1000, vus=50,
                                engine="oha", warmup_seconds=1, duration_seconds=1)]
    later = LaterTables(duration_s=1, rewarm_s=0.5, warmup_cap_s=1, repetitions=2)
    run = _run(cells, lives, 60, [], later)
    warming.warm_stacks(run, SimpleNamespace(cells={c.key: c for c in cells}))  # type: ignore[arg-type]
    assert order == [] and list(run.lead_ins) == [("go", "users", None)]
    assert warming.lead_in_s(run, lives["go"], cells[1]) == 1.0 and cells[1].warmup is not None
    assert warming.lead_in_s(run, lives["go"], cells[0]) == 0.0 and cells[0].warmup is None
    cells[0].repetitions.append(SimpleNamespace())  # type: ignore[arg-type]
    run.lead_ins.clear()
    warming.warm_stacks(run, SimpleNamespace(cells={cells[0].key: cells[0]}), again=True)  # type: ignore[arg-type]
    assert order == ["go"] and not run.lead_ins, "a restarted stack warms with a window of its own"


def test_outside_the_later_tables_the_profiles_cap_still_bounds_a_declared_least(windows) -> None:
    script, order, _sleeps = windows
    script["jvm"] = [1000.0] * 60
    lives = {"jvm": _live("jvm", min_warmup_s=45.0)}
    (cell,) = cells = [_cell("jvm")]
    warming.warm_stacks(_run(cells, lives, 15, []), SimpleNamespace(cells={cell.key: cell}))  # type: ignore[arg-type]
    assert len(order) == 15 and cell.warmup.seconds == 15


def test_what_the_other_stacks_use_of_the_cpu_while_one_warms_is_recorded_and_a_busy_one_named(windows) -> None:
    """A JIT compiling in the background takes CPU from the stack whose warm-up window runs: the warm-up records the
    others' CPU during each window, and each stack's share of a CPU while the others warmed."""
    script, order, _sleeps = windows
    script["go"], script["jvm"] = [1000.0] * 40, [1000.0] * 40
    lives = {"go": _live("go"), "jvm": _live("jvm", min_warmup_s=15.0)}
    jvm_cpu = [0.0]
    lives["jvm"].stack_cpu_seconds = lambda: jvm_cpu[0] + 0.4 * order.count("go")  # 0.4 s of CPU in each go window
    lives["go"].stack_cpu_seconds = lambda: 0.0
    log: list[str] = []
    cells = [_cell("go"), _cell("jvm")]
    phase = SimpleNamespace(cells={c.key: c for c in cells})
    warming.warm_stacks(_run(cells, lives, 60, log), phase)  # type: ignore[arg-type]
    go, jvm = cells
    assert go.warmup.windows_others_cpu == [0.4] * STEADY_SPAN and jvm.warmup.windows_others_cpu == [0.0] * 15
    assert lives["jvm"].info.warmup_idle_cpu_fraction == 0.4 and lives["go"].info.warmup_idle_cpu_fraction == 0.0
    assert "[jvm] used 40% of a CPU while other stacks warmed up" in log
    assert not any(line.startswith("[go] used") for line in log)


def test_each_warm_up_window_records_the_probes_reading_without_waiting_for_its_last_unit(windows) -> None:
    script, _order, _sleeps = windows
    script["go"] = [750.0] * 5 + [1000.0] * 20  # slow for five windows, and so was the machine
    asked: list[float | None] = []
    units = iter([1333.0] * 5 + [1000.0] * 20)

    def reading(start_ns: int, end_ns: int, *, wait_s: float | None = None) -> SimpleNamespace:
        assert end_ns > start_ns
        asked.append(wait_s)
        return SimpleNamespace(unit_ns=next(units))
    lives = {"go": _live("go")}
    marks: list[str] = []
    probe = SimpleNamespace(reading=reading, load_starts=lambda _: marks.append("start"),
                            load_ended=lambda _: marks.append("end"))
    lives["go"].cpu = SimpleNamespace(probe=probe)
    (cell,) = cells = [_cell("go")]
    warming.warm_stacks(_run(cells, lives, 60, []), SimpleNamespace(cells={cell.key: cell}))  # type: ignore[arg-type]
    assert cell.warmup.seconds == STEADY_SPAN, "the machine's slow spell is no climb"
    assert cell.warmup.windows_unit_ns == [1333.0] * 5 + [1000.0] * 5 and set(asked) == {0.0}
    assert marks == ["start", "end"] * 10  # each warm-up window is load to the probe: no idle gap spans one
