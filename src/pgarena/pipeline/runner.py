"""The pipeline: database → for each stack: build → start → verify → load cells → stop; save after each cell.

`execute` is the one library entry point the CLI calls for `run` and `verify`. It knows nothing of
argument parsing; it reports progress through a callback and returns the run directory.
"""

from __future__ import annotations


import datetime as dt
import time
import random
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from pgarena.config.redaction import redact_secrets, redact_url
from pgarena.config.run import RunConfig
from pgarena.config.stackdef import Stack
from pgarena.contract.flags import ABOVE_CEILING
from pgarena.db.cluster import SETTINGS_PROFILE_NAME, provide_database
from pgarena.db.connections import connection_limit, pools_refusal
from pgarena.db.data import client_versions, load_workload_data, server_facts
from pgarena.db.exposed import expose_in_schema
from pgarena.db.startline import new_seed, shuffled
from pgarena.load.distributed import local_places
from pgarena.load.engines import EngineUnavailable, get_engine
from pgarena.load.summary import summarize
from pgarena.pipeline.baselines import (
    cpu_accounting,
    database_ceiling,
    flag_above_ceiling,
    generator_headroom,
    speed_probe,
)
from pgarena.pipeline.cells import cell_title, run_stack, slo_missing
from pgarena.pipeline.context import Log, RunContext, RunError, redacting
from pgarena.pipeline.hosts import generator_places, read_host_environments, topology_of
from pgarena.pipeline.lifecycle import log_failure
from pgarena.pipeline.placement import Placement, PlacementError
from pgarena.pipeline.plan import (
    cluster_settings,
    config_error_info,
    fixed_port_in_rtt_run,
    plan_cells,
    ports_in_use,
    select_stacks,
    stack_info,
    stack_schemas,
)
from pgarena.pipeline.progress import RunProgress
from pgarena.pipeline.targets import database_line, target_hosts
from pgarena.results.models import (
    Cell,
    DatabaseInfo,
    RunResults,
    ScheduleRecord,
)
from pgarena.results.store import ResultsError, save
from pgarena.results.store import load as load_results
from pgarena.system import pidregistry, reaper
from pgarena.system.envelope import NOT_PINNED_EXTERNAL, pinned_to, process_affinity
from pgarena.system.environment import collect
from pgarena.system.process import raise_open_files_limit


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
    budget_from: float | None = None,
) -> Path:
    """Run (or only verify) the configured stacks; return the run directory with results.json.

    `resume=(run_dir, results)` continues an interrupted run in its folder: cells already in its
    results.json are kept and not measured again; the cell that was running when it stopped is redone.
    `budget_from`: the Unix time `config.budget_s` counts from (`make bench` passes its own start, so its setup is
    inside the budget); None: from now.
    """
    log = redacting(log, [config.db_password] if config.db_password else [])  # NOTE: every console line
    started = time.monotonic()
    before_s = max(0.0, time.time() - budget_from) if budget_from is not None else 0.0
    stacks, load_errors = select_stacks(config)
    if not stacks and not load_errors:
        raise RunError(f"no stacks selected (--stacks-dir {config.stacks_dir} has no stack.toml)")
    stacks = fixed_port_in_rtt_run(config, ports_in_use(config, stacks))
    settings = cluster_settings(config, stacks)
    engine = get_engine(config.engine) if kind == "run" else None
    if engine is not None:
        engine.binary  # noqa: B018 — raises EngineUnavailable early, before any build
    progress = progress or RunProgress()
    raise_open_files_limit()  # generators and stacks inherit it: one descriptor per connection above 100 VUs
    if config.seed is None and resume is None:
        config = config.model_copy(update={"seed": new_seed()})  # stored in results.config: --seed repeats it
    if resume is None:
        run_dir = _create_run_dir(config)
        version_commands = version_commands_of(stacks)
        environment = collect(project_dir, generator_cpus=config.generator_cpus, server_cpus=config.server_cpus,
                              version_commands=version_commands)
        if engine is not None:
            environment.engine_versions[engine.name] = engine.version()
        environment.targets = target_hosts(stacks)
        results = RunResults(
            run_id=run_dir.name, command=redact_secrets(command_line), kind=kind, status="running",
            started_at=dt.datetime.now(dt.timezone.utc), config=config.redacted(), environment=environment,
            stacks=[stack_info(s) for s in stacks] + [config_error_info(e) for e in load_errors],
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
                                              rewarm_seconds=config.rewarm_seconds if interleave else None,
                                              idle_rewarm_seconds=config.idle_rewarm_s if interleave else None)
    runnable = [s for s in stacks if s.available]
    if interleave and results.schedule is not None and results.schedule.idle_rewarm_seconds:
        results.schedule.idle_rewarm_exempt = [s.id for s in runnable if not s.definition.run.idle_rewarm]
    together = len(runnable) if interleave else 1  # stacks up at once, each holding its pool
    largest_pool = max(config.pool_levels)
    # the managed cluster's, raised only above the profile's 200: every stack's pool, and for the one under load a
    # connection per virtual user beyond it (an app that fixes its pool in its code: seed 000's, pg.Pool max 100)
    max_connections = together * largest_pool + (max(config.vus, default=0) if interleave else 0) + 50
    registry = pidregistry.PidRegistry(run_dir).__enter__()
    try:
        with ExitStack() as scope:
            environment.pgarena_cpus = scope.enter_context(pinned_to(config.generator_cpus))
            try:  # before PostgreSQL starts, removed after it stopped
                definition, source = topology_of(config)
                placement = Placement.create(definition, run_dir, scope, source=source)
            except PlacementError as exc:
                raise RunError(str(exc)) from None
            results.topology = placement.info()
            read_host_environments(placement, results, run_dir, version_commands_of(stacks), log)
            if results.topology is not None:
                log(f"topology ({placement.source}): " + ", ".join(
                    f"{role} {p.address}" + (f" in {p.host}" if p.kind != "local" else " here")
                    for role, p in results.topology.roles.items()))
            if engine is not None:
                engine.argv_prefix = placement.prefix("generator")
            db = scope.enter_context(provide_database(
                run_dir, database_url=config.database_url, cpus=config.server_cpus,
                admin_url=config.admin_database_url, allow_overwrite=config.allow_overwrite,
                settings=settings, max_connections=max_connections, registry=registry, bin_dir=config.postgres_bin,
                place=placement.database_place(),
                app_password=config.db_password if config.targets else None,  # the password targets log in with
                workloads=config.workloads))
            with db.connect() as conn:
                refusal = pools_refusal(*connection_limit(conn), largest_pool, together)
            if refusal is not None and runnable:
                raise RunError(refusal)
            load_workload_data(db, config.workloads)
            for schema in sorted(set(stack_schemas(stacks).values())):  # apps that name it: [database] schema
                log(f"schema {schema}: pgarena's objects reachable there: {', '.join(expose_in_schema(db, schema))}")
            if config.targets:
                log(database_line(db))
            version, settings = server_facts(db)
            environment.postgres_version = version
            environment.toolchains.update(client_versions())
            stacks = _too_old_for(stacks, version, results, planned, log)
            results.database = DatabaseInfo(
                mode="managed" if db.managed else "external", version=version,
                settings_profile=SETTINGS_PROFILE_NAME if db.managed else None, settings=settings,
                url=redact_url(db.url),
                cpu_affinity=process_affinity(db.postmaster_pid) if db.managed else None,
                cpu_affinity_note=None if db.managed else NOT_PINNED_EXTERNAL,
            )
            log = redacting(log, [db.password])
            deadline = None if config.budget_s is None or kind != "run" else started - before_s + config.budget_s
            if deadline is not None and before_s > 0:
                log(f"budget: {config.budget_s / 60:g} min from the command's start, {before_s / 60:.1f} min before "
                    f"this run (setup)")
            progress.deadline = deadline
            ctx = RunContext(config=config, engine=engine, results=results, run_dir=run_dir, db=db, log=log,
                             progress=progress, done_keys=done_keys, registry=registry, placement=placement,
                             deadline=deadline)
            if resume is not None:  # kept for lifecycle.bring_up: a stack unchanged since is checked briefly
                for v in results.verifications:
                    ctx.stored_verifications.setdefault(v.stack, []).append(v)
            if len(placement.generators()) > 1 or placement.remote_generators():
                ctx.generator_places = generator_places(placement, run_dir, scope, log)
            elif config.generators > 1:
                ctx.generator_places = local_places(config.generators)
            todo = {sid: [c for c in cells if c.key not in done_keys] for sid, cells in planned.items()}
            progress.begin(sum(len(c) for c in planned.values()), already_done=sum(
                len(planned[sid]) - len(todo[sid]) for sid in planned))
            if kind == "run" and (config.db_rtt_ms or config.stack_rtt_ms):
                from pgarena.pipeline.network import DbNetwork

                ctx.network = DbNetwork(ctx, scope)
            if kind == "run":
                cpu_accounting(ctx, scope)
                speed_probe(ctx, scope, stacks)
                if config.headroom and results.generator_headroom is None:
                    generator_headroom(ctx)
                database_ceiling(ctx, [c for planned_cells in planned.values() for c in planned_cells])
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
            for cell in flag_above_ceiling(results):
                log(f"[{cell.stack}] {cell_title(cell)}: 2xx/s above the database ceiling of its conditions "
                    f"(flag {ABOVE_CEILING}: a measurement problem)")
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


def version_commands_of(stacks: list[Stack]) -> list[list[str]]:
    """The stacks' toolchain commands to record (a remote target's are its host's, not this machine's)."""
    return [argv for s in stacks if s.available and s.target_url is None for argv in s.definition.version_commands]


def _too_old_for(stacks: list[Stack], version: str, results: RunResults, planned: dict[str, list[Cell]],
                 log: Log) -> list[Stack]:
    """The stacks with those that need a newer PostgreSQL than this run's server made unavailable (not built)."""
    try:
        major = int(version.split(".")[0].split()[0])
    except ValueError:
        return stacks
    out = []
    for stack in stacks:
        need = stack.definition.min_postgres
        if stack.available and need is not None and major < need:
            reason = f"unavailable here: needs PostgreSQL {need} or newer; this run's server is {version.split()[0]}"
            stack = replace(stack, unavailable_reason=reason)
            info = results.stack(stack.id)
            info.status, info.reason = "unavailable", reason
            planned.pop(stack.id, None)
            log(f"[{stack.id}] {reason}")
        out.append(stack)
    return out


def _write_outputs(results: RunResults, run_dir: Path) -> None:
    """results.json, then the reports (each written atomically)."""
    from pgarena.report import write_reports

    save(results, run_dir)
    write_reports(results, run_dir)


def _sequential(ctx: RunContext, stacks: list[Stack], kind: str, resumed: bool, todo: dict[str, list[Cell]]) -> None:
    """Stack after stack: each built, started, verified and measured cell by cell, then stopped."""
    results, progress, log = ctx.results, ctx.progress, ctx.log
    for stack in stacks:
        info = results.stack(stack.id)
        if resumed and (info.status in FINISHED_STACK_STATES or (
                kind == "run" and not todo[stack.id] and not slo_missing(ctx, stack))):
            log(f"[{stack.id}] done before the interruption ({info.status}); kept")
            continue
        if resumed:  # a new process: verify it again, keep only the new verdicts
            results.verifications = [v for v in results.verifications if v.stack != stack.id]
        before = progress.done
        run_stack(ctx, stack, info, kind)
        progress.skip(max(0, before + len(todo.get(stack.id, [])) - progress.done))
        log_failure(ctx, info)
        save(results, ctx.run_dir)


def _interleaved(ctx: RunContext, stacks: list[Stack], resumed: bool) -> None:
    """Every stack that can coexist up together, measured in interleaved rounds; the others afterwards,
    stack after stack (the report says which and why)."""
    from pgarena.pipeline.interleaved import run_interleaved
    from pgarena.pipeline.plan import coexist_problem

    record = ctx.results.schedule
    assert record is not None
    pending = [s for s in stacks if not (resumed and ctx.results.stack(s.id).status in FINISHED_STACK_STATES)]
    together, apart = [], []
    for stack in pending:
        problem = coexist_problem(stack, together)
        if problem is None:
            together.append(stack)
        else:
            record.sequential_fallback[stack.id] = problem
            apart.append(stack)
    run_interleaved(ctx, together)
    for stack in apart:
        ctx.log(f"[{stack.id}] measured on its own after the interleaved rounds: {record.sequential_fallback[stack.id]}")
        run_stack(ctx, stack, ctx.results.stack(stack.id), "run")
        log_failure(ctx, ctx.results.stack(stack.id))
        save(ctx.results, ctx.run_dir)


__all__ = ["EngineUnavailable", "RunError", "execute", "load_for_resume", "plan_cells", "select_stacks", "summarize"]
