"""The pipeline: database → for each stack: build → start → verify → load cells → stop; save after each cell.

`execute` is the one library entry point the CLI calls for `run` and `verify`. It knows nothing of
argument parsing; it reports progress through a callback and returns the run directory.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import zlib
from contextlib import nullcontext
from dataclasses import replace
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pgarena import loc, txcheck
from pgarena import workloads as wl
from pgarena.checks import AnswerSampler
from pgarena.config import RunConfig, redact_url
from pgarena.engines import Engine, EngineUnavailable, LoadOutcome, LoadSpec, get_engine
from pgarena.engines.base import EngineOutputError
from pgarena.environment import collect
from pgarena.postgres import SETTINGS_PROFILE_NAME, Database, free_port, load_workload_data, provide_database, server_facts
from pgarena.process import NotReady, ServerProcess, run_logged, run_measured, tail, wait_until_healthy
from pgarena.resources import TreeSampler
from pgarena.results import (
    Cell,
    CellSummary,
    DatabaseInfo,
    Repetition,
    RunResults,
    StackInfo,
    WorkloadVerification,
    save,
)
from pgarena.stackdef import Stack, StackLoadError, load_stacks, render_template
from pgarena.stats import DEFAULT_NOISY_REL_SPREAD, spread
from pgarena.values import Verdict
from pgarena.verify import verify_stack

MAX_FAILURE_RATE = 0.01
"""A cell with more failed requests than this is flagged invalid (BRIEF.md)."""
GENERATOR_BOUND_FRACTION = 0.9
"""Generator CPU above this share of its CPU set: the generator, not the stack, may be the limit."""
LOG_TAIL_LINES = 15

Log = Callable[[str], None]


class RunError(Exception):
    """The run cannot start (no stacks selected, engine missing, database unavailable)."""


def new_run_id() -> str:
    return dt.datetime.now().strftime("%Y%m%d-%H%M%S")


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
        "workers": str(config.workers),
        "stack_dir": str(stack.directory),
    }


def stack_environment(values: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """The process environment of a stack: ours, PGARENA_* and the stack's templated mapping."""
    env = dict(os.environ)
    env.update({f"PGARENA_{key.upper()}": value for key, value in values.items() if not key.startswith("db_")})
    env.update({f"PGARENA_{key.upper()}": value for key, value in values.items() if key.startswith("db_")})
    env.update({key: render_template(value, values) for key, value in extra.items()})
    return env


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def plan_cells(config: RunConfig, stack: Stack, engine: str) -> list[Cell]:
    """Every cell of one stack, in the order they run."""
    cells = []
    for workload in config.workloads:
        if workload not in stack.definition.workloads:
            continue
        parameters: list[int | None] = {
            wl.PERF_TEST: list(config.perf_test_rows),
            wl.USERS: list(config.users_limits),
        }.get(workload, [None])
        for parameter in parameters:
            for vus in config.vus:
                cells.append(Cell(
                    stack=stack.id, workload=workload, parameter_name=wl.PARAMETER_NAMES[workload],
                    parameter=parameter, vus=vus, engine=engine, warmup_seconds=config.warmup_s,
                    duration_seconds=config.duration_s,
                ))
    return cells


def summarize(cell: Cell, config: RunConfig) -> None:
    """Fill the cell's summary and flags from its repetitions."""
    reps = cell.repetitions
    requests = sum(r.requests for r in reps)
    failures = sum(r.errors.total for r in reps)

    def per_request_us(values: list[float | None]) -> float | None:
        if any(v is None for v in values) or not requests:
            return None
        return sum(values) / requests * 1e6  # type: ignore[arg-type]

    window = sum(r.duration_seconds for r in reps) * len(config.generator_cpus)
    rss = [r.stack_rss_peak_bytes for r in reps if r.stack_rss_peak_bytes is not None]
    cell.summary = CellSummary(
        rps=spread([r.rps for r in reps]),
        latency_avg_ms=spread([r.latency.avg_ms for r in reps]),
        latency_p99_ms=spread([r.latency.p99_ms for r in reps]),
        requests_total=requests,
        failures_total=failures,
        failure_rate=failures / requests if requests else 1.0,
        stack_cpu_us_per_request=per_request_us([r.stack_cpu_seconds for r in reps]),
        db_cpu_us_per_request=per_request_us([r.db_cpu_seconds for r in reps]),
        stack_rss_peak_bytes=max(rss) if rss else None,
        generator_cpu_fraction=sum(r.generator_cpu_seconds for r in reps) / window if window else None,
        generator_cpu_us_per_request=per_request_us([r.generator_cpu_seconds for r in reps]),
    )
    flags = []
    if cell.summary.failure_rate > MAX_FAILURE_RATE:
        flags.append("failures>1%")
    if len(reps) > 1 and cell.summary.rps.rel_spread > DEFAULT_NOISY_REL_SPREAD:
        flags.append("noisy")
    if (cell.summary.generator_cpu_fraction or 0) > GENERATOR_BOUND_FRACTION:
        flags.append("generator-bound")
    if any(r.errors.timeout for r in reps):
        flags.append("timeouts")
    checks_total = sum(r.checks_total for r in reps)
    if checks_total and sum(r.checks_failed for r in reps) / checks_total > MAX_FAILURE_RATE:
        flags.append("checks-failed>1%")
    cell.flags = sorted(set(cell.flags) | set(flags))


@dataclass
class _Context:
    config: RunConfig
    engine: Engine | None
    results: RunResults
    run_dir: Path
    db: Database
    log: Log
    routes: dict[str, dict[str, str]] = field(default_factory=dict)
    """stack id → its workload routes (stack.toml `routes`)."""


def _measure_cell(ctx: _Context, cell: Cell, server: ServerProcess, base_url: str) -> None:
    assert ctx.engine is not None
    engine = ctx.engine
    request = wl.load_request(cell.workload, cell.parameter)
    raw_dir = ctx.run_dir / "raw" / cell.stack
    raw_dir.mkdir(parents=True, exist_ok=True)
    label = f"{cell.workload}{'' if cell.parameter is None else f'-{cell.parameter_name}{cell.parameter}'}-vus{cell.vus}"
    bodies_file = None
    if cell.workload == wl.TX:
        bodies_file = raw_dir / f"{label}.bodies"
        seed = zlib.crc32(f"{cell.stack}/{label}".encode())
        bodies_file.write_bytes(b"\n".join(wl.random_tx_bodies(wl.TX_BODIES_PER_FILE, seed)) + b"\n")
    expected_rows = wl.expected_rows(cell.workload, cell.parameter)
    routes = ctx.routes.get(cell.stack, {})
    spec = LoadSpec(url=base_url + wl.routed(request.path, routes), method=request.method, connections=cell.vus, duration_s=0,
                    timeout_s=ctx.config.http_timeout_s, body=request.body, content_type=request.content_type,
                    bodies_file=bodies_file, expected_rows=expected_rows, workload=cell.workload)

    def window(duration_s: float, stem: str) -> tuple[int, float]:
        argv = engine.command(replace(spec, duration_s=duration_s), raw_dir, stem)
        return run_measured(argv, stdout_path=raw_dir / f"{stem}.stdout", stderr_path=raw_dir / f"{stem}.stderr",
                            cpus=ctx.config.generator_cpus,
                            timeout_s=duration_s + 2 * ctx.config.http_timeout_s + 60)

    def parse(stem: str, code: int) -> LoadOutcome:
        try:
            return engine.parse(raw_dir, stem)
        except EngineOutputError as exc:
            raise EngineOutputError(f"{exc} (exit code {code}; see {raw_dir / (stem + '.stderr')})") from None

    tx_before = txcheck.snapshot(ctx.db) if cell.workload == wl.TX else None
    answered_200 = 0
    stem = f"{label}-warmup"
    code, _ = window(cell.warmup_seconds, stem)
    if tx_before is not None:
        answered_200 += parse(stem, code).answered_2xx
    sample = expected_rows is not None and not engine.checks_answers
    for index in range(1, ctx.config.repetitions + 1):
        if server.exit_code() is not None:
            raise NotReady(f"the stack exited (code {server.exit_code()}) during the cell")
        stem = f"{label}-rep{index}"
        sampler = AnswerSampler(base_url, request, cell.workload, expected_rows or 0, ctx.config.http_timeout_s,
                                routes) if sample else nullcontext()
        with TreeSampler({"stack": server.pid, "db": ctx.db.postmaster_pid}) as usage, sampler:
            code, generator_cpu = window(cell.duration_seconds, stem)
        outcome = parse(stem, code)
        answered_200 += outcome.answered_2xx
        stack_usage = usage.usage.get("stack")
        db_usage = usage.usage.get("db")
        checks_total, checks_failed = (sampler.total, sampler.failed) if sample else (  # type: ignore[union-attr]
            outcome.checks_total, outcome.checks_failed)
        cell.repetitions.append(Repetition(
            index=index, requests=outcome.requests, duration_seconds=outcome.duration_seconds, rps=outcome.rps,
            latency=outcome.latency, errors=outcome.errors, status_codes=outcome.status_codes,
            stack_cpu_seconds=stack_usage.cpu_seconds if stack_usage else None,
            db_cpu_seconds=db_usage.cpu_seconds if db_usage else None,
            stack_rss_peak_bytes=stack_usage.rss_peak_bytes if stack_usage else None,
            generator_cpu_seconds=generator_cpu,
            raw_output=str(engine.raw_output(raw_dir, stem).relative_to(ctx.run_dir)),
            checks_total=checks_total, checks_failed=checks_failed,
        ))
        ctx.log(f"  rep {index}/{ctx.config.repetitions}: {outcome.rps:,.0f} req/s, "
                f"p99 {outcome.latency.p99_ms:.1f} ms, {outcome.errors.total} failed"
                + (f", {checks_failed}/{checks_total} checks failed" if checks_total else ""))
    if tx_before is not None:
        cell.tx_invariants = txcheck.check(tx_before, txcheck.snapshot(ctx.db), answered_200)
        if not cell.tx_invariants.holds:
            cell.flags.append("invariants-broken")
            cell.status, cell.error = "failed", f"TPC-B invariants broken: {cell.tx_invariants.problem}"
        ctx.log(f"  TPC-B invariants {'hold' if cell.tx_invariants.holds else 'BROKEN'}: "
                f"{cell.tx_invariants.history_rows_added} history rows for {answered_200} answers of 200"
                + ("" if cell.tx_invariants.holds else f" — {cell.tx_invariants.problem}"))


def _run_stack(ctx: _Context, stack: Stack, info: StackInfo, kind: str) -> None:
    config, run_dir = ctx.config, ctx.run_dir
    logs = run_dir / "logs" / stack.id
    definition = stack.definition
    port = definition.run.port or free_port()
    if definition.run.port and port_in_use(port):
        info.status, info.reason = "start_failed", f"its fixed port {port} is already in use"
        return
    values = stack_values(config, ctx.db, stack, port)
    if definition.build:
        ctx.log(f"[{stack.id}] building")
        build_log = logs / "build.log"
        step = run_logged(render_template(definition.build.command, values), cwd=stack.directory,
                          env=stack_environment(values, definition.build.env), log_path=build_log,
                          timeout_s=definition.build.timeout_s)
        info.build_seconds = round(step.duration_s, 3)
        if not step.ok:
            why = f"timed out after {definition.build.timeout_s:.0f} s" if step.timed_out else f"exit code {step.returncode}"
            info.status, info.reason = "build_failed", f"build {why} (log: {build_log})"
            info.log_tail = tail(build_log, LOG_TAIL_LINES)
            return
    ctx.log(f"[{stack.id}] starting on port {port}")
    run_log = logs / "run.log"
    base_url = f"http://127.0.0.1:{port}"
    server = ServerProcess(render_template(definition.run.command, values), cwd=stack.directory,
                           env=stack_environment(values, definition.run.env), log_path=run_log,
                           cpus=config.server_cpus)
    with server:
        try:
            info.startup_seconds = round(
                wait_until_healthy(server, base_url + definition.run.health_path, definition.run.startup_timeout_s), 3)
        except NotReady as exc:
            info.status, info.reason = "start_failed", f"{exc} (log: {run_log})"
            info.log_tail = tail(run_log, LOG_TAIL_LINES)
            return
        info.status = "ok"
        workloads = [w for w in config.workloads if w in definition.workloads]
        ctx.log(f"[{stack.id}] verifying {', '.join(workloads)}")
        verifications = verify_stack(base_url, stack.id, workloads, ctx.db, perf_test_rows=config.perf_test_rows,
                                     users_limits=config.users_limits, timeout_s=config.http_timeout_s,
                                     health_path=definition.run.health_path, routes=dict(definition.routes))
        ctx.results.verifications.extend(verifications)
        for v in verifications:
            ctx.log(f"[{stack.id}] {v.workload}: {_verification_line(v)}")
        save(ctx.results, run_dir)
        if kind != "run":
            return
        loadable = {v.workload for v in verifications if v.ok}
        info.warmup_seconds = max(config.warmup_s, definition.run.min_warmup_s)
        ctx.routes[stack.id] = dict(definition.routes)
        for cell in plan_cells(config, stack, ctx.engine.name):  # type: ignore[union-attr]
            cell.warmup_seconds = info.warmup_seconds
            if cell.workload not in loadable:
                cell.status, cell.error = "failed", "verification failed; not loaded"
                ctx.results.cells.append(cell)
                continue
            verification = ctx.results.verification(stack.id, cell.workload)
            if verification and verification.wrong_columns:
                cell.flags.append("columns-wrong")
            if verification and verification.accounting and verification.accounting.verdict is Verdict.WRONG:
                cell.flags.append("queries-wrong")
            ctx.log(f"[{stack.id}] {cell.workload} {cell.parameter_name or ''}{cell.parameter or ''} "
                    f"@ {cell.vus} VUs".replace("  ", " "))
            try:
                _measure_cell(ctx, cell, server, base_url)
                if cell.repetitions:
                    summarize(cell, config)
            except (NotReady, EngineOutputError) as exc:
                cell.status, cell.error = "failed", str(exc)
                if server.exit_code() is not None:
                    info.status, info.reason = "crashed", f"exited with code {server.exit_code()} under load"
                    info.log_tail = tail(run_log, LOG_TAIL_LINES)
            ctx.results.cells.append(cell)
            save(ctx.results, run_dir)
            if info.status == "crashed":
                ctx.log(f"[{stack.id}] crashed: {info.reason}")
                return


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


def execute(
    config: RunConfig,
    *,
    kind: Literal["run", "verify"],
    project_dir: Path,
    command_line: str,
    log: Log = print,
) -> Path:
    """Run (or only verify) the configured stacks; return the run directory with results.json."""
    stacks, load_errors = select_stacks(config)
    if not stacks and not load_errors:
        raise RunError(f"no stacks selected (stacks folder: {config.stacks_dir})")
    engine = get_engine(config.engine) if kind == "run" else None
    if engine is not None:
        engine.binary  # noqa: B018 — raises EngineUnavailable early, before any build
    run_id = config.run_id or new_run_id()
    run_dir = config.results_dir / run_id
    if (run_dir / "results.json").exists():
        raise RunError(f"{run_dir} already holds a run; choose another --run-id")
    run_dir.mkdir(parents=True, exist_ok=True)
    version_commands = [argv for s in stacks if s.available for argv in s.definition.version_commands]
    environment = collect(project_dir, generator_cpus=config.generator_cpus, server_cpus=config.server_cpus,
                          version_commands=version_commands)
    if engine is not None:
        environment.engine_versions[engine.name] = engine.version()
    results = RunResults(
        run_id=run_id, command=command_line, kind=kind, status="running",
        started_at=dt.datetime.now(dt.timezone.utc), config=config.redacted(), environment=environment,
        stacks=[_stack_info(s) for s in stacks] + [_config_error_info(e) for e in load_errors],
    )
    for error in load_errors:
        log(f"[{error.stack_id}] skipped: {error.message}")
    save(results, run_dir)
    try:
        with provide_database(run_dir, database_url=config.database_url, cpus=config.server_cpus) as db:
            load_workload_data(db, config.workloads)
            version, settings = server_facts(db)
            environment.postgres_version = version
            results.database = DatabaseInfo(
                mode="managed" if db.managed else "external", version=version,
                settings_profile=SETTINGS_PROFILE_NAME if db.managed else None, settings=settings,
                url=redact_url(db.url),
            )
            ctx = _Context(config=config, engine=engine, results=results, run_dir=run_dir, db=db, log=log)
            for stack in stacks:
                info = results.stack(stack.id)
                if not stack.available:
                    log(f"[{stack.id}] {stack.unavailable_reason}")
                    continue
                _run_stack(ctx, stack, info, kind)
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
        results.finished_at = dt.datetime.now(dt.timezone.utc)
        save(results, run_dir)
        from pgarena.report import write_reports

        write_reports(results, run_dir)
    return run_dir


__all__ = ["EngineUnavailable", "RunError", "execute", "plan_cells", "select_stacks", "summarize"]
