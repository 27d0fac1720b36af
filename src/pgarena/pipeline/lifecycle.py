"""A stack's life in a run: built, started, healthy, verified, then kept up for the schedule."""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path

from pgarena.config.redaction import redact_secrets
from pgarena.config.run import workload_parameters
from pgarena.config.stackdef import Stack, render_template
from pgarena.contract import workloads as wl
from pgarena.db.connections import ConnectionPoller, TreeDbPorts, add_pool_flag, pool_refusal
from pgarena.db.postgres import (
    free_port,
)
from pgarena.db.serverlog import role_errors
from pgarena.db.startline import level_database
from pgarena.pipeline import wire
from pgarena.pipeline.context import LOG_TAIL_LINES, LiveStack, RunContext, build_values, mark_build_failed
from pgarena.pipeline.targets import bring_up_target
from pgarena.pipeline.verified import verification_line
from pgarena.results.models import (
    PoolStart,
    StackInfo,
    WorkloadVerification,
)
from pgarena.results.store import save
from pgarena.stack.coldstart import cold_start_workload, measure_cold_start
from pgarena.stack.inputs import build_inputs_sha256
from pgarena.stack.launch import port_in_use, resolve_health_path, stack_environment, stack_values
from pgarena.system import cgroups
from pgarena.system.envelope import record_listening
from pgarena.system.process import NotReady, ServerProcess, run_logged, tail, wait_until_healthy
from pgarena.system.resources import CpuMeters
from pgarena.system.wireobserver import WireObserver, WireObserverUnavailable
from pgarena.verify.restart import check_after_restart
from pgarena.verify.verification import verify_stack


def bring_up(ctx: RunContext, stack: Stack, info: StackInfo, kind: str, scope: ExitStack, *,
             pool_size: int | None = None, restart: bool = False, port: int | None = None,
             execution: int | None = None) -> LiveStack | None:
    """Build, start (its process lives until `scope` closes), check health, time the cold start and verify
    one stack. None, with the reason in `info`, when it cannot be loaded.

    `pool_size`: the pool it is started with (None: `config.pool_size`). `restart`: the stack already ran in
    this process at another pool size, so it is not built again, its cold start is not timed again and it is
    verified briefly (its health path, then one request per workload judged whole: verify/restart.py); the
    start is recorded in `info.pool_starts`, and None means its cells at this pool size cannot be measured. `port`:
    the port it listened on before (a restart keeps it); `execution`: the block of an A/B it is restarted for
    (pipeline/executions.py), which names its log.
    A resumed run's first start of a stack whose verification was stored before the interruption
    (`ctx.stored_verifications`) and whose build inputs are unchanged since (stack/inputs.py) is built, then
    checked as briefly, keeping the stored verification and cold start; a changed stack, or one that fails the
    brief check, is verified whole again. A remote target is only reached and verified (pipeline/targets.py)."""
    if stack.target_url is not None:
        return bring_up_target(ctx, stack, info, kind, scope)
    config = ctx.config
    definition = stack.definition
    pool = pool_size if pool_size is not None else config.pool_size
    start = PoolStart(pool_size=pool) if len(config.pool_levels) > 1 and kind == "run" else None
    if start is not None:
        info.pool_starts.append(start)
    port = port or definition.run.port or free_port()
    if definition.run.port and port_in_use(port):
        _fail_start(info, start, restart, "start_failed", f"its fixed port {port} is already in use")
        return None
    refusal = pool_refusal(definition.pool_per_worker, min(config.pool_levels), config.workers)
    if refusal:
        info.status, info.reason = "config_error", refusal
        return None
    values = {**stack_values(config, ctx.db, stack, port, pool_size=pool), "host": ctx.placement.address("stack")}
    proxy = ctx.network.route(stack.id) if ctx.network is not None and config.db_rtt_ms else None
    if proxy is not None:
        values = ctx.network.proxied(values, proxy)
        scope.callback(proxy.delete)
    observer, unwatched = None, wire.unobservable(ctx, stack) if not restart else "a restart"
    if kind == "verify" and unwatched is None:  # no load follows: the observer may sit in the stack's path
        try:
            observer, values = wire.start_observer(ctx, stack.id, values, scope)
        except WireObserverUnavailable as exc:
            unwatched = str(exc)
    inputs = None if restart else build_inputs_sha256(stack)  # before the build, which may write files
    info.database_levelled = level_database(ctx.db)
    ctx.log(f"[{stack.id}] database: {info.database_levelled}")
    remote = ctx.placement.kind("stack") == "ssh"
    group = None
    if remote:
        from pgarena.pipeline import remote as remote_stack

        server, values = remote_stack.build_and_start(ctx, stack, info, values, scope, restart=restart)
        if server is None:
            return None
    else:
        server, group = _build_and_start_here(ctx, stack, info, values, scope, restart=restart, execution=execution,
                                              announce=f", pool size {pool}" if start is not None else "")
        if server is None:
            return None
    meters = {"stack": group.cpu_seconds} if group else {}
    if ctx.db_group:
        meters["db"] = ctx.db_group.cpu_seconds
    if ctx.network is not None:
        meters["proxy"] = ctx.network.server.cpu_seconds
    cpu = CpuMeters(meters, source=ctx.cgroup_backend.description if ctx.cgroup_backend else "psutil",
                    probe=None if remote else ctx.probe)  # an SSH stack's CPUs are not the probe's

    db_port = observer.listen_port if observer is not None else ctx.db.port if proxy is None else proxy.port
    if not remote:
        poller = scope.enter_context(ConnectionPoller(ctx.db.admin_url, ctx.db.user,
                                                      direct=proxy is not None or observer is not None,
                                                      ports=TreeDbPorts(lambda: server.pid, db_port)))
    elif len(ctx.results.stacks) == 1 and proxy is None:  # the role's connections are this stack's alone
        poller = scope.enter_context(ConnectionPoller(ctx.db.admin_url, ctx.db.user))
    else:  # several stacks share the role and the host's address; their ports cannot be read from here
        poller = None

    def at_stop() -> None:  # runs before the server is stopped (an ExitStack unwinds last-in first-out)
        if info.status in ("ok", "crashed") and server.pid is not None:
            record_listening(info, server.pid, values["host"], ctx.log)  # again: a worker may bind late
        if poller is None:
            return
        peak = poller.peak
        info.peak_connections = max((p for p in (info.peak_connections if restart else None, peak) if p is not None),
                                    default=None)
        add_pool_flag(info.flags, peak, pool)
        if start is not None:
            start.peak_connections = peak

    scope.callback(at_stop)
    stored = None if restart else _unchanged_since_verified(ctx, stack, info, inputs)
    if restart:
        loadable = _health_and_reverify(ctx, stack, info, server, values, start, execution=execution)
    elif stored is not None:
        loadable = _health_and_recheck(ctx, stack, info, kind, server, values, start, stored)
    else:
        info.build_inputs_sha256 = inputs  # saved with the verification it describes
        loadable = _health_and_verify(ctx, stack, info, kind, server, values, observer)
        if loadable and kind == "run" and unwatched is None:
            wire.observe_second_start(ctx, stack, info, values, loadable)
        elif loadable and observer is None and unwatched:
            wire.mark_unavailable(ctx, stack.id, unwatched)
        if start is not None:
            start.startup_seconds = info.startup_seconds
            if loadable is None:
                start.problem = info.reason
    if loadable is None:
        return None
    base_url = f"http://{values['host']}:{values['port']}"
    if ctx.network is not None and config.stack_rtt_ms:  # the generator (and the samplers) through a proxy
        front = ctx.network.front(stack.id, values["host"], int(values["port"]))
        scope.callback(front.delete)
        base_url = f"http://{front.host}:{front.port}"
    return LiveStack(stack=stack, info=info, server=server, cpu=cpu, base_url=base_url,
                     routes=dict(definition.routes), loadable=loadable,
                     stack_cpu_seconds=group.cpu_seconds if group else None, connections=poller,
                     set_db_rtt=ctx.network.setter(proxy) if proxy is not None else None, db_proxy=proxy,
                     pool_size=pool, port=int(values["port"]))


BUILD_BUDGET_SHARE = 0.6
"""With a run budget (--budget), builds may use at most this share of it: the rest is kept for measuring."""
LATER_BRING_UP_S = 30.0
"""…and one build may not take the last of that share: it leaves this much for each stack still to come (a
bring-up with a cached build and its verification took ~40 s in make bench)."""


def build_timeout(ctx: RunContext, declared_s: float) -> tuple[float, str | None]:
    """A build's time limit: the stack's own, or less when the run's budget would otherwise be spent on
    builds — builds end by `BUILD_BUDGET_SHARE` of the budget, and each leaves LATER_BRING_UP_S for every stack
    still to be brought up after it (`ctx.later_bring_ups`), so that one long build cannot leave the stacks after
    it unbuilt. Returns (seconds, why it is shorter or None)."""
    budget = ctx.config.budget_s
    if ctx.deadline is None or budget is None:
        return declared_s, None
    kept = ctx.later_bring_ups * LATER_BRING_UP_S
    left = ctx.deadline - time.monotonic() - (1 - BUILD_BUDGET_SHARE) * budget - kept
    if left >= declared_s:
        return declared_s, None
    return max(0.0, left), (f"the run's --budget of {budget / 60:.0f} min keeps {1 - BUILD_BUDGET_SHARE:.0%} "
                            "of itself for measuring" + (f" and {kept / 60:.0f} min for the {ctx.later_bring_ups} "
                                                         "stacks still to build" if kept else ""))


def _build_and_start_here(ctx: RunContext, stack: Stack, info: StackInfo, values: dict[str, str],
                          scope: ExitStack, *, restart: bool, announce: str = "",
                          execution: int | None = None) -> tuple[ServerProcess | None, cgroups.CpuGroup | None]:
    """Build the stack here (not again on a restart) and start it (in the stacks' namespace under --netns) in
    its cgroup (if any); (None, None), with the reason in `info`, when the build fails."""
    config, definition, logs = ctx.config, stack.definition, ctx.run_dir / "logs" / stack.id
    if definition.build and not restart:
        timeout_s, budget_note = build_timeout(ctx, definition.build.timeout_s)
        if timeout_s <= 0:
            info.status, info.reason = "build_failed", f"not built: {budget_note}"
            return None, None
        ctx.log(f"[{stack.id}] building")
        build_log = logs / "build.log"
        for_build = build_values(values, timeout_s)
        step = run_logged(render_template(definition.build.command, for_build), cwd=stack.directory,
                          env=stack_environment(for_build, definition.build.env), log_path=build_log,
                          timeout_s=timeout_s, tracker=ctx.registry, secrets=_secrets(values),
                          cpus=sorted(set(config.generator_cpus) | set(config.server_cpus)))  # every CPU of the run
        info.build_seconds = round(step.duration_s, 3)
        if not step.ok:
            mark_build_failed(info, build_log, timed_out=step.timed_out, timeout_s=timeout_s,
                              returncode=step.returncode, note=budget_note)
            return None, None
    ctx.log(f"[{stack.id}] starting on port {values['port']}{announce}")
    run_log = logs / ("run.log" if not restart else f"run-block-{execution}.log" if execution
                      else f"run-pool-{values['pool_size']}.log")
    group = scope.enter_context(ctx.cgroup_backend.create(stack.id)) if ctx.cgroup_backend else None
    server = scope.enter_context(ServerProcess(
        render_template(definition.run.command, values), cwd=stack.directory,
        env=stack_environment(values, definition.run.env), log_path=run_log, cpus=config.server_cpus,
        preexec=group.preexec_fn() if group else None, tracker=ctx.registry, argv_prefix=ctx.placement.prefix("stack"),
        secrets=_secrets(values)))
    return server, group


def _secrets(values: dict[str, str]) -> tuple[str, ...]:
    """The passwords a stack's rendered command may hold (`${db_password}`, inside `${database_url}`)."""
    return tuple(v for k, v in values.items() if k == "db_password" and v)


def failed_start_tail(ctx: RunContext, run_log: Path, values: dict[str, str]) -> str:
    """A failed start's evidence: the last lines of the stack's log, then the managed database's error lines
    for the stacks' role (serverlog.py: most frequent first, with counts), every password redacted."""
    text = tail(run_log, LOG_TAIL_LINES)
    errors = role_errors(ctx.db.log_path, ctx.db.user)
    if errors:
        text += f"\n--- postgres.log, errors of role {ctx.db.user}:\n" + "\n".join(errors)
    return redact_secrets(text, _secrets(values))


def _fail_start(info: StackInfo, start: PoolStart | None, restart: bool, status: str, reason: str) -> None:
    """A start that failed: the stack's status on its first start, only this pool size's record on a restart."""
    if start is not None:
        start.problem = reason
    if not restart:
        info.status, info.reason = status, reason  # type: ignore[assignment]


def _unchanged_since_verified(ctx: RunContext, stack: Stack, info: StackInfo,
                              inputs: str | None) -> list[WorkloadVerification] | None:
    """A resumed run: the stack's verifications stored before the interruption, when its build inputs are
    known and unchanged since (None: verify it whole)."""
    stored = ctx.stored_verifications.get(stack.id)
    if not stored or inputs is None or info.build_inputs_sha256 != inputs:
        if stored:
            ctx.log(f"[{stack.id}] resumed: " + ("its build inputs changed since its verification"
                                                 if inputs is not None and info.build_inputs_sha256 is not None
                                                 else "its build inputs are not known") + "; verified again")
        return None
    return stored


def _health_and_recheck(ctx: RunContext, stack: Stack, info: StackInfo, kind: str, server: ServerProcess,
                        values: dict[str, str], start: PoolStart | None,
                        stored: list[WorkloadVerification]) -> set[str] | None:
    """A resumed stack, unchanged since its stored verification: the stored verdicts back in the results, then
    the brief check of a restart (`_health_and_reverify`). A workload verified before that now answers wrongly
    sends the stack through the whole verification again."""
    ctx.results.verifications.extend(stored)
    loadable = _health_and_reverify(ctx, stack, info, server, values, start, resumed=True)
    expected = {v.workload for v in stored if v.ok and v.workload in ctx.config.workloads}
    if loadable is None or loadable == expected:
        return loadable
    ctx.log(f"[{stack.id}] resumed: {', '.join(sorted(expected - loadable))} answered wrongly; verified again")
    ctx.results.verifications = [v for v in ctx.results.verifications if v.stack != stack.id]
    return _verify(ctx, stack, info, kind, server, values)


def _health_and_reverify(ctx: RunContext, stack: Stack, info: StackInfo, server: ServerProcess,
                         values: dict[str, str], start: PoolStart | None, *, resumed: bool = False,
                         execution: int | None = None) -> set[str] | None:
    """A restarted stack (another pool size; `resumed`: the first start of a resumed run, see
    `_health_and_recheck`): its health path, then one request per workload its first start verified, judged
    whole (verify/restart.py). The workloads that answered right (None: it never became healthy, or it
    crashed: on a resume that is the stack's status); what failed is in `start`."""
    config, definition = ctx.config, stack.definition
    base_url = f"http://{values['host']}:{values['port']}"
    routes = dict(definition.routes)
    try:
        healthy = wait_until_healthy(server, base_url + wl.routed(resolve_health_path(config, definition), routes),
                                     definition.run.startup_timeout_s)
    except NotReady as exc:
        _fail_start(info, start, not resumed, "start_failed", f"{exc} (log: {server.log_path})")
        ctx.log(f"[{stack.id}] did not start {'again' if resumed or execution else 'at pool size ' + values['pool_size']}: {exc}")
        ctx.log("    " + failed_start_tail(ctx, server.log_path, values).replace("\n", "\n    "))
        return None
    verified = [v.workload for v in ctx.results.verifications if v.stack == stack.id and v.ok]
    workloads = {w: workload_parameters(config, w)[0] for w in config.workloads if w in verified}
    known_wrong = {w: v.wrong_columns for w in workloads if (v := ctx.results.verification(stack.id, w))}
    problems = check_after_restart(base_url, ctx.db, workloads, timeout_s=config.http_timeout_s, routes=routes,
                                   known_wrong=known_wrong, answer=stack.answer)
    if start is not None:
        start.startup_seconds = round(healthy, 3)
        start.verified = {w: problem is None for w, problem in problems.items()}
        wrong = [f"{w}: {problem}" for w, problem in problems.items() if problem is not None]
        start.problem = "; ".join(wrong)[:400] if wrong else None
    what = ("resumed, build inputs unchanged since its verification: brief check instead" if resumed
            else f"restarted for block {execution}" if execution else f"restarted at pool size {values['pool_size']}")
    ctx.log(f"[{stack.id}] {what}: healthy after {healthy:.2f} s; "
            + ", ".join(f"{w} {'✅' if p is None else '❌ ' + p}" for w, p in problems.items()))
    if server.exit_code() is not None:
        _fail_start(info, start, not resumed, "crashed", f"exited with code {server.exit_code()} after its restart")
        return None
    return {w for w, problem in problems.items() if problem is None}


def _health_and_verify(ctx: RunContext, stack: Stack, info: StackInfo, kind: str, server: ServerProcess,
                       values: dict[str, str], observer: WireObserver | None = None) -> set[str] | None:
    """The started stack: health, cold start and verification; the workloads that may be loaded (None when
    it never became healthy)."""
    config, definition = ctx.config, stack.definition
    run_log = server.log_path
    base_url = f"http://{values['host']}:{values['port']}"
    routes = dict(definition.routes)
    health_path = resolve_health_path(config, definition)
    try:
        healthy = wait_until_healthy(server, base_url + wl.routed(health_path, routes),
                                     definition.run.startup_timeout_s)
    except NotReady as exc:
        info.status, info.reason = "start_failed", f"{exc} (log: {run_log})"
        info.log_tail = failed_start_tail(ctx, run_log, values)
        return None
    info.startup_seconds = round(healthy, 3)
    info.status = "ok"
    if server.pid is not None:  # a stack on an SSH host: its sockets cannot be read from here
        record_listening(info, server.pid, values["host"], ctx.log)
    workloads = [w for w in config.workloads if w in definition.workloads]
    first = cold_start_workload(workloads)
    if first is not None:
        info.cold_start = measure_cold_start(
            base_url, workload=first, parameter=workload_parameters(config, first)[0], healthy_seconds=healthy,
            healthy_at=server.started_at + healthy, count=config.cold_start_requests,
            timeout_s=config.http_timeout_s, routes=routes, answer=stack.answer)
        cs = info.cold_start
        ctx.log(f"[{stack.id}] healthy after {healthy:.2f} s; first correct answer at "
                + (f"{cs.first_correct_seconds:.2f} s" if cs.first_correct_seconds is not None else "— (none)")
                + f"; first request {cs.first_requests_ms[0]:.1f} ms, "
                  f"request {len(cs.first_requests_ms)} {cs.first_requests_ms[-1]:.1f} ms")
    return _verify(ctx, stack, info, kind, server, values, observer)


def _verify(ctx: RunContext, stack: Stack, info: StackInfo, kind: str, server: ServerProcess,
            values: dict[str, str], observer: WireObserver | None = None) -> set[str] | None:
    """The whole verification of a healthy stack (verify/verification.py), saved; the workloads that may be
    loaded (None when it crashed meanwhile)."""
    config, definition = ctx.config, stack.definition
    base_url = f"http://{values['host']}:{values['port']}"
    routes = dict(definition.routes)
    workloads = [w for w in config.workloads if w in definition.workloads]
    ctx.log(f"[{stack.id}] verifying {', '.join(workloads)}")
    verifications = verify_stack(base_url, stack.id, workloads, ctx.db, perf_test_rows=config.perf_test_rows,
                                 users_limits=config.users_limits, timeout_s=config.http_timeout_s,
                                 health_path=resolve_health_path(config, definition), routes=routes,
                                 exit_code=server.exit_code,
                                 scenario_parameters={w: workload_parameters(config, w) for w in wl.SCENARIOS},
                                 answer=stack.answer, observer=observer)
    ctx.results.verifications.extend(verifications)
    for v in verifications:
        ctx.log(f"[{stack.id}] {v.workload}: {verification_line(v)}")
        wire.log_profile(ctx, v)
    if server.exit_code() is not None:
        info.status, info.reason = "crashed", f"exited with code {server.exit_code()} during verification"
        info.log_tail = tail(server.log_path, LOG_TAIL_LINES)
    save(ctx.results, ctx.run_dir)
    if info.status == "crashed":
        return None
    if kind == "run":
        info.warmup_seconds = definition.run.least_warmup_s(config.warmup_s, True)
    return {v.workload for v in verifications if v.ok}


def log_failure(ctx: RunContext, info: StackInfo) -> None:
    if info.status not in ("ok",):
        ctx.log(f"[{info.id}] {info.status}: {info.reason}")
        if info.log_tail:
            ctx.log("    " + info.log_tail.replace("\n", "\n    "))
