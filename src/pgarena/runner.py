"""The pipeline: database → for each stack: build → start → verify → load cells → stop; save after each cell.

`execute` is the one library entry point the CLI calls for `run` and `verify`. It knows nothing of
argument parsing; it reports progress through a callback and returns the run directory.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pgarena import cgroups, loc
from pgarena import workloads as wl
from pgarena.connections import ConnectionPoller, add_pool_flag, pool_refusal, split_pool
from pgarena.envelope import NOT_PINNED_EXTERNAL, pinned_to, process_affinity, record_listening
from pgarena.startline import level_database, new_seed, shuffled
from pgarena.coldstart import cold_start_workload, measure_cold_start
from pgarena.headroom import HeadroomUnavailable, measure_headroom
from pgarena.progress import RunProgress
from pgarena.resources import SAMPLE_INTERVAL_S, CpuMeters
from pgarena.config import RunConfig, parse_rate, redact_url
from pgarena.engines import Engine, EngineUnavailable, get_engine
from pgarena.engines.base import EngineOutputError
from pgarena.environment import collect
from pgarena.postgres import SETTINGS_PROFILE_NAME, Database, free_port, load_workload_data, provide_database, server_facts
from pgarena.process import NotReady, ServerProcess, run_logged, tail, wait_until_healthy
from pgarena.measure import measure_cell, search_sustainable, summarize
from pgarena.results import (
    Cell,
    ResultsError,
    DatabaseInfo,
    RunResults,
    StackInfo,
    WorkloadVerification,
    save,
)
from pgarena.results import load as load_results
from pgarena.stackdef import Stack, StackLoadError, load_stacks, render_template
from pgarena.values import Verdict
from pgarena.verify import verify_stack

LOG_TAIL_LINES = 15

Log = Callable[[str], None]


class RunError(Exception):
    """The run cannot start (no stacks selected, engine missing, database unavailable)."""


def new_run_id() -> str:
    return dt.datetime.now().strftime("%Y%m%d-%H%M%S")


def _create_run_dir(config: RunConfig) -> Path:
    """A new, empty run folder: the given --run-id, or a timestamp (suffixed if another run took it)."""
    config.results_dir.mkdir(parents=True, exist_ok=True)
    if config.run_id:
        run_dir = config.results_dir / config.run_id
        try:
            run_dir.mkdir()
        except FileExistsError:
            raise RunError(f"{run_dir} already exists; choose another --run-id") from None
        return run_dir
    base = new_run_id()
    for attempt in range(1, 100):
        run_dir = config.results_dir / (base if attempt == 1 else f"{base}-{attempt}")
        try:
            run_dir.mkdir()  # atomic: two runs started in the same second get different folders
            return run_dir
        except FileExistsError:
            continue
    raise RunError(f"cannot create a run folder in {config.results_dir}")


def _stack_info(stack: Stack) -> StackInfo:
    d = stack.definition
    return StackInfo(
        lines_of_code=loc.count(stack.directory, d.source_globs) if d.source_globs else None,
        id=d.id, title=d.title, language=d.language, framework=d.framework, framework_version=d.framework_version,
        driver=d.driver, driver_version=d.driver_version, server=d.server, pooler=d.pooler,
        prepared_statements=d.prepared_statements, workloads=list(d.workloads), notes=list(d.notes),
        status="pending" if stack.available else "unavailable", reason=stack.unavailable_reason,
    )


def _config_error_info(error: StackLoadError) -> StackInfo:
    return StackInfo(
        id=error.stack_id, title=error.stack_id, language="?", framework="?", framework_version="?", driver="?",
        driver_version="?", server="", pooler="", prepared_statements=None, workloads=[], notes=[],
        status="config_error", reason=error.message,
    )


def select_stacks(config: RunConfig) -> tuple[list[Stack], list[StackLoadError]]:
    """The stacks the config asks for; an unknown id is a RunError naming the known ones."""
    stacks, errors = load_stacks(config.stacks_dir)
    if config.stacks is None:
        return stacks, errors
    by_id = {s.id: s for s in stacks}
    broken = {e.stack_id: e for e in errors}
    unknown = [sid for sid in config.stacks if sid not in by_id and sid not in broken]
    if unknown:
        known = ", ".join(sorted([*by_id, *broken])) or "none"
        raise RunError(f"unknown stack '{unknown[0]}'; stacks in {config.stacks_dir}: {known}")
    return [by_id[s] for s in config.stacks if s in by_id], [broken[s] for s in config.stacks if s in broken]


def stack_values(config: RunConfig, db: Database, stack: Stack, port: int) -> dict[str, str]:
    """pgarena's values for one stack: the template names of docs/contract.md."""
    return {
        "host": "127.0.0.1",
        "port": str(port),
        "database_url": db.url,
        "db_host": db.host,
        "db_port": str(db.port),
        "db_user": db.user,
        "db_password": db.password,
        "db_name": db.name,
        "pool_size": str(config.pool_size),
        "pool_size_per_worker": str(max(1, config.pool_size // config.workers)),
        "pool_sizes": ",".join(str(n) for n in split_pool(config.pool_size, config.workers)),
        "workers": str(config.workers),
        "stack_dir": str(stack.directory),
    }


def stack_environment(values: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """The process environment of a stack: ours, PGARENA_* and the stack's templated mapping."""
    env = dict(os.environ)
    env.update({f"PGARENA_{key.upper()}": value for key, value in values.items()})
    env.update({key: render_template(value, values) for key, value in extra.items()})
    return env


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def workload_parameters(config: RunConfig, workload: str) -> list[int | None]:
    """The parameters a workload is measured at (perf-test rows, users limits; [None] for the others).
    The first is the workload's headline parameter: cold start and the SLO search use it."""
    return {wl.PERF_TEST: list(config.perf_test_rows), wl.USERS: list(config.users_limits)}.get(workload, [None])


def plan_cells(config: RunConfig, stack: Stack, engine: str) -> list[Cell]:
    """Every cell of one stack, in the order they run."""
    cells = []
    for workload in config.workloads:
        if workload not in stack.definition.workloads:
            continue
        for parameter in workload_parameters(config, workload):
            common = dict(stack=stack.id, workload=workload, parameter_name=wl.PARAMETER_NAMES[workload],
                          parameter=parameter, engine=engine, warmup_seconds=config.warmup_s,
                          duration_seconds=config.duration_s)
            for vus in config.vus:
                cells.append(Cell(vus=vus, **common))
            for spec in config.arrival_rates:  # after the closed cells whose peak a relative rate scales
                value, relative = parse_rate(spec)
                cells.append(Cell(vus=config.open_connections, model="open", arrival_rate_spec=spec,
                                  arrival_rate=None if relative else value, **common))
    return cells


def closed_peak(cells: list[Cell], stack: str, workload: str, parameter: int | None) -> float | None:
    """The highest median RPS of the measured closed-model cells of one stack × workload × parameter."""
    peaks = [c.summary.rps.median for c in cells
             if c.stack == stack and c.workload == workload and c.parameter == parameter and c.model == "closed"
             and c.status == "ok" and c.summary is not None]
    return max(peaks) if peaks else None


def resolve_rate(cell: Cell, cells: list[Cell]) -> None:
    """Turn a relative arrival rate ('90%') into requests/s from the closed-model peak (ValueError if none)."""
    if cell.model != "open" or cell.arrival_rate is not None:
        return
    value, _ = parse_rate(cell.arrival_rate_spec or "")
    peak = closed_peak(cells, cell.stack, cell.workload, cell.parameter)
    if peak is None:
        raise ValueError(f"no measured closed-model cell to take {cell.arrival_rate_spec} of")
    cell.arrival_rate = round(value * peak, 1)


@dataclass
class _Context:
    config: RunConfig
    engine: Engine | None
    results: RunResults
    run_dir: Path
    db: Database
    log: Log
    cgroup_backend: cgroups.CgroupBackend | None = None
    db_group: cgroups.CpuGroup | None = None
    progress: RunProgress = field(default_factory=RunProgress)
    done_keys: set[tuple] = field(default_factory=set)
    """Cells already in results.json (a resumed run): not measured again."""
    connections: ConnectionPoller | None = None
    """The running stack's pg_stat_activity poller."""


def _run_stack(ctx: _Context, stack: Stack, info: StackInfo, kind: str) -> None:
    config, run_dir = ctx.config, ctx.run_dir
    logs = run_dir / "logs" / stack.id
    definition = stack.definition
    port = definition.run.port or free_port()
    if definition.run.port and port_in_use(port):
        info.status, info.reason = "start_failed", f"its fixed port {port} is already in use"
        return
    refusal = pool_refusal(definition.pool_per_worker, config.pool_size, config.workers)
    if refusal:
        info.status, info.reason = "config_error", refusal
        return
    values = stack_values(config, ctx.db, stack, port)
    info.database_levelled = level_database(ctx.db)
    ctx.log(f"[{stack.id}] database: {info.database_levelled}")
    if definition.build:
        ctx.log(f"[{stack.id}] building")
        build_log = logs / "build.log"
        step = run_logged(render_template(definition.build.command, values), cwd=stack.directory,
                          env=stack_environment(values, definition.build.env), log_path=build_log,
                          timeout_s=definition.build.timeout_s,  # every CPU of the run, not pgarena's own pin
                          cpus=sorted(set(config.generator_cpus) | set(config.server_cpus)))
        info.build_seconds = round(step.duration_s, 3)
        if not step.ok:
            why = f"timed out after {definition.build.timeout_s:.0f} s" if step.timed_out else f"exit code {step.returncode}"
            info.status, info.reason = "build_failed", f"build {why} (log: {build_log})"
            info.log_tail = tail(build_log, LOG_TAIL_LINES)
            return
    ctx.log(f"[{stack.id}] starting on port {port}")
    run_log = logs / "run.log"
    with ExitStack() as scope:
        group = scope.enter_context(ctx.cgroup_backend.create(stack.id)) if ctx.cgroup_backend else None
        server = scope.enter_context(ServerProcess(
            render_template(definition.run.command, values), cwd=stack.directory,
            env=stack_environment(values, definition.run.env), log_path=run_log, cpus=config.server_cpus,
            preexec=group.preexec_fn() if group else None))
        meters = {"stack": group.cpu_seconds} if group else {}
        if ctx.db_group:
            meters["db"] = ctx.db_group.cpu_seconds
        cpu = CpuMeters(meters, source=ctx.cgroup_backend.description if ctx.cgroup_backend else "psutil")
        ctx.connections = scope.enter_context(ConnectionPoller(ctx.db.admin_url, ctx.db.user))
        try:
            _serve_stack(ctx, stack, info, kind, server, cpu, values)
        finally:
            if info.status in ("ok", "crashed"):
                record_listening(info, server.pid, values["host"], ctx.log)  # again: a worker may bind late
            info.peak_connections = ctx.connections.peak
            add_pool_flag(info.flags, info.peak_connections, config.pool_size)
            ctx.connections = None


def _serve_stack(ctx: _Context, stack: Stack, info: StackInfo, kind: str, server: ServerProcess, cpu: CpuMeters,
                 values: dict[str, str]) -> None:
    """The started stack: health, cold start, verification, then its cells and SLO searches."""
    config, run_dir, definition = ctx.config, ctx.run_dir, stack.definition
    run_log = server.log_path
    base_url = f"http://127.0.0.1:{values['port']}"
    routes = dict(definition.routes)
    try:
        healthy = wait_until_healthy(server, base_url + definition.run.health_path,
                                     definition.run.startup_timeout_s)
    except NotReady as exc:
        info.status, info.reason = "start_failed", f"{exc} (log: {run_log})"
        info.log_tail = tail(run_log, LOG_TAIL_LINES)
        return
    info.startup_seconds = round(healthy, 3)
    info.status = "ok"
    record_listening(info, server.pid, values["host"], ctx.log)
    workloads = [w for w in config.workloads if w in definition.workloads]
    first = cold_start_workload(workloads)
    if first is not None:
        info.cold_start = measure_cold_start(
            base_url, workload=first, parameter=workload_parameters(config, first)[0], healthy_seconds=healthy,
            healthy_at=server.started_at + healthy, count=config.cold_start_requests,
            timeout_s=config.http_timeout_s, routes=routes)
        cs = info.cold_start
        ctx.log(f"[{stack.id}] healthy after {healthy:.2f} s; first correct answer at "
                + (f"{cs.first_correct_seconds:.2f} s" if cs.first_correct_seconds is not None else "— (none)")
                + f"; first request {cs.first_requests_ms[0]:.1f} ms, "
                  f"request {len(cs.first_requests_ms)} {cs.first_requests_ms[-1]:.1f} ms")
    ctx.log(f"[{stack.id}] verifying {', '.join(workloads)}")
    verifications = verify_stack(base_url, stack.id, workloads, ctx.db, perf_test_rows=config.perf_test_rows,
                                 users_limits=config.users_limits, timeout_s=config.http_timeout_s,
                                 health_path=definition.run.health_path, routes=routes)
    ctx.results.verifications.extend(verifications)
    for v in verifications:
        ctx.log(f"[{stack.id}] {v.workload}: {_verification_line(v)}")
    save(ctx.results, run_dir)
    if kind != "run":
        return
    loadable = {v.workload for v in verifications if v.ok}
    warmed: set[str] = set()
    cells = plan_cells(config, stack, ctx.engine.name)  # type: ignore[union-attr]
    for position, cell in enumerate(cells):
        last_of_workload = position + 1 == len(cells) or cells[position + 1].workload != cell.workload
        if cell.key not in ctx.done_keys:
            _run_cell(ctx, stack, info, cell, server, cpu, base_url, routes, loadable, warmed)
            if info.status == "crashed":
                ctx.log(f"[{stack.id}] crashed: {info.reason}")
                return
        searched = any(f.stack == stack.id and f.workload == cell.workload for f in ctx.results.slo_searches)
        if config.slo_p99_ms is not None and last_of_workload and cell.workload in loadable and not searched:
            _slo_search(ctx, stack.id, cell.workload, base_url, routes)
            save(ctx.results, ctx.run_dir)


def _run_cell(ctx: _Context, stack: Stack, info: StackInfo, cell: Cell, server: ServerProcess, cpu: CpuMeters,
              base_url: str, routes: dict[str, str], loadable: set[str], warmed: set[str]) -> None:
    """Measure one cell (or record why it cannot be measured) and save the results."""
    config = ctx.config
    # NOTE: every cell warms until its throughput is steady (warmup.py); this is the least it warms. A
    # stack's declared min_warmup_s raises that least before the first cell of each workload.
    first_minimum = max(config.warmup_s, stack.definition.run.min_warmup_s)
    cell.warmup_seconds = config.warmup_s if cell.workload in warmed else first_minimum
    warmed.add(cell.workload)
    poller = ctx.connections
    if poller is not None:
        poller.take_peak()  # the cell's own segment starts here

    def on_warmed() -> None:
        if poller is not None and cell.warmup is not None:
            cell.warmup.peak_connections = poller.take_peak()

    def on_repetition(index: int, rps: float) -> None:
        if poller is not None and cell.repetitions:
            cell.repetitions[-1].peak_connections = poller.take_peak()
        ctx.progress.repetition_done(index, rps)
    verification = ctx.results.verification(stack.id, cell.workload)
    if verification and verification.wrong_columns:
        cell.flags.append("columns-wrong")
    if verification and verification.accounting and verification.accounting.verdict is Verdict.WRONG:
        cell.flags.append("queries-wrong")
    try:
        if cell.workload not in loadable:
            raise ValueError("verification failed; not loaded")
        resolve_rate(cell, ctx.results.cells)
    except ValueError as exc:
        cell.status, cell.error = "failed", str(exc)
    else:
        title = f"{cell.workload} {cell.parameter_name or ''}{cell.parameter or ''} @ {cell.level_label}"
        title = title.replace("  ", " ")
        ctx.log(f"[{stack.id}] {title} ({ctx.progress.position()})")
        ctx.progress.cell_started(stack.id, title)
        try:
            measure_cell(cell, engine=ctx.engine, config=config, db=ctx.db, server=server,  # type: ignore[arg-type]
                         base_url=base_url, run_dir=ctx.run_dir, routes=routes, log=ctx.log, cpu=cpu,
                         on_repetition=on_repetition, on_warmed=on_warmed)
            _record_cell_envelope(ctx, info, cell)
            if cell.repetitions:
                summarize(cell, config, cpu.source)
        except (NotReady, EngineOutputError) as exc:
            cell.status, cell.error = "failed", str(exc)
            if server.exit_code() is not None:
                info.status, info.reason = "crashed", f"exited with code {server.exit_code()} under load"
                info.log_tail = tail(server.log_path, LOG_TAIL_LINES)
    ctx.results.cells.append(cell)
    ctx.progress.cell_done()
    save(ctx.results, ctx.run_dir)


def _record_cell_envelope(ctx: _Context, info: StackInfo, cell: Cell) -> None:
    """The cell's peak connections (flag pool-exceeded) and the stack's warm-up record."""
    if ctx.connections is not None:
        peaks = [r.peak_connections for r in cell.repetitions if r.peak_connections is not None]
        if cell.warmup is not None and cell.warmup.peak_connections is not None:
            peaks.append(cell.warmup.peak_connections)
        rest = ctx.connections.take_peak()
        cell.peak_connections = max([*peaks, rest] if rest is not None else peaks, default=None)
    add_pool_flag(cell.flags, cell.peak_connections, ctx.config.pool_size)
    if cell.warmup is not None:
        info.warmup_seconds = max(info.warmup_seconds or 0.0, cell.warmup.seconds)
        info.warmup_steady = cell.warmup.steady and info.warmup_steady is not False


def _slo_search(ctx: _Context, stack_id: str, workload: str, base_url: str, routes: dict[str, str]) -> None:
    """Max sustainable throughput of the workload's first parameter under the SLO."""
    config = ctx.config
    parameter = workload_parameters(config, workload)[0]
    ctx.log(f"[{stack_id}] {workload}: searching the max sustainable rate (p99 ≤ {config.slo_p99_ms:g} ms, "
            f"errors ≤ {config.slo_max_error_rate:.0%})")
    found = search_sustainable(stack=stack_id, workload=workload, parameter=parameter,
                               peak_rps=closed_peak(ctx.results.cells, stack_id, workload, parameter),
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


def _verification_line(v: WorkloadVerification) -> str:
    if not v.ok:
        failed = next((c for c in v.checks if not c.ok), None)
        return f"FAILED ({failed.name}: {failed.detail})" if failed else "FAILED"
    counts = {s: sum(1 for c in v.columns if c.verdict.symbol == s) for s in ("✅", "⚠️", "❌")}
    columns = f"columns {counts['✅']}✅ {counts['⚠️']}⚠️ {counts['❌']}❌, " if v.columns else ""
    bad = f"bad input {sum(c.ok for c in v.bad_input)}/{len(v.bad_input)}" if v.bad_input else "no bad-input cases"
    if v.accounting:
        a = v.accounting
        db = f", database {a.workload_statements_per_request:g} statements/request {a.verdict.symbol}"
        db += f" ({a.reason})" if a.reason else ""
    else:
        db = f", no database accounting ({v.accounting_unavailable})" if v.accounting_unavailable else ""
    return f"ok, {columns}{bad}{db}"


def _cpu_accounting(ctx: _Context, scope: ExitStack) -> None:
    """Exact CPU accounting through cgroups where the kernel offers it; psutil sampling otherwise."""
    backend = cgroups.probe()
    if isinstance(backend, str):
        ctx.results.environment.cpu_accounting = f"psutil sampling every {SAMPLE_INTERVAL_S:g} s ({backend})"
        ctx.log(f"CPU accounting: psutil sampling ({backend})")
        return
    ctx.cgroup_backend = backend
    ctx.results.environment.cpu_accounting = backend.description
    if ctx.db.postmaster_pid:
        ctx.db_group = scope.enter_context(backend.create("postgres"))
        ctx.db_group.add_tree(ctx.db.postmaster_pid)
    ctx.log(f"CPU accounting: {backend.description}")


def _generator_headroom(ctx: _Context) -> None:
    """The generator's ceiling against a trivial endpoint, recorded before any stack runs."""
    try:
        headroom = measure_headroom(ctx.engine, ctx.config, ctx.run_dir)  # type: ignore[arg-type]
    except HeadroomUnavailable as exc:
        ctx.results.environment.headroom_unavailable = str(exc)
        ctx.log(f"generator headroom not measured: {exc}")
        return
    ctx.results.generator_headroom = headroom
    ctx.log(f"generator headroom: {headroom.rps:,.0f} req/s against a trivial endpoint "
            f"({headroom.connections} connections, generator CPU "
            + (f"{headroom.generator_cpu_fraction:.0%})" if headroom.generator_cpu_fraction is not None else "?)"))
    save(ctx.results, ctx.run_dir)


FINISHED_STACK_STATES = ("unavailable", "config_error", "build_failed", "start_failed", "crashed")
"""Stacks that ended this way are not retried by a resume (an uninterrupted run would not retry them)."""


def load_for_resume(run_dir: Path, *, database_url: str | None = None) -> tuple[RunConfig, RunResults]:
    """The config and results of an unfinished run, to continue it (RunError if it cannot be)."""
    try:
        previous = load_results(run_dir)
    except ResultsError as exc:
        raise RunError(str(exc)) from None
    if previous.kind != "run":
        raise RunError(f"{run_dir} is a '{previous.kind}' run; only load runs can be resumed")
    if previous.status == "complete":
        raise RunError(f"{run_dir} is already complete; nothing to resume")
    stored = dict(previous.config)
    if stored.get("database_url"):
        if not database_url:
            raise RunError("the run used --database-url; pass it again (its password is not stored)")
        stored["database_url"] = database_url
    stored["run_id"] = previous.run_id
    return RunConfig.model_validate(stored), previous


def execute(
    config: RunConfig,
    *,
    kind: Literal["run", "verify"],
    project_dir: Path,
    command_line: str,
    log: Log = print,
    progress: RunProgress | None = None,
    resume: tuple[Path, RunResults] | None = None,
) -> Path:
    """Run (or only verify) the configured stacks; return the run directory with results.json.

    `resume=(run_dir, results)` continues an interrupted run in its folder: cells already in its
    results.json are kept and not measured again; the cell that was running when it stopped is redone.
    """
    stacks, load_errors = select_stacks(config)
    if not stacks and not load_errors:
        raise RunError(f"no stacks selected (stacks folder: {config.stacks_dir})")
    engine = get_engine(config.engine) if kind == "run" else None
    if engine is not None:
        engine.binary  # noqa: B018 — raises EngineUnavailable early, before any build
    progress = progress or RunProgress()
    if config.seed is None and resume is None:
        config = config.model_copy(update={"seed": new_seed()})  # stored in results.config: --seed repeats it
    if resume is None:
        run_dir = _create_run_dir(config)
        version_commands = [argv for s in stacks if s.available for argv in s.definition.version_commands]
        environment = collect(project_dir, generator_cpus=config.generator_cpus, server_cpus=config.server_cpus,
                              version_commands=version_commands)
        if engine is not None:
            environment.engine_versions[engine.name] = engine.version()
        results = RunResults(
            run_id=run_dir.name, command=command_line, kind=kind, status="running",
            started_at=dt.datetime.now(dt.timezone.utc), config=config.redacted(), environment=environment,
            stacks=[_stack_info(s) for s in stacks] + [_config_error_info(e) for e in load_errors],
        )
    else:
        run_dir, results = resume
        environment = results.environment
        results.status, results.error = "running", None
        results.resumed.append(dt.datetime.now(dt.timezone.utc))
        log(f"resuming {run_dir}: {len(results.cells)} cell(s) kept")
    done_keys = {c.key for c in results.cells}
    planned = {s.id: plan_cells(config, s, engine.name) for s in stacks if s.available} if engine else {}
    for error in load_errors:
        log(f"[{error.stack_id}] skipped: {error.message}")
    save(results, run_dir)
    try:
        with ExitStack() as scope:
            environment.pgarena_cpus = scope.enter_context(pinned_to(config.generator_cpus))
            db = scope.enter_context(provide_database(run_dir, database_url=config.database_url,
                                                      cpus=config.server_cpus))
            load_workload_data(db, config.workloads)
            version, settings = server_facts(db)
            environment.postgres_version = version
            results.database = DatabaseInfo(
                mode="managed" if db.managed else "external", version=version,
                settings_profile=SETTINGS_PROFILE_NAME if db.managed else None, settings=settings,
                url=redact_url(db.url),
                cpu_affinity=process_affinity(db.postmaster_pid) if db.managed else None,
                cpu_affinity_note=None if db.managed else NOT_PINNED_EXTERNAL,
            )
            ctx = _Context(config=config, engine=engine, results=results, run_dir=run_dir, db=db, log=log,
                           progress=progress, done_keys=done_keys)
            todo = {sid: [c for c in cells if c.key not in done_keys] for sid, cells in planned.items()}
            progress.begin(sum(len(c) for c in planned.values()), already_done=sum(
                len(planned[sid]) - len(todo[sid]) for sid in planned))
            if kind == "run":
                _cpu_accounting(ctx, scope)
                if config.headroom and results.generator_headroom is None:
                    _generator_headroom(ctx)
            order = shuffled(stacks, config.seed)
            results.stack_order = [s.id for s in order]
            if config.seed is not None and len(order) > 1:
                log(f"stack order (seed {config.seed}): {', '.join(results.stack_order)}")
            for stack in order:
                info = results.stack(stack.id)
                if not stack.available:
                    log(f"[{stack.id}] {stack.unavailable_reason}")
                    continue
                if resume is not None and (info.status in FINISHED_STACK_STATES or (
                        kind == "run" and not todo[stack.id] and not _slo_missing(ctx, stack))):
                    log(f"[{stack.id}] done before the interruption ({info.status}); kept")
                    continue
                if resume is not None:  # a new process: verify it again, keep only the new verdicts
                    results.verifications = [v for v in results.verifications if v.stack != stack.id]
                before = progress.done
                _run_stack(ctx, stack, info, kind)
                progress.skip(max(0, before + len(todo.get(stack.id, [])) - progress.done))
                if info.status not in ("ok",):
                    log(f"[{stack.id}] {info.status}: {info.reason}")
                    if info.log_tail:
                        log("    " + info.log_tail.replace("\n", "\n    "))
                save(results, run_dir)
        results.status = "complete"
    except KeyboardInterrupt:
        results.status = "interrupted"
        raise
    except Exception as exc:
        results.status, results.error = "failed", f"{type(exc).__name__}: {exc}"
        raise
    finally:
        progress.end()
        results.finished_at = dt.datetime.now(dt.timezone.utc)
        save(results, run_dir)
        from pgarena.report import write_reports

        write_reports(results, run_dir)
    return run_dir


def _slo_missing(ctx: _Context, stack: Stack) -> bool:
    """A resumed stack still owes an SLO search (the run was stopped during it)."""
    if ctx.config.slo_p99_ms is None:
        return False
    workloads = {c.workload for c in ctx.results.cells if c.stack == stack.id and c.status == "ok"}
    return any(not any(f.stack == stack.id and f.workload == w for f in ctx.results.slo_searches)
               for w in workloads)


__all__ = ["EngineUnavailable", "RunError", "execute", "load_for_resume", "plan_cells", "select_stacks", "summarize"]
