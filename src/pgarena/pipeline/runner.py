"""The pipeline: database → for each stack: build → start → verify → load cells → stop; save after each cell.

`execute` is the one library entry point the CLI calls for `run` and `verify`. It knows nothing of
argument parsing; it reports progress through a callback and returns the run directory.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import socket
import subprocess
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from pgarena.analysis.sharedrates import SHARED_SPEC_SUFFIX, rate_key
from pgarena.config.run import RunConfig, parse_rate, redact_secrets, redact_url
from pgarena.config.stackdef import Stack, StackLoadError, load_stacks, render_template
from pgarena.contract import workloads as wl
from pgarena.contract.flags import GENERATOR_BOUND_CPU_FRACTION
from pgarena.contract.values import Verdict
from pgarena.db.ceiling import CEILING_PROTOCOL, measure_ceiling
from pgarena.db.connections import ConnectionPoller, add_pool_flag, pool_refusal, split_pool, tree_db_ports
from pgarena.db.postgres import (
    SETTINGS_PROFILE_NAME,
    ClusterSettings,
    Database,
    PostgresError,
    free_port,
    load_workload_data,
    merge_cluster_settings,
    provide_database,
    server_facts,
)
from pgarena.db.startline import level_database, new_seed, shuffled
from pgarena.load.engines import Engine, EngineUnavailable, get_engine
from pgarena.load.engines.base import EngineOutputError
from pgarena.load.headroom import HeadroomUnavailable, measure_headroom
from pgarena.load.measure import measure_cell, search_sustainable, summarize
from pgarena.pipeline.progress import RunProgress
from pgarena.results.models import (
    Cell,
    DatabaseInfo,
    DbCeiling,
    RunResults,
    ScheduleRecord,
    StackInfo,
    WorkloadVerification,
)
from pgarena.results.store import ResultsError, save
from pgarena.results.store import load as load_results
from pgarena.stack import loc
from pgarena.stack.coldstart import cold_start_workload, measure_cold_start
from pgarena.system import cgroups, reaper
from pgarena.system.envelope import NOT_PINNED_EXTERNAL, pinned_to, process_affinity, record_listening
from pgarena.system.environment import collect
from pgarena.system.process import NotReady, ServerProcess, run_logged, tail, wait_until_healthy
from pgarena.system.resources import SAMPLE_INTERVAL_S, CpuMeters
from pgarena.verify.verification import verify_stack

LOG_TAIL_LINES = 15

Log = Callable[[str], None]


class RunError(Exception):
    """The run cannot start (no stacks selected, engine missing, database unavailable)."""


def new_run_id() -> str:
    return dt.datetime.now().strftime("%Y%m%d-%H%M%S")


def describe_os_error(exc: OSError) -> str:
    """An OSError in one line: what failed and on which path ('No space left on device: /r/results.json')."""
    where = f": {exc.filename}" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"


def _create_run_dir(config: RunConfig) -> Path:
    """A new, empty run folder: the given --run-id, or a timestamp (suffixed if another run took it)."""
    if config.results_dir.exists() and not config.results_dir.is_dir():
        raise RunError(f"--results-dir {config.results_dir} is a file, not a folder")
    try:
        return _make_run_dir(config)
    except OSError as exc:
        raise RunError(f"cannot create a run folder in --results-dir {config.results_dir}: "
                       f"{describe_os_error(exc)}") from None


def _make_run_dir(config: RunConfig) -> Path:
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
    raise RunError(f"cannot create a run folder in --results-dir {config.results_dir}")


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
        raise RunError(f"--stacks: unknown stack '{unknown[0]}'; stacks in {config.stacks_dir}: {known}")
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


def resolve_health_path(config: RunConfig, definition) -> str:
    """The path pgarena polls until a stack is healthy: `run.health_path`, or for `workload:<name>` that
    workload's verification request at its headline parameter (before the stack's own routes apply)."""
    workload = definition.run.health_workload
    if workload is None:
        return definition.run.health_path
    return wl.load_request(workload, workload_parameters(config, workload)[0]).path


def cluster_settings(config: RunConfig, stacks: list[Stack]) -> ClusterSettings:
    """The managed database's settings: --db-* plus the selected stacks' `[database]` (RunError if they
    disagree, or if a stack fixes them while the run uses --database-url)."""
    wanted = {s.id: ClusterSettings(**s.definition.database.model_dump()) for s in stacks
              if s.available and s.definition.database is not None}
    if config.database_url and wanted:
        raise RunError(f"stack {next(iter(wanted))} needs the managed database's settings "
                       f"({next(iter(wanted.values())).described()}); run it without --database-url")
    given = ClusterSettings(port=config.db_port, user=config.db_user, password=config.db_password,
                            name=config.db_name)
    try:
        return merge_cluster_settings(given, wanted)
    except PostgresError as exc:
        raise RunError(str(exc)) from None


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
            base = config.shared_rate_peaks.get(rate_key(workload, parameter))
            for spec in config.shared_rates if base is not None else []:  # the same req/s for every stack
                cells.append(Cell(vus=config.open_connections, model="open",
                                  arrival_rate_spec=spec + SHARED_SPEC_SUFFIX,
                                  arrival_rate=round(parse_rate(spec)[0] * base, 1), **common))
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
    registry: reaper.PidRegistry | None = None
    """Where the processes of this run are recorded (run_dir/pids.json), so a killed run's are found."""
    variants_cache: dict = field(default_factory=dict)
    """Read workloads' request variants with their expected answers, per (workload, parameter)."""


@dataclass
class LiveStack:
    """A built, started, healthy and verified stack: what the schedules put load on."""

    stack: Stack
    info: StackInfo
    server: ServerProcess
    cpu: CpuMeters
    base_url: str
    routes: dict[str, str]
    loadable: set[str]
    """Workloads whose verification passed: only these are loaded."""
    stack_cpu_seconds: Callable[[], float] | None = None
    """Exact cumulative CPU seconds of the stack's cgroup (None without cgroups)."""
    warmed: set[str] = field(default_factory=set)
    """Workloads that had the stack's first warm-up until steady (interleaved schedule)."""
    connections: ConnectionPoller | None = None
    """The stack's pg_stat_activity poller (its own connections only, by client port)."""

    @property
    def id(self) -> str:
        return self.stack.id

    def crashed(self) -> bool:
        """The stack's process has exited (its info says so once `note_crash` ran)."""
        return self.server.exit_code() is not None

    def note_crash(self) -> None:
        """Record an exit under load in the stack's info."""
        self.info.status, self.info.reason = "crashed", f"exited with code {self.server.exit_code()} under load"
        self.info.log_tail = tail(self.server.log_path, LOG_TAIL_LINES)


def _run_stack(ctx: _Context, stack: Stack, info: StackInfo, kind: str) -> None:
    """The sequential schedule for one stack: bring it up, then its cells back to back, then stop it."""
    with ExitStack() as scope:
        live = bring_up(ctx, stack, info, kind, scope)
        if live is not None and kind == "run":
            _sequential_cells(ctx, live)


def bring_up(ctx: _Context, stack: Stack, info: StackInfo, kind: str, scope: ExitStack) -> LiveStack | None:
    """Build, start (its process lives until `scope` closes), check health, time the cold start and verify
    one stack. None, with the reason in `info`, when it cannot be loaded."""
    config, run_dir = ctx.config, ctx.run_dir
    logs = run_dir / "logs" / stack.id
    definition = stack.definition
    port = definition.run.port or free_port()
    if definition.run.port and port_in_use(port):
        info.status, info.reason = "start_failed", f"its fixed port {port} is already in use"
        return None
    refusal = pool_refusal(definition.pool_per_worker, config.pool_size, config.workers)
    if refusal:
        info.status, info.reason = "config_error", refusal
        return None
    values = stack_values(config, ctx.db, stack, port)
    info.database_levelled = level_database(ctx.db)
    ctx.log(f"[{stack.id}] database: {info.database_levelled}")
    if definition.build:
        ctx.log(f"[{stack.id}] building")
        build_log = logs / "build.log"
        step = run_logged(render_template(definition.build.command, values), cwd=stack.directory,
                          env=stack_environment(values, definition.build.env), log_path=build_log,
                          timeout_s=definition.build.timeout_s, tracker=ctx.registry,
                          cpus=sorted(set(config.generator_cpus) | set(config.server_cpus)))  # every CPU of the run
        info.build_seconds = round(step.duration_s, 3)
        if not step.ok:
            why = f"timed out after {definition.build.timeout_s:.0f} s" if step.timed_out else f"exit code {step.returncode}"
            info.status, info.reason = "build_failed", f"build {why} (log: {build_log})"
            info.log_tail = tail(build_log, LOG_TAIL_LINES)
            return None
    ctx.log(f"[{stack.id}] starting on port {port}")
    run_log = logs / "run.log"
    group = scope.enter_context(ctx.cgroup_backend.create(stack.id)) if ctx.cgroup_backend else None
    server = scope.enter_context(ServerProcess(
        render_template(definition.run.command, values), cwd=stack.directory,
        env=stack_environment(values, definition.run.env), log_path=run_log, cpus=config.server_cpus,
        preexec=group.preexec_fn() if group else None, tracker=ctx.registry))
    meters = {"stack": group.cpu_seconds} if group else {}
    if ctx.db_group:
        meters["db"] = ctx.db_group.cpu_seconds
    cpu = CpuMeters(meters, source=ctx.cgroup_backend.description if ctx.cgroup_backend else "psutil")

    db_port = ctx.db.port
    poller = scope.enter_context(ConnectionPoller(ctx.db.admin_url, ctx.db.user,
                                                  ports=lambda: tree_db_ports(server.pid, db_port)))

    def at_stop() -> None:  # runs before the server is stopped (an ExitStack unwinds last-in first-out)
        if info.status in ("ok", "crashed"):
            record_listening(info, server.pid, values["host"], ctx.log)  # again: a worker may bind late
        info.peak_connections = poller.peak
        add_pool_flag(info.flags, info.peak_connections, config.pool_size)

    scope.callback(at_stop)
    loadable = _health_and_verify(ctx, stack, info, kind, server, values)
    if loadable is None:
        return None
    return LiveStack(stack=stack, info=info, server=server, cpu=cpu, base_url=f"http://127.0.0.1:{values['port']}",
                     routes=dict(definition.routes), loadable=loadable,
                     stack_cpu_seconds=group.cpu_seconds if group else None, connections=poller)


def _health_and_verify(ctx: _Context, stack: Stack, info: StackInfo, kind: str, server: ServerProcess,
                       values: dict[str, str]) -> set[str] | None:
    """The started stack: health, cold start and verification; the workloads that may be loaded (None when
    it never became healthy)."""
    config, run_dir, definition = ctx.config, ctx.run_dir, stack.definition
    run_log = server.log_path
    base_url = f"http://127.0.0.1:{values['port']}"
    routes = dict(definition.routes)
    health_path = resolve_health_path(config, definition)
    try:
        healthy = wait_until_healthy(server, base_url + wl.routed(health_path, routes),
                                     definition.run.startup_timeout_s)
    except NotReady as exc:
        info.status, info.reason = "start_failed", f"{exc} (log: {run_log})"
        info.log_tail = tail(run_log, LOG_TAIL_LINES)
        return None
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
                                 health_path=health_path, routes=routes, exit_code=server.exit_code)
    ctx.results.verifications.extend(verifications)
    for v in verifications:
        ctx.log(f"[{stack.id}] {v.workload}: {_verification_line(v)}")
    if server.exit_code() is not None:
        info.status, info.reason = "crashed", f"exited with code {server.exit_code()} during verification"
        info.log_tail = tail(run_log, LOG_TAIL_LINES)
    save(ctx.results, run_dir)
    if info.status == "crashed":
        return None
    if kind == "run":
        info.warmup_seconds = max(config.warmup_s, definition.run.min_warmup_s)
    return {v.workload for v in verifications if v.ok}


def _sequential_cells(ctx: _Context, live: LiveStack) -> None:
    """Every cell of one stack, back to back, then its SLO searches."""
    config = ctx.config
    warmed: set[str] = set()
    cells = plan_cells(config, live.stack, ctx.engine.name)  # type: ignore[union-attr]
    for position, cell in enumerate(cells):
        last_of_workload = position + 1 == len(cells) or cells[position + 1].workload != cell.workload
        if cell.key not in ctx.done_keys:
            _run_cell(ctx, live, cell, warmed)
            if live.info.status == "crashed":
                ctx.log(f"[{live.id}] crashed: {live.info.reason}")
                return
        searched = any(f.stack == live.id and f.workload == cell.workload for f in ctx.results.slo_searches)
        if config.slo_p99_ms is not None and last_of_workload and cell.workload in live.loadable and not searched:
            _slo_search(ctx, live.id, cell.workload, live.base_url, live.routes)
            save(ctx.results, ctx.run_dir)


def headroom_rps(ctx: _Context) -> float | None:
    """The generator's measured ceiling (requests/s), for the generator-bound flag — only when the generator
    was the bottleneck of that measurement (its CPU at least GENERATOR_BOUND_CPU_FRACTION). Otherwise the
    trivial endpoint (or a busy machine) limited it: the figure is a lower bound of what the generator can
    do, and cells are judged by their own generator CPU alone."""
    headroom = ctx.results.generator_headroom
    if headroom is None or headroom.generator_cpu_fraction is None:
        return None
    return headroom.rps if headroom.generator_cpu_fraction >= GENERATOR_BOUND_CPU_FRACTION else None


def known_wrong_columns(ctx: _Context, cell: Cell) -> tuple[str, ...]:
    """The ❌ columns verification found for the cell's stack and workload (not judged again under load)."""
    verification = ctx.results.verification(cell.stack, cell.workload)
    return tuple(verification.wrong_columns) if verification else ()


def mark_invalid_answers(ctx: _Context, cell: Cell) -> None:
    """Flags the cell inherits from its stack's verification: ❌ columns, wrong database accounting."""
    verification = ctx.results.verification(cell.stack, cell.workload)
    if verification and verification.wrong_columns:
        cell.flags.append("columns-wrong")
    if verification and verification.accounting and verification.accounting.verdict is Verdict.WRONG:
        cell.flags.append("queries-wrong")


def cell_title(cell: Cell) -> str:
    """'perf-test rows1 @ 50 VUs' for logs and the progress line."""
    return f"{cell.workload} {cell.parameter_name or ''}{cell.parameter or ''} @ {cell.level_label}".replace("  ", " ")


def _run_cell(ctx: _Context, live: LiveStack, cell: Cell, warmed: set[str]) -> None:
    """Measure one cell (or record why it cannot be measured) and save the results."""
    config, info = ctx.config, live.info
    # NOTE: every cell warms until its throughput is steady (warmup.py); this is the least it warms. A
    # stack's declared min_warmup_s raises that least before the first cell of each workload.
    first_minimum = max(config.warmup_s, live.stack.definition.run.min_warmup_s)
    cell.warmup_seconds = config.warmup_s if cell.workload in warmed else first_minimum
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
        try:
            measure_cell(cell, engine=ctx.engine, config=config, db=ctx.db, server=live.server,  # type: ignore[arg-type]
                         base_url=live.base_url, run_dir=ctx.run_dir, routes=live.routes, log=ctx.log, cpu=live.cpu,
                         on_repetition=on_repetition, on_warmed=on_warmed, variants_cache=ctx.variants_cache,
                         known_wrong=known_wrong_columns(ctx, cell))
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
    add_pool_flag(cell.flags, cell.peak_connections, config.pool_size)
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


def _database_ceiling(ctx: _Context) -> None:
    """pgbench running each workload's statements on the idle database, before any stack starts (ceiling.py);
    kept across a resume."""
    config, results = ctx.config, ctx.results
    if config.ceiling_s <= 0:
        results.ceiling_unavailable = "not measured (--ceiling-seconds 0)"
        return
    for workload in config.workloads:
        for parameter in workload_parameters(config, workload):
            if results.ceiling(workload, parameter) is not None:
                continue
            try:
                found = measure_ceiling(ctx.db, workload, parameter, connections=config.pool_size,
                                        seconds=config.ceiling_s, cpus=config.server_cpus,
                                        log_dir=ctx.run_dir / "logs" / "ceiling")
            except (PostgresError, OSError, subprocess.SubprocessError) as exc:
                label = workload if parameter is None else f"{workload} {wl.PARAMETER_NAMES[workload]}={parameter}"
                results.ceiling_unavailable = f"{label}: pgbench could not measure it: {exc}"
                ctx.log(f"database ceiling of {label} not measured: {exc}")
                continue
            if found is None:
                continue
            results.ceilings.append(DbCeiling(
                workload=workload, parameter_name=wl.PARAMETER_NAMES[workload], parameter=parameter,
                connections=found.connections, transactions=found.transactions, seconds=found.seconds,
                tps=round(found.tps, 1), protocol=CEILING_PROTOCOL, statements=found.description,
                cpus=list(config.server_cpus)))
            label = workload if parameter is None else f"{workload} {wl.PARAMETER_NAMES[workload]}={parameter}"
            ctx.log(f"database ceiling, {label}: {found.tps:,.0f} tps ({found.description}; "
                    f"{found.connections} connections, pgbench -M {CEILING_PROTOCOL})")
    save(results, ctx.run_dir)


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


def load_for_resume(run_dir: Path, *, database_url: str | None = None, admin_database_url: str | None = None,
                    db_password: str | None = None) -> tuple[RunConfig, RunResults]:
    """The config and results of an unfinished run, to continue it (RunError if it cannot be)."""
    if not run_dir.exists():
        raise RunError(f"--resume {run_dir}: no such run folder")
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
    if stored.get("admin_database_url"):
        if not admin_database_url:
            raise RunError("the run used --admin-database-url; pass it again (its password is not stored)")
        stored["admin_database_url"] = admin_database_url
    if stored.get("db_password"):
        if not db_password:
            raise RunError("the run used --db-password; pass it again (it is not stored)")
        stored["db_password"] = db_password
    stored["run_id"] = previous.run_id
    try:
        return RunConfig.model_validate(stored), previous
    except ValidationError as exc:
        raise RunError(f"{run_dir}: its stored settings are not valid for this pgarena: "
                       f"{exc.errors()[0]['msg']}") from None


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
        raise RunError(f"no stacks selected (--stacks-dir {config.stacks_dir} has no stack.toml)")
    settings = cluster_settings(config, stacks)
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
            run_id=run_dir.name, command=redact_secrets(command_line), kind=kind, status="running",
            started_at=dt.datetime.now(dt.timezone.utc), config=config.redacted(), environment=environment,
            stacks=[_stack_info(s) for s in stacks] + [_config_error_info(e) for e in load_errors],
        )
    else:
        run_dir, results = resume
        try:
            for line in reaper.reap_run(run_dir):  # what the interrupted pgarena left running
                log(line)
        except reaper.RunInUse as exc:
            raise RunError(str(exc)) from None
        environment = results.environment
        results.status, results.error = "running", None
        results.resumed.append(dt.datetime.now(dt.timezone.utc))
        log(f"resuming {run_dir}: {len(results.cells)} cell(s) kept")
    done_keys = {c.key for c in results.cells}
    planned = {s.id: plan_cells(config, s, engine.name) for s in stacks if s.available} if engine else {}
    for error in load_errors:
        log(f"[{error.stack_id}] skipped: {error.message}")
    for line in reaper.reap_abandoned(config.results_dir):  # runs killed earlier, e.g. by SIGKILL
        log(line)
    save(results, run_dir)
    interleave = kind == "run" and config.schedule == "interleaved"
    if kind == "run":
        previous_seed = results.schedule.seed if results.schedule else None
        seed = config.schedule_seed if config.schedule_seed is not None else (
            previous_seed if previous_seed is not None else config.seed if config.seed is not None
            else random.randrange(2**31))
        if results.schedule is None:
            results.schedule = ScheduleRecord(kind=config.schedule, seed=seed if interleave else None,
                                              rewarm_seconds=config.rewarm_seconds if interleave else None)
    runnable = [s for s in stacks if s.available]
    max_connections = len(runnable) * config.pool_size + 50 if interleave else None
    registry = reaper.PidRegistry(run_dir).__enter__()
    try:
        with ExitStack() as scope:
            environment.pgarena_cpus = scope.enter_context(pinned_to(config.generator_cpus))
            db = scope.enter_context(provide_database(
                run_dir, database_url=config.database_url, cpus=config.server_cpus,
                admin_url=config.admin_database_url, allow_overwrite=config.allow_overwrite,
                settings=settings, max_connections=max_connections, registry=registry))
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
                           progress=progress, done_keys=done_keys, registry=registry)
            todo = {sid: [c for c in cells if c.key not in done_keys] for sid, cells in planned.items()}
            progress.begin(sum(len(c) for c in planned.values()), already_done=sum(
                len(planned[sid]) - len(todo[sid]) for sid in planned))
            if kind == "run":
                _cpu_accounting(ctx, scope)
                if config.headroom and results.generator_headroom is None:
                    _generator_headroom(ctx)
                _database_ceiling(ctx)
            order = shuffled(stacks, config.seed)
            results.stack_order = [s.id for s in order]
            if config.seed is not None and len(order) > 1:
                log(f"stack order (seed {config.seed}): {', '.join(results.stack_order)}")
            for stack in order:
                if not stack.available:
                    log(f"[{stack.id}] {stack.unavailable_reason}")
            runnable = [s for s in order if s.available]
            if interleave:
                _interleaved(ctx, runnable, resume is not None)
            else:
                _sequential(ctx, runnable, kind, resume is not None, todo)
        results.status = "complete"
    except KeyboardInterrupt:
        results.status = "interrupted"
        raise
    except OSError as exc:  # a full disk, a read-only folder: one line for the user, the reason stored
        results.status, results.error = "failed", describe_os_error(exc)
        raise RunError(f"run failed: {describe_os_error(exc)} (run folder: {run_dir})") from None
    except Exception as exc:
        results.status, results.error = "failed", redact_secrets(f"{type(exc).__name__}: {exc}")
        raise
    finally:
        progress.end()
        results.finished_at = dt.datetime.now(dt.timezone.utc)
        try:
            _write_outputs(results, run_dir)
        except OSError as exc:
            if results.status != "failed":  # the run went well until its results could not be written
                results.status, results.error = "failed", describe_os_error(exc)
                try:
                    save(results, run_dir)  # the reason, where results.json can still be written
                except OSError:
                    pass
                raise RunError(f"cannot write the results: {describe_os_error(exc)} (run folder: {run_dir})"
                               ) from None
        finally:
            registry.close()
    return run_dir


def _write_outputs(results: RunResults, run_dir: Path) -> None:
    """results.json, then the reports (each written atomically)."""
    from pgarena.report import write_reports

    save(results, run_dir)
    write_reports(results, run_dir)


def _slo_missing(ctx: _Context, stack: Stack) -> bool:
    """A resumed stack still owes an SLO search (the run was stopped during it)."""
    if ctx.config.slo_p99_ms is None:
        return False
    workloads = {c.workload for c in ctx.results.cells if c.stack == stack.id and c.status == "ok"}
    return any(not any(f.stack == stack.id and f.workload == w for f in ctx.results.slo_searches)
               for w in workloads)


def _sequential(ctx: _Context, stacks: list[Stack], kind: str, resumed: bool, todo: dict[str, list[Cell]]) -> None:
    """Stack after stack: each built, started, verified and measured cell by cell, then stopped."""
    results, progress, log = ctx.results, ctx.progress, ctx.log
    for stack in stacks:
        info = results.stack(stack.id)
        if resumed and (info.status in FINISHED_STACK_STATES or (
                kind == "run" and not todo[stack.id] and not _slo_missing(ctx, stack))):
            log(f"[{stack.id}] done before the interruption ({info.status}); kept")
            continue
        if resumed:  # a new process: verify it again, keep only the new verdicts
            results.verifications = [v for v in results.verifications if v.stack != stack.id]
        before = progress.done
        _run_stack(ctx, stack, info, kind)
        progress.skip(max(0, before + len(todo.get(stack.id, [])) - progress.done))
        _log_failure(ctx, info)
        save(results, ctx.run_dir)


def _log_failure(ctx: _Context, info: StackInfo) -> None:
    if info.status not in ("ok",):
        ctx.log(f"[{info.id}] {info.status}: {info.reason}")
        if info.log_tail:
            ctx.log("    " + info.log_tail.replace("\n", "\n    "))


def _interleaved(ctx: _Context, stacks: list[Stack], resumed: bool) -> None:
    """Every stack that can coexist up together, measured in interleaved rounds; the others afterwards,
    stack after stack (the report says which and why)."""
    from pgarena.pipeline.interleaved import coexist_problem, run_interleaved

    record = ctx.results.schedule
    assert record is not None
    pending = [s for s in stacks if not (resumed and ctx.results.stack(s.id).status in FINISHED_STACK_STATES)]
    together, apart = [], []
    for stack in pending:
        problem = coexist_problem(stack)
        if problem is None:
            together.append(stack)
        else:
            record.sequential_fallback[stack.id] = problem
            apart.append(stack)
    run_interleaved(ctx, together)
    for stack in apart:
        ctx.log(f"[{stack.id}] measured on its own after the interleaved rounds: {record.sequential_fallback[stack.id]}")
        _run_stack(ctx, stack, ctx.results.stack(stack.id), "run")
        _log_failure(ctx, ctx.results.stack(stack.id))
        save(ctx.results, ctx.run_dir)


__all__ = ["EngineUnavailable", "RunError", "execute", "load_for_resume", "plan_cells", "select_stacks", "summarize"]
