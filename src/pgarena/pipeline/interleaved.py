"""The interleaved schedule: every stack up at once, rounds of windows in a fresh random order each round.

All stacks that can run beside each other are built, started, verified and warmed first; they then stay
up together (each pinned to the server CPU set, each in its own cgroup) while rounds of windows visit every
(stack, cell) once in the seeded order of `schedule.round_order`. One stack is under load at a time; each
window is preceded by a short re-warm that is not counted (with oha, its own process's lead-in: measure.py), longer
after a stack's idle gap (contract/idle.py). Because the stacks of a cell are measured
minutes apart at most, their ratio within a round is free of the machine's slow drift, and `paired` turns
the per-round figures into ratios with intervals and ranks (Abedi and Brecht, ICPE 2017).

The run goes in phases, each measured in rounds until its cells are settled (scheduler.run_rounds):
1. `headline` — the first table: the run's first workload (ranking.headline_key) at its first parameter and the highest closed-model
   level up to 50 VUs, for every stack, so a ranked answer exists within minutes;
2. `closed` — every other closed-model cell;
3. `open` — the open-model cells (relative rates need the closed-model peaks measured in 1–2).
SLO searches, when configured, follow per stack. Stacks that cannot coexist (a fixed port) run afterwards
in the sequential schedule, and the report says so.

Idle stacks must be idle: while one stack is under load the others' CPU (from their cgroups) is summed; a
stack that used more than `IDLE_CPU_LIMIT` of a CPU while idle is named in the report.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Collection, Hashable
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from pgarena.analysis.ranking import headline_key
from pgarena.config.run import LaterTables
from pgarena.config.stackdef import Stack
from pgarena.contract.idle import idle_rewarm_s
from pgarena.db.connections import add_pool_flag
from pgarena.db.startline import level_database
from pgarena.load.engines.base import EngineOutputError
from pgarena.load.measure import (
    CellRun,
    finish_cell,
    lead_in_applies,
    measure_repetition,
    repetition_line,
    start_cell,
)
from pgarena.load.schedule import Slot
from pgarena.load.scheduler import RoundsOutcome, recent_mean, run_rounds
from pgarena.load.summary import summarize
from pgarena.pipeline.plan import pool_batch_done, pool_suffix
from pgarena.pipeline.progress import format_duration
from pgarena.pipeline.rounds import (batch_is_last, drop_what_cannot_fit, headline_deadline_of, phase_deadline,
                                     rounds_policy, unranked_of)
from pgarena.pipeline.warming import IDLE_CPU_LIMIT, cpu_since, lead_in_s, took_lead_in, warm_stacks
from pgarena.results.models import Cell, PhaseRecord, ScheduleRecord, Warmup
from pgarena.results.store import Saver, save
from pgarena.system.process import NotReady

if TYPE_CHECKING:
    from pgarena.pipeline.context import LiveStack, RunContext

STOP_REASONS = {"settled": "settled", "out-of-reach": "out-of-reach", "max-rounds": "max-repetitions",
                "budget": "budget"}
"""Phase stop reasons as stored in a cell's summary."""


@dataclass
class _Phase:
    """Cells of one phase and the live stacks they belong to."""

    name: str
    cells: dict[tuple, Cell] = field(default_factory=dict)
    """Full cell key (stack first) → cell."""
    planned: int = 0
    """Its cells as planned, before any were left out for the budget (rounds.phase_deadline's weight)."""

    def pairs(self) -> list[tuple[str, Hashable]]:
        return [(key[0], key[1:]) for key in self.cells]


class InterleavedRun:
    """Executes the phases over the live stacks; windows are saved as they are measured (store.SAVE_EVERY_S)."""

    def __init__(self, ctx: RunContext, lives: list[LiveStack], record: ScheduleRecord,
                 pool: int | None = None) -> None:
        self.ctx, self.lives, self.record = ctx, {live.id: live for live in lives}, record
        self.pool = pool
        """The pool size every live stack was started with, in a run with several (None: the run's one)."""
        self.runs: dict[tuple, CellRun] = {}
        self.idle_cpu_s: dict[str, float] = {live.id: 0.0 for live in lives}
        self.idle_wall_s: dict[str, float] = {live.id: 0.0 for live in lives}
        self.warm_idle_cpu_s: dict[str, float] = {}
        self.warm_idle_wall_s: dict[str, float] = {}
        """Each stack's CPU while other stacks took warm-up windows, and those windows' wall time (warming.py)."""
        self.stored = {c.key: c for c in ctx.results.cells}
        self.saver = Saver(ctx)
        self.plan_index: dict[tuple, int] = {}
        """Every planned cell's position: stack by stack, each stack's cells in plan order."""
        self.phases: list[_Phase] = []
        self.finished_phases: set[str] = set()
        self.scope: ExitStack | None = None
        self.idle_extras: list[float] = []
        """The phase's windows' longer re-warms after an idle gap (0: none), in the order measured, one per window the
        scheduler times (rounds.headline_deadline_of)."""
        self.once_extras: list[float] = []  # per window as `idle_extras`: a lead-in's excess, not repeated (once_of)
        self.lead_ins: dict[tuple, Warmup] = {}
        """Warm-ups left to the lead-in of a cell's first window (pipeline/warming.py), by stack, workload, delay."""
        self.execution_scopes: dict[str, ExitStack] = {}
        """An A/B restarting its stacks between blocks (pipeline/executions.py): each stack's own scope in `scope`."""

    # --- planning -------------------------------------------------------------------------------------
    def plan(self) -> list[_Phase]:
        from pgarena.pipeline.verified import mark_invalid_answers
        from pgarena.pipeline.plan import cells_at_pool, plan_cells

        config, ctx = self.ctx.config, self.ctx
        all_cells: list[Cell] = []
        for live in self.lives.values():
            for cell in cells_at_pool(plan_cells(config, live.stack, ctx.engine.name), self.pool):  # type: ignore[union-attr]
                self.plan_index[cell.key] = len(self.plan_index)
                stored = self.stored.get(cell.key)
                if stored is not None:
                    all_cells.append(stored)
                    continue
                mark_invalid_answers(ctx, cell)
                if cell.workload not in live.loadable:
                    cell.status, cell.error = "failed", "verification failed; not loaded"
                    ctx.results.cells.append(cell)
                    self.stored[cell.key] = cell
                    continue
                all_cells.append(cell)
        headline = headline_key(all_cells, ctx.config.workloads)
        suffix = pool_suffix(self.pool)
        phases = [_Phase("headline" + suffix), _Phase("closed" + suffix), _Phase("open" + suffix)]
        for cell in all_cells:
            if cell.status == "failed" and not cell.repetitions:
                continue
            # an A/B races all its closed tables in one phase: a table settled early leaves its time to the others
            together = config.regression_margin is not None and cell.model == "closed"
            index = 0 if cell.key[1:] == headline or together else 1 if cell.model == "closed" else 2
            phases[index].cells[cell.key] = cell
        self.phases = [p for p in phases if p.cells]
        for phase in self.phases:
            phase.planned = len(phase.cells)
        for phase in self.phases:
            later = self._later(phase)
            if later is None:
                continue
            for cell in phase.cells.values():
                if not cell.repetitions:  # a resumed cell keeps the windows it was measured with
                    cell.duration_seconds = later.duration_s
        return self.phases

    def _later(self, phase: _Phase) -> LaterTables | None:
        """The quicker window plan of a table after the headline (None: the headline's, the run's)."""
        later = self.ctx.config.later_tables
        return None if later is None or phase.name.startswith("headline") else later

    def rewarm_seconds(self, phase: _Phase) -> float:
        """The re-warm before each window of `phase` (k6's 1 s minimum respected)."""
        later = self._later(phase)
        if later is None:
            return self.ctx.config.rewarm_seconds
        return self.ctx.config.model_copy(update={"rewarm_s": later.rewarm_s}).rewarm_seconds

    def idle_rewarm(self, live: LiveStack, now: float) -> tuple[float, float | None]:
        """The re-warm to add to the phase's before a window of `live` starting `now` (time.monotonic), and how long
        the stack had had no load (None: none since it started): none, or more after an idle gap (contract/idle.py)."""
        idle = None if live.load_ended is None else max(0.0, now - live.load_ended)
        extra = self.ctx.config.idle_rewarm_s if live.stack.definition.run.idle_rewarm else 0.0  # none: not needed
        return idle_rewarm_s(idle, extra), idle

    # --- one window -----------------------------------------------------------------------------------
    def _warm_stacks(self, phase: _Phase, keys: Collection[tuple] | None = None, again: bool = False) -> None:
        """Warm the cells without windows yet, their stacks in turns, until steady (pipeline/warming.py)."""
        warm_stacks(self, phase, keys, again)

    def _cell_run(self, live: LiveStack, cell: Cell) -> CellRun:
        from pgarena.pipeline.verified import known_wrong_columns

        run = self.runs.get(cell.key)
        if run is None:
            run = start_cell(cell, engine=self.ctx.engine, config=self.ctx.config, db=self.ctx.db,  # type: ignore[arg-type]
                             base_url=live.base_url, run_dir=self.ctx.run_dir, routes=live.routes, log=self.ctx.log,
                             variants_cache=self.ctx.variants_cache, known_wrong=known_wrong_columns(self.ctx, cell),
                             places=self.ctx.generator_places, answer=live.answer)
            self.runs[cell.key] = run
        return run

    def _idle_meters(self, busy: str) -> dict[str, float]:
        return {sid: live.stack_cpu_seconds() for sid, live in self.lives.items()
                if sid != busy and live.stack_cpu_seconds is not None and not live.crashed()}

    def measure(self, phase: _Phase, slot: Slot) -> tuple[float, float | None] | None:
        """One window of (slot.stack, slot.cell) in round slot.round: its requests/s and the speed probe's
        reading (None: not read), None if it failed."""
        from pgarena.pipeline.cells import cell_title, headroom_rps

        ctx, config = self.ctx, self.ctx.config
        live = self.lives[slot.stack]
        cell = phase.cells[(slot.stack, *slot.cell)]  # type: ignore[misc]
        self.idle_extras.append(0.0)
        self.once_extras.append(0.0)
        if live.crashed() or cell.status == "failed":
            ctx.progress.cell_done()
            return None
        title = cell_title(cell)
        ctx.log(f"[{live.id}] {title} round {slot.round} ({ctx.progress.position()})")
        ctx.progress.cell_started(live.id, f"{title} · round {slot.round}")
        before, started = self._idle_meters(live.id), time.monotonic()
        extra, idle = self.idle_rewarm(live, started)
        self.idle_extras[-1] = extra
        lead = lead_in_s(self, live, cell)  # a warm-up left to this window's lead-in, the re-warm at least that long
        self.once_extras[-1] = max(0.0, lead - (self.rewarm_seconds(phase) + extra))
        poller = live.connections
        if poller is not None:
            poller.active = True
            poller.take_peak(poll=False)
        try:
            from pgarena.pipeline.plan import resolve_rate

            resolve_rate(cell, ctx.results.cells)
            live.use_network(cell)
            rep = measure_repetition(self._cell_run(live, cell), engine=ctx.engine, config=config, db=ctx.db,  # type: ignore[arg-type]
                                     server=live.server, base_url=live.base_url, routes=live.routes, cpu=live.cpu,
                                     round_index=slot.round, rewarm_s=max(self.rewarm_seconds(phase) + extra, lead))
            rep.idle_seconds = None if idle is None else round(idle, 2)
        except ValueError as exc:  # a relative rate without a measured peak
            cell.status, cell.error = "failed", str(exc)
            rep = None
        except (NotReady, EngineOutputError) as exc:
            cell.status, cell.error = "failed", str(exc)
            if live.crashed():
                live.note_crash()
                ctx.log(f"[{live.id}] crashed: {live.info.reason}")
            rep = None
        live.load_ended = time.monotonic()
        if extra:
            self._count_idle_rewarm(phase, extra)
        peak = None
        if poller is not None:
            peak = poller.take_peak()
            poller.active = False
            if rep is not None:
                rep.peak_connections = peak
            cell.peak_connections = max((p for p in (cell.peak_connections, peak) if p is not None), default=None)
            add_pool_flag(cell.flags, cell.peak_connections, cell.pool_size or config.pool_size)
        if lead and rep is not None:
            took_lead_in(self, live, cell, peak)
        wall = time.monotonic() - started
        for sid, cpu in cpu_since(self.lives, before).items():
            self.idle_cpu_s[sid] += cpu
            self.idle_wall_s[sid] += wall
        if cell.key not in self.stored:
            ctx.results.cells.append(cell)
            self.stored[cell.key] = cell
        if rep is not None:
            ctx.log(repetition_line(rep, [r.rps for r in cell.repetitions], config))
            ctx.progress.repetition_done(rep.index, rep.rps)
            summarize(cell, config, live.cpu.source, headroom_rps=headroom_rps(ctx))
        ctx.progress.cell_done()
        self.saver.save(now=False)
        return (rep.rps, getattr(rep, "reference_unit_ns", None)) if rep is not None else None

    def _phase_record(self, phase: _Phase) -> PhaseRecord | None:
        """The schedule's record of `phase` (None: not begun)."""
        return next((p for p in self.record.phases if p.name == phase.name), None)

    def _count_idle_rewarm(self, phase: _Phase, extra: float) -> None:
        """The phase's record counts a window whose re-warm the idle gap lengthened by `extra` seconds."""
        record = self._phase_record(phase)
        if record is not None:
            record.idle_rewarm_windows += 1
            record.idle_rewarm_seconds = round(record.idle_rewarm_seconds + extra, 3)

    # --- phases ---------------------------------------------------------------------------------------
    def run_phase(self, phase: _Phase) -> RoundsOutcome:
        from pgarena.pipeline.cells import cell_title, headroom_rps

        ctx, config = self.ctx, self.ctx.config
        record = self._phase_record(phase)
        if record is None:
            record = PhaseRecord(name=phase.name, cells=len({k[1:] for k in phase.cells}),
                                 window_seconds=next(iter(phase.cells.values())).duration_seconds,
                                 rewarm_seconds=self.rewarm_seconds(phase),
                                 rewarm_lead_in=ctx.engine is not None and all(
                                     lead_in_applies(ctx.engine, c.model == "open", ctx.generator_places)
                                     for c in phase.cells.values()))
            self.record.phases.append(record)
        for live in self.lives.values():  # idle stacks are not polled for connections
            if live.connections is not None:
                live.connections.active = False
        if not drop_what_cannot_fit(self, phase, record, phase_deadline(self, phase)):
            record.stop_reason = "budget"
            self.finished_phases.add(phase.name)
            record.finished_at = dt.datetime.now(dt.timezone.utc)
            self.saver.save()
            ctx.log(f"{phase.name} phase: not measured, the time budget was spent before its least rounds")
            return RoundsOutcome(rounds=0, stop_reason="budget")
        levelled = level_database(ctx.db)  # the same start line for every phase: no dead tuples, no WAL due
        ctx.log(f"{phase.name} phase: database {levelled}")
        self._warm_stacks(phase)
        self.idle_extras, self.once_extras = [], []
        known = {(c.stack, c.key[1:], r.round): (r.rps, getattr(r, "reference_unit_ns", None))
                 for c in phase.cells.values() for r in c.repetitions if r.round is not None}
        later = self._later(phase)
        least = later.repetitions if later is not None else config.repetitions
        tables = len({key[1:] for p in self.phases for key in p.cells})
        # nothing after this phase (no other phase, pool size or SLO search): it may spend the budget's rest
        last = batch_is_last(self) and all(p.name in self.finished_phases for p in self.phases if p is not phase)
        static = phase_deadline(self, phase)  # after the warm-ups, as forecast: no earlier than the one above
        policy = rounds_policy(config, least, static, tables, last=last)
        resumed = len({r for _, _, r in known})  # rounds measured before a resume
        moving = headline_deadline_of(self, phase, static, last, least=max(0, policy.min_rounds - resumed))
        if moving is not None:
            policy = replace(policy, deadline_of=moving)
        policy = replace(policy, once_of=lambda: recent_mean(self.once_extras) or 0.0)
        ctx.progress.begin(len(phase.cells) * policy.min_rounds, already_done=min(len(known), len(phase.cells) * policy.min_rounds),
                           unit="window")
        left = "" if policy.deadline is None else f", {format_duration(max(0.0, policy.deadline - time.monotonic()))} of the budget"
        if moving is not None and ctx.deadline is not None:
            left = (f", what the tables after it will not need of the {format_duration(ctx.deadline - time.monotonic())} "
                    "left (its least rounds at the least)")
        ctx.log(f"{phase.name} phase: {record.cells} cell(s) × {len({k[0] for k in phase.cells})} stack(s), "
                f"{policy.min_rounds}–{policy.max_rounds} interleaved rounds (seed {self.record.seed}){left}")

        def round_end(index: int, unsettled: list[str]) -> None:
            record.rounds = index
            record.windows = sum(len(c.repetitions) for c in phase.cells.values())
            ctx.log(f"{phase.name}: round {index} done; "
                    + (f"{len(unsettled)} pair(s) not yet {'decided against the floor' if policy.gate else 'ordered or equivalent'}"
                       if unsettled else "every pair settled"))
            if index >= policy.min_rounds and unsettled:
                ctx.progress.total += len(phase.cells)
            self.saver.save()

        titles = {key[1:]: cell_title(cell) for key, cell in phase.cells.items()}
        from pgarena.pipeline.executions import restart_block
        outcome = run_rounds(phase.pairs(), seed=self.record.seed or 0, policy=policy,
                             measure=lambda slot: self.measure(phase, slot), known=known, on_round_end=round_end,
                             label=lambda cell: titles.get(cell, str(cell)), unranked=unranked_of(phase),
                             on_new_block=lambda block, racing: restart_block(self, phase, block, racing))
        for key, cell in phase.cells.items():
            run = self.runs.get(key)
            if run is not None:
                finish_cell(run, ctx.db, ctx.log)
            if cell.repetitions:
                summarize(cell, config, self.lives[key[0]].cpu.source, headroom_rps=headroom_rps(ctx))
                if cell.summary is not None:
                    cell.summary.stop_reason = STOP_REASONS[outcome.cell_stop.get(key[1:], outcome.stop_reason)]  # type: ignore[assignment]
                    cell.summary.final_look = key[0] in outcome.horizon.get(key[1:], ())
        record.stop_reason, record.unsettled = outcome.stop_reason, outcome.unsettled
        if outcome.seconds_per_window is not None:  # the scheduler's own timing of each window (a resume: its own)
            record.slot_seconds = round(outcome.seconds_per_window, 3)
        self.finished_phases.add(phase.name)
        record.finished_at = dt.datetime.now(dt.timezone.utc)
        self._record_idle()
        self.saver.save()
        ctx.log(f"{phase.name} phase: {outcome.rounds} round(s), {outcome.stop_reason}"
                + (f"; unsettled: {'; '.join(outcome.unsettled[:3])}" if outcome.unsettled else ""))
        return outcome

    def _record_idle(self) -> None:
        for sid, wall in self.idle_wall_s.items():
            if wall > 0:
                fraction = self.idle_cpu_s[sid] / wall
                self.lives[sid].info.idle_cpu_fraction = round(fraction, 4)
                if fraction > IDLE_CPU_LIMIT:
                    self.ctx.log(f"[{sid}] used {fraction:.0%} of a CPU while other stacks were measured: "
                                 "its background work may have disturbed their windows")


def run_interleaved(ctx: RunContext, stacks: list[Stack]) -> None:
    """Bring every stack up, run the phases in interleaved rounds, then the SLO searches; stacks stop when
    this returns (or on an error or Ctrl-C). A run with several pool sizes does this once per pool size
    (PGARENA_POOL_SIZE is read at start): every stack of one pool size is up and measured together, then all
    are stopped and restarted at the next (the first start builds and verifies, the next ones check briefly)."""
    pools: list[int | None] = list(ctx.config.pool_sizes) or [None]
    started: set[str] = set()
    for pool in pools:
        if pool is not None and pool_batch_done(ctx, stacks, pool):
            ctx.log(f"pool size {pool}: measured before the interruption; kept")
            continue
        _run_batch(ctx, stacks, pool, started)


def _run_batch(ctx: RunContext, stacks: list[Stack], pool: int | None, started: set[str]) -> None:
    """Every stack up at one pool size (None: the run's one), its phases in interleaved rounds, the SLO searches."""
    from pgarena.pipeline.cells import not_started, pool_todo, slo_search
    from pgarena.pipeline.lifecycle import bring_up

    record = ctx.results.schedule
    assert record is not None
    with ExitStack() as scope:
        lives, executions = [], {}
        for index, stack in enumerate(stacks):
            info = ctx.results.stack(stack.id)
            restart = stack.id in started
            ctx.later_bring_ups = sum(s.id not in started and s.definition.build is not None for s in stacks[index + 1:])
            if not restart:
                if info.status not in ("pending", "ok"):
                    continue  # its first start failed at an earlier pool size
                ctx.results.verifications = [v for v in ctx.results.verifications if v.stack != stack.id]
            where = scope.enter_context(ExitStack()) if ctx.config.restart_every else scope  # its own: restartable
            live = bring_up(ctx, stack, info, "run", where, pool_size=pool, restart=restart)
            started.add(stack.id)
            if live is None and restart and info.status == "ok" and pool is not None:
                not_started(ctx, pool_todo(ctx, stack, pool), info.pool_starts[-1].problem if info.pool_starts else None)
            elif live is None:
                ctx.log(f"[{stack.id}] {info.status}: {info.reason}")
                if info.log_tail:
                    ctx.log("    " + info.log_tail.replace("\n", "\n    "))
            else:
                if live.connections is not None:  # idle until its windows, which poll it (measure, warming)
                    live.connections.active = False
                lives.append(live)
                executions[stack.id] = where
            save(ctx.results, ctx.run_dir)
        if not lives:
            return
        run = InterleavedRun(ctx, lives, record, pool)
        run.scope, run.execution_scopes = scope, executions
        phases = run.plan()

        def plan_order(cell: Cell) -> int:
            """Stacks in the run's order, each stack's cells in plan order (the tables read as planned)."""
            return run.plan_index.get(cell.key, -1)

        for phase in phases:
            finished = next((p for p in record.phases if p.name == phase.name and p.stop_reason), None)
            if finished is not None and all(c.summary is not None for c in phase.cells.values()):
                ctx.log(f"{phase.name} phase: finished before the interruption; kept")
                continue
            run.run_phase(phase)
            ctx.results.cells.sort(key=plan_order)
            save(ctx.results, ctx.run_dir)
            if phase.name.startswith("headline"):
                from pgarena.report import write_reports

                write_reports(ctx.results, ctx.run_dir)
                ctx.log(f"headline table ranked: {ctx.run_dir / 'report.md'}")
        if ctx.config.slo_p99_ms is not None:
            for live in lives:
                if live.crashed():
                    continue
                for workload in dict.fromkeys(c.workload for c in ctx.results.cells
                                              if c.stack == live.id and c.status == "ok" and c.summary):
                    if not any(f.stack == live.id and f.workload == workload for f in ctx.results.slo_searches):
                        slo_search(ctx, live.id, workload, live.base_url, live.routes, pool_size=pool)
                        save(ctx.results, ctx.run_dir)
