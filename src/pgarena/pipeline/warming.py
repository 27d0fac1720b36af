"""The interleaved schedule's warm-up: every cell that needs one warms until steady (load/warmup.py), its stacks
taking their one-second windows in turn.

A JIT runtime compiles on the same CPU its requests run on. Warmed back to back at 50 connections, its compiler
threads get little of that CPU, and its rate keeps climbing long after the warm-up (java-spring-mvc-jdbc: 1,156
2xx/s after 120 s of back-to-back load, 2,341 after the same load in one-second visits with 3 s gaps;
`scripts/warmup_curve.py`). Warmed in turn, a stack warms as it will be measured — between its windows the others
load the server CPU and its compiler runs beside them — and a stack that is steady leaves the turn. A stack left
warming alone pauses for a window's length after each of its windows, so that its gaps do not vanish.

In the tables after the headline most warm-ups are one window at their cap (`LaterTables.warmup_cap_s`, 1 s): such a
warm-up is not a generator run of its own but the lead-in of the cell's first window, its re-warm lengthened to the
warm-up (`lead_in_s`). The cell then gets its second of load right before its first window rather than a round
earlier, and the run saves a generator start and the re-warm for each such cell (about 0.8 s of the ~190 cells of
`make bench`'s later tables). A longer warm-up (a JIT's declared least) still warms in turns.

Each warm-up window records the speed probe's reading (the rule takes the machine's speed out: load/warmup.py) and
the other stacks' CPU during it (their cgroups), and each stack's record its share of a CPU while the others warmed:
a JIT compiling between its windows takes it from the stacks that warm next (warmx1, 2026-11-29: 8 stacks, the
windows right after java-spring-mvc-jdbc's had 0.2–0.3 of a CPU taken, the others about none).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from pgarena.db.connections import add_pool_flag
from pgarena.load.engines.base import EngineOutputError
from pgarena.load.measure import warm_window
from pgarena.load.warmup import WINDOW_S, Warming
from pgarena.results.models import Cell, Warmup

if TYPE_CHECKING:
    from pgarena.config.run import LaterTables, RunConfig
    from pgarena.load.measure import CellRun
    from pgarena.pipeline.context import LiveStack, RunContext


class _Phase(Protocol):
    cells: Mapping[tuple, Cell]


class InterleavedRun(Protocol):
    """What the warm-up uses of pipeline/interleaved.py's run (a protocol: that module imports this one)."""

    ctx: RunContext
    lives: dict[str, LiveStack]
    lead_ins: dict[tuple, Warmup]
    warm_idle_cpu_s: dict[str, float]
    warm_idle_wall_s: dict[str, float]

    def _idle_meters(self, busy: str) -> dict[str, float]: ...

    def _later(self, phase: _Phase) -> LaterTables | None: ...

    def _cell_run(self, live: LiveStack, cell: Cell) -> CellRun: ...


@dataclass
class _Turn:
    """One cell warming: its stack, its window-by-window state and the most connections seen."""

    cell: Cell
    live: LiveStack
    warming: Warming
    peak: int | None = None
    others_cpu: list[float] = field(default_factory=list)
    """The other stacks' CPU during each of its windows, together, as a share of one CPU."""


def folds_into_lead_in(later: LaterTables | None, cap_s: float) -> bool:
    """Whether a warm-up capped at `cap_s` is taken as the lead-in of its cell's first window (the module docstring):
    in a table after the headline (`later`), when it is one warm-up window at most."""
    return later is not None and cap_s <= WINDOW_S


def warm_stacks(run: InterleavedRun, phase: _Phase, keys: Collection[tuple] | None = None,
                again: bool = False) -> None:
    """Warm the cells of `phase` that have no window yet (or, `again`, whose stacks were restarted: the first
    warm-up stays the one the cell and the stack record), in turns until each is steady or at its cap (at least
    the profile's warm-up or the stack's declared minimum). `keys`: only these cells (None: the phase's). A warm-up
    of one window in a table after the headline is left to the first window's lead-in (`run.lead_ins`, keyed by
    stack, workload and database delay: whichever of its cells is measured first takes it)."""
    ctx = run.ctx
    config = ctx.config
    later = run._later(phase)
    if later is not None:
        config = config.model_copy(update={"warmup_cap_s": max(later.warmup_cap_s, config.warmup_s)})
    turns: list[_Turn] = []
    claimed: set[tuple] = set()
    first = {sid for sid, live in run.lives.items() if not live.warmed}  # nothing warmed since their start
    for key, cell in phase.cells.items():
        live = run.lives[key[0]]
        which = (key[0], cell.workload, cell.db_rtt_ms)
        if ((keys is not None and key not in keys) or (cell.workload, cell.db_rtt_ms) in live.warmed
                or which in claimed or (cell.repetitions and not again) or cell.status == "failed"
                or live.crashed()):
            continue
        claimed.add(which)  # a stack warms once per workload, not again for each cell of it
        # a JIT runtime's declared least warm-up: once after each start, its first turn (stackdef.min_warmup_s),
        # and for each workload after it (min_workload_warmup_s). A table after the headline raises its cap (1 s,
        # to keep them cheap) to it, as its forecast does (rounds.phase_need); elsewhere the profile's cap wins.
        minimum = live.stack.definition.run.least_warmup_s(config.warmup_s, live.id in first)
        first.discard(live.id)
        cap = max(config.warmup_cap_s, minimum) if later is not None else config.warmup_cap_s
        if not again and folds_into_lead_in(later, cap):
            run.lead_ins[which] = Warmup(seconds=cap, steady=False, minimum_seconds=min(minimum, cap), cap_seconds=cap,
                                         windows_rps=[], lead_in=True)
            continue
        turns.append(_Turn(cell, live, Warming(minimum_s=minimum, cap_s=cap)))
    used: dict[str, tuple[float, float]] = {}  # each stack's CPU and wall seconds while the others warmed
    while turns:
        alone = len(turns) == 1
        for turn in list(turns):
            if not _window(run, turn, config, used):
                turns.remove(turn)
                continue
            if turn.warming.done:
                turns.remove(turn)
                _finish(run, turn, again)
            elif alone:
                time.sleep(turn.warming.window_s)
    _record_idle(run, used)


IDLE_CPU_LIMIT = 0.05
"""A stack that used more than 5 % of one CPU while other stacks were under load is named (the log, the report)."""


def _record_idle(run: InterleavedRun, used: Mapping[str, tuple[float, float]]) -> None:
    """Add this warm-up's CPU of each stack while the others took their windows (`used`: CPU and wall seconds) to its
    record; above the limit, say so in the log."""
    for sid, (cpu, wall) in used.items():
        run.warm_idle_cpu_s[sid] = run.warm_idle_cpu_s.get(sid, 0.0) + cpu
        run.warm_idle_wall_s[sid] = run.warm_idle_wall_s.get(sid, 0.0) + wall
        run.lives[sid].info.warmup_idle_cpu_fraction = round(run.warm_idle_cpu_s[sid] / run.warm_idle_wall_s[sid], 4)
        if wall > 0 and cpu / wall > IDLE_CPU_LIMIT:
            run.ctx.log(f"[{sid}] used {cpu / wall:.0%} of a CPU while other stacks warmed up")


def _window(run: InterleavedRun, turn: _Turn, config: RunConfig, used: dict[str, tuple[float, float]]) -> bool:
    """One warm-up window of the turn's cell; False when the generator failed (said in the log)."""
    live, cell = turn.live, turn.cell
    live.use_network(cell)
    poller = live.connections
    if poller is not None:
        poller.active = True
        poller.take_peak(poll=False)  # starts the window's segment (a poll here would count for the one it ends)
    before, started = run._idle_meters(live.id), time.monotonic()
    probe = live.cpu.probe
    try:
        start_ns = time.monotonic_ns()
        if probe is not None:
            probe.load_starts(start_ns)  # a warm-up is load: it ends the idle gap after the last window
        window = warm_window(run._cell_run(live, cell), engine=run.ctx.engine,  # type: ignore[arg-type]
                             config=config, db=run.ctx.db, seconds=turn.warming.window_s)
        # not waiting for the window's last unit (a measured window's reading does): a trend of ~50 units a second
        # loses nothing by it, and 350 warm-up windows would wait up to 0.04 s each
        unit = probe.reading(start_ns, time.monotonic_ns(), wait_s=0.0).unit_ns if probe is not None else None
        turn.warming.add(window, unit)
    except EngineOutputError as exc:
        run.ctx.log(f"[{live.id}] warm-up failed: {exc}")
        return False
    finally:
        live.load_ended = time.monotonic()
        if probe is not None:
            probe.load_ended(time.monotonic_ns())
        if poller is not None:
            turn.peak = max((p for p in (turn.peak, poller.take_peak()) if p is not None), default=None)
            poller.active = False
            # the cell's peak includes its warm-up (Cell.peak_connections), as the sequential schedule's
            cell.peak_connections = max((p for p in (cell.peak_connections, turn.peak) if p is not None),
                                        default=None)
            add_pool_flag(cell.flags, cell.peak_connections, cell.pool_size or run.ctx.config.pool_size)
        _count_others(run, turn, before, time.monotonic() - started, used)
    return True


def _count_others(run: InterleavedRun, turn: _Turn, before: Mapping[str, float], wall: float,
                  used: dict[str, tuple[float, float]]) -> None:
    """The other stacks' CPU during one of `turn`'s windows (`before`: their CPU seconds at its start, from
    `run._idle_meters`), on the turn and added to `used`."""
    if wall <= 0 or not before:
        return
    together = 0.0
    for sid, cpu in cpu_since(run.lives, before).items():
        cpu_so_far, wall_so_far = used.get(sid, (0.0, 0.0))
        used[sid] = (cpu_so_far + cpu, wall_so_far + wall)
        together += cpu
    turn.others_cpu.append(round(together / wall, 4))


def cpu_since(lives: Mapping[str, LiveStack], before: Mapping[str, float]) -> dict[str, float]:
    """Each stack's CPU seconds since `before`, its meter's reading then (`InterleavedRun._idle_meters`, which takes
    only the stacks with a meter): what the stacks not under load used while one was."""
    return {sid: max(0.0, lives[sid].stack_cpu_seconds() - cpu) for sid, cpu in before.items()}  # type: ignore[misc]


def lead_in_s(run: InterleavedRun, live: LiveStack, cell: Cell) -> float:
    """The warm-up `warm_stacks` left to the first window of `cell` of `live` (0: none; taken: it is not left to the
    next one), which `took_lead_in` records once that window is measured."""
    warm = run.lead_ins.pop((live.id, cell.workload, cell.db_rtt_ms), None)
    if warm is None:
        return 0.0
    cell.warmup = warm
    return warm.seconds


def took_lead_in(run: InterleavedRun, live: LiveStack, cell: Cell, peak: int | None) -> None:
    """Record the warm-up `cell`'s first window took as its lead-in (`lead_in_s`), as a warm-up of its own is."""
    warm = cell.warmup
    assert warm is not None and warm.lead_in
    if live.connections is not None:
        warm.peak_connections = peak
    _record(run, live, cell, warm, again=False, how=" as its first window's lead-in")


def _finish(run: InterleavedRun, turn: _Turn, again: bool) -> None:
    live, cell = turn.live, turn.cell
    warm = turn.warming.outcome().record
    warm.windows_others_cpu = turn.others_cpu
    if live.connections is not None:
        warm.peak_connections = turn.peak
    _record(run, live, cell, warm, again, " after the restart" if again else "")


def _record(run: InterleavedRun, live: LiveStack, cell: Cell, warm: Warmup, again: bool, how: str) -> None:
    run.ctx.log(f"[{live.id}] {cell.workload}: warmed {warm.seconds:.3g} s"
                + how + ("" if warm.steady else " (not steady at the cap)"))
    live.warmed.add((cell.workload, cell.db_rtt_ms))
    if again:
        return
    cell.warmup = warm
    live.info.warmup_seconds = max(live.info.warmup_seconds or 0.0, warm.seconds)
    live.info.warmup_steady = warm.steady and live.info.warmup_steady is not False
