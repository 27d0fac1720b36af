"""Measuring a stack's cells one after another (the sequential schedule) and what each cell records."""

from __future__ import annotations

from contextlib import ExitStack

from pgarena.config.run import RunConfig, workload_parameters
from pgarena.config.stackdef import Stack
from pgarena.contract.flags import GENERATOR_BOUND_CPU_FRACTION
from pgarena.db.connections import ConnectionPoller, add_pool_flag
from pgarena.load.engines.base import EngineOutputError
from pgarena.load.measure import measure_cell, search_sustainable
from pgarena.load.summary import summarize
from pgarena.pipeline.context import LiveStack, RunContext
from pgarena.pipeline.lifecycle import bring_up
from pgarena.pipeline.plan import cells_at_pool, closed_peak, plan_cells, resolve_rate
from pgarena.pipeline.resilience import run_faults
from pgarena.pipeline.verified import known_wrong_columns, mark_invalid_answers
from pgarena.results.models import (
    Cell,
    StackInfo,
)
from pgarena.results.store import save
from pgarena.system.process import NotReady


def run_stack(ctx: RunContext, stack: Stack, info: StackInfo, kind: str) -> None:
    """The sequential schedule for one stack: bring it up, then its cells back to back, then stop it. A run
    with several pool sizes does this once per pool size (PGARENA_POOL_SIZE is read at start): the first
    start builds and verifies the stack, the next ones restart it and check it briefly (lifecycle.bring_up)."""
    pools: list[int | None] = list(ctx.config.pool_sizes) if kind == "run" and ctx.config.pool_sizes else [None]
    started = False
    for pool in pools:
        todo = pool_todo(ctx, stack, pool) if pool is not None else None
        if todo == []:
            ctx.log(f"[{stack.id}] pool size {pool}: measured before the interruption; kept")
            continue
        with ExitStack() as scope:
            live = bring_up(ctx, stack, info, kind, scope, pool_size=pool, restart=started)
            started = True
            if live is None:
                if info.status != "ok" or pool is None:
                    return  # its first start failed: the stack is done (the reason is in its info)
                not_started(ctx, todo or [], info.pool_starts[-1].problem if info.pool_starts else None)
                continue
            if kind == "run":
                sequential_cells(ctx, live)
        if info.status == "crashed":
            return


def pool_todo(ctx: RunContext, stack: Stack, pool: int) -> list[Cell]:
    """The cells of one stack at one pool size (a run with several) not measured yet."""
    cells = cells_at_pool(plan_cells(ctx.config, stack, ctx.engine.name), pool)  # type: ignore[union-attr]
    return [c for c in cells if c.key not in ctx.done_keys]


def not_started(ctx: RunContext, cells: list[Cell], problem: str | None) -> None:
    """Cells of a pool size the stack could not be restarted at (or answered wrongly after): failed, with why."""
    for cell in cells:
        cell.status, cell.error = "failed", (f"not measured: the stack restarted at pool size {cell.pool_size} "
                                             f"did not answer right ({problem or 'no answer'})")
        ctx.results.cells.append(cell)
        ctx.progress.cell_done()
    save(ctx.results, ctx.run_dir)


def sequential_cells(ctx: RunContext, live: LiveStack) -> None:
    """Every cell of one stack (at the pool size it was started with), back to back, then its SLO searches."""
    config = ctx.config
    warmed: set[str] = set()
    pool = live.pool_size if config.pool_sizes else None
    cells = cells_at_pool(plan_cells(config, live.stack, ctx.engine.name), pool)  # type: ignore[union-attr]
    for position, cell in enumerate(cells):
        last_of_workload = position + 1 == len(cells) or cells[position + 1].workload != cell.workload
        if cell.key not in ctx.done_keys:
            run_cell(ctx, live, cell, warmed)
            if live.info.status == "crashed":
                ctx.log(f"[{live.id}] crashed: {live.info.reason}")
                return
        searched = any(f.stack == live.id and f.workload == cell.workload for f in ctx.results.slo_searches)
        if config.slo_p99_ms is not None and last_of_workload and cell.workload in live.loadable and not searched:
            slo_search(ctx, live.id, cell.workload, live.base_url, live.routes, pool_size=pool)
            save(ctx.results, ctx.run_dir)
    if config.faults and not any(r.stack == live.id for r in ctx.results.resilience):
        run_faults(ctx, live)


def headroom_rps(ctx: RunContext) -> float | None:
    """The generator's measured ceiling (requests/s), for the generator-bound flag — only when the generator
    was the bottleneck of that measurement (its CPU at least GENERATOR_BOUND_CPU_FRACTION). Otherwise the
    trivial endpoint (or a busy machine) limited it: the figure is a lower bound of what the generator can
    do, and cells are judged by their own generator CPU alone."""
    headroom = ctx.results.generator_headroom
    if headroom is None or headroom.generator_cpu_fraction is None:
        return None
    return headroom.rps if headroom.generator_cpu_fraction >= GENERATOR_BOUND_CPU_FRACTION else None


def cell_title(cell: Cell) -> str:
    """'perf-test rows1 @ 50 VUs' for logs and the progress line."""
    title = f"{cell.workload} {cell.parameter_name or ''}{cell.parameter or ''} @ {cell.level_label}".replace("  ", " ")
    title = title if cell.db_rtt_ms is None else f"{title}, db RTT {cell.db_rtt_ms:g} ms"
    return title if cell.pool_dimension is None else f"{title}, pool {cell.pool_dimension}"


def run_cell(ctx: RunContext, live: LiveStack, cell: Cell, warmed: set[str]) -> None:
    """Measure one cell (or record why it cannot be measured) and save the results."""
    config, info = ctx.config, live.info
    # NOTE: every cell warms until its throughput is steady (warmup.py); this is the least it warms. A
    # stack's declared least warm-ups raise it (RunSpec.least_warmup_s).
    cell.warmup_seconds = live.stack.definition.run.least_warmup_s(config.warmup_s, not warmed)
    warmed.add(cell.workload)
    poller = live.connections
    if poller is not None:
        poller.take_peak()  # the cell's own segment starts here

    def on_warmed() -> None:
        if poller is not None and cell.warmup is not None:
            cell.warmup.peak_connections = poller.take_peak()

    def on_repetition(index: int, rps: float) -> None:
        if poller is not None and cell.repetitions:
            cell.repetitions[-1].peak_connections = poller.take_peak()
        ctx.progress.repetition_done(index, rps)

    mark_invalid_answers(ctx, cell)
    try:
        if cell.workload not in live.loadable:
            raise ValueError("verification failed; not loaded")
        resolve_rate(cell, ctx.results.cells)
    except ValueError as exc:
        cell.status, cell.error = "failed", str(exc)
    else:
        title = cell_title(cell)
        ctx.log(f"[{live.id}] {title} ({ctx.progress.position()})")
        ctx.progress.cell_started(live.id, title)
        live.use_network(cell)
        try:
            measure_cell(cell, engine=ctx.engine, config=config, db=ctx.db, server=live.server,  # type: ignore[arg-type]
                         base_url=live.base_url, run_dir=ctx.run_dir, routes=live.routes, log=ctx.log, cpu=live.cpu,
                         on_repetition=on_repetition, on_warmed=on_warmed, variants_cache=ctx.variants_cache,
                         known_wrong=known_wrong_columns(ctx, cell), places=ctx.generator_places,
                         answer=live.answer)
            record_cell_envelope(ctx.config, info, cell, poller)
            if cell.repetitions:
                summarize(cell, config, live.cpu.source, headroom_rps=headroom_rps(ctx))
        except (NotReady, EngineOutputError) as exc:
            cell.status, cell.error = "failed", str(exc)
            if live.crashed():
                live.note_crash()
    ctx.results.cells.append(cell)
    ctx.progress.cell_done()
    save(ctx.results, ctx.run_dir)


def record_cell_envelope(config: RunConfig, info: StackInfo, cell: Cell, poller: ConnectionPoller | None) -> None:
    """The cell's peak connections (flag pool-exceeded) and the stack's warm-up record."""
    peaks = [r.peak_connections for r in cell.repetitions if r.peak_connections is not None]
    if cell.warmup is not None and cell.warmup.peak_connections is not None:
        peaks.append(cell.warmup.peak_connections)
    rest = poller.take_peak() if poller is not None else None
    cell.peak_connections = max([*peaks, rest] if rest is not None else peaks, default=None)
    add_pool_flag(cell.flags, cell.peak_connections, cell.pool_size or config.pool_size)
    if cell.warmup is not None:
        info.warmup_seconds = max(info.warmup_seconds or 0.0, cell.warmup.seconds)
        info.warmup_steady = cell.warmup.steady and info.warmup_steady is not False


def slo_search(ctx: RunContext, stack_id: str, workload: str, base_url: str, routes: dict[str, str],
               pool_size: int | None = None) -> None:
    """Max sustainable throughput of the workload's first parameter under the SLO (a run with several pool
    sizes: at the one the stack runs at, `pool_size`)."""
    config = ctx.config
    parameter = workload_parameters(config, workload)[0]
    ctx.log(f"[{stack_id}] {workload}: searching the max sustainable rate (p99 ≤ {config.slo_p99_ms:g} ms, "
            f"errors ≤ {config.slo_max_error_rate:.0%})")
    found = search_sustainable(stack=stack_id, workload=workload, parameter=parameter,
                               peak_rps=closed_peak(ctx.results.cells, stack_id, workload, parameter,
                                                    pool_size=pool_size),
                               engine=ctx.engine, config=config, base_url=base_url, routes=routes,  # type: ignore[arg-type]
                               run_dir=ctx.run_dir, log=ctx.log)
    ctx.results.slo_searches.append(found)
    if found.answer_level is not None:
        high = f"{found.bracket_high:,.0f}" if found.bracket_high is not None else "not reached"
        ctx.log(f"[{stack_id}] {workload}: sustains {found.answer_level:,.0f} req/s offered "
                f"({found.answer_rps:,.0f} achieved); limit between {found.bracket_low:,.0f} and {high} "
                f"({found.stop_reason})")
    else:
        ctx.log(f"[{stack_id}] {workload}: no level met the SLO ({found.error or found.stop_reason})")


def slo_missing(ctx: RunContext, stack: Stack) -> bool:
    """A resumed stack still owes an SLO search (the run was stopped during it)."""
    if ctx.config.slo_p99_ms is None:
        return False
    workloads = {c.workload for c in ctx.results.cells if c.stack == stack.id and c.status == "ok"}
    return any(not any(f.stack == stack.id and f.workload == w for f in ctx.results.slo_searches)
               for w in workloads)
