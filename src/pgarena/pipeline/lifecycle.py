"""A stack's life in a run: built, started, healthy, verified, then kept up for the schedule."""

from __future__ import annotations

from contextlib import ExitStack

from pgarena.config.run import workload_parameters
from pgarena.config.stackdef import Stack, render_template
from pgarena.contract import workloads as wl
from pgarena.db.connections import ConnectionPoller, add_pool_flag, pool_refusal, tree_db_ports
from pgarena.db.postgres import (
    free_port,
)
from pgarena.db.startline import level_database
from pgarena.pipeline.context import LOG_TAIL_LINES, LiveStack, RunContext
from pgarena.results.models import (
    StackInfo,
    WorkloadVerification,
)
from pgarena.results.store import save
from pgarena.stack.coldstart import cold_start_workload, measure_cold_start
from pgarena.stack.launch import port_in_use, resolve_health_path, stack_environment, stack_values
from pgarena.system.envelope import record_listening
from pgarena.system.process import NotReady, ServerProcess, run_logged, tail, wait_until_healthy
from pgarena.system.resources import CpuMeters
from pgarena.verify.verification import verify_stack


def bring_up(ctx: RunContext, stack: Stack, info: StackInfo, kind: str, scope: ExitStack) -> LiveStack | None:
    """Build, start (its process lives until `scope` closes), check health, time the cold start and verify
    one stack. None, with the reason in `info`, when it cannot be loaded. A remote target is only reached and
    verified (pipeline/targets.py)."""
    if stack.target_url is not None:
        from pgarena.pipeline.targets import bring_up_target

        return bring_up_target(ctx, stack, info, kind, scope)
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
    proxy = ctx.network.route(stack.id) if ctx.network is not None else None
    if proxy is not None:
        values = ctx.network.proxied(values, proxy)
        scope.callback(proxy.delete)
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
    if ctx.network is not None:
        meters["proxy"] = ctx.network.server.cpu_seconds
    cpu = CpuMeters(meters, source=ctx.cgroup_backend.description if ctx.cgroup_backend else "psutil")

    db_port = ctx.db.port if proxy is None else proxy.port
    poller = scope.enter_context(ConnectionPoller(ctx.db.admin_url, ctx.db.user, direct=proxy is not None,
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
                     stack_cpu_seconds=group.cpu_seconds if group else None, connections=poller,
                     set_db_rtt=ctx.network.setter(proxy) if proxy is not None else None, db_proxy=proxy)


def _health_and_verify(ctx: RunContext, stack: Stack, info: StackInfo, kind: str, server: ServerProcess,
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
                                 health_path=health_path, routes=routes, exit_code=server.exit_code,
                                 scenario_parameters={w: workload_parameters(config, w) for w in wl.SCENARIOS})
    ctx.results.verifications.extend(verifications)
    for v in verifications:
        ctx.log(f"[{stack.id}] {v.workload}: {verification_line(v)}")
    if server.exit_code() is not None:
        info.status, info.reason = "crashed", f"exited with code {server.exit_code()} during verification"
        info.log_tail = tail(run_log, LOG_TAIL_LINES)
    save(ctx.results, run_dir)
    if info.status == "crashed":
        return None
    if kind == "run":
        info.warmup_seconds = max(config.warmup_s, definition.run.min_warmup_s)
    return {v.workload for v in verifications if v.ok}


def verification_line(v: WorkloadVerification) -> str:
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
    content = ("content type wrong (loaded, flagged content-type-wrong), "
               if v.content_type_wrong else "")
    return f"ok, {content}{columns}{bad}{db}"


def log_failure(ctx: RunContext, info: StackInfo) -> None:
    if info.status not in ("ok",):
        ctx.log(f"[{info.id}] {info.status}: {info.reason}")
        if info.log_tail:
            ctx.log("    " + info.log_tail.replace("\n", "\n    "))
