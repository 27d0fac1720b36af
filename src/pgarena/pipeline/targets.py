"""A remote target's part of a run (--target ID=URL): reached, verified and loaded, never built, started or stopped.

The target reads pgarena's data from the user's database (--database-url), as pgarena's role `pgarena` with
the password given by --db-password, so verification compares its answers with that database before and
during the load like any stack's. What only the stack's own machine could tell — its CPU, memory, process
tree, cold start, listening sockets, lines of code — stays None ("not measured"); the database side
(pg_stat_statements accounting, the connections PostgreSQL sees) is measured as for any stack.
"""

from __future__ import annotations

from contextlib import ExitStack

from pgarena.config.redaction import redact_secrets
from pgarena.config.run import workload_parameters
from pgarena.config.stackdef import Stack
from pgarena.contract import workloads as wl
from pgarena.db.connections import ConnectionPoller, add_pool_flag
from pgarena.db.postgres import Database
from pgarena.db.startline import level_database
from pgarena.pipeline.context import LiveStack, RunContext
from pgarena.pipeline.verified import verification_line
from pgarena.results.models import StackInfo, TargetHost
from pgarena.results.store import save
from pgarena.stack.launch import resolve_health_path
from pgarena.stack.target import DEFAULT_TARGET_REACH_S, RemoteServer, reach
from pgarena.system.process import NotReady
from pgarena.system.resources import CpuMeters
from pgarena.verify.verification import verify_stack

NOT_MEASURED_CPU = "not measured (remote target)"
"""The CPU accounting source recorded for a target's cells: pgarena has no meter on its host."""


def target_hosts(stacks: list[Stack]) -> list[TargetHost]:
    """The environment record of every target: its URL; its host's CPU, memory and kernel not measured."""
    return [TargetHost(stack=s.id, url=redact_secrets(s.target_url)) for s in stacks if s.target_url]


def database_line(db: Database) -> str:
    """What every deployed target must be connected to (the log says it before the first target is reached)."""
    return (f"remote targets: pgarena loaded its data into {redact_secrets(db.url)} (schema pgarena); each deployed "
            f"stack must read that database as role '{db.user}' with the --db-password password (host and port as "
            f"its own network reaches {db.host}:{db.port}); pgarena neither builds, starts nor stops a target")


def bring_up_target(ctx: RunContext, stack: Stack, info: StackInfo, kind: str, scope: ExitStack) -> LiveStack | None:
    """Reach and verify one remote target; the LiveStack the schedules load (None, with the reason in `info`,
    when it answered nothing: status start_failed, the run goes on)."""
    config, definition = ctx.config, stack.definition
    base_url = stack.target_url
    assert base_url is not None
    info.target_url = redact_secrets(base_url)
    info.database_levelled = level_database(ctx.db)
    ctx.log(f"[{stack.id}] database: {info.database_levelled}")
    routes = dict(definition.routes)
    health_path = resolve_health_path(config, definition)
    ctx.log(f"[{stack.id}] remote target at {info.target_url}: reaching {health_path}")
    try:
        seconds, status = reach(base_url + wl.routed(health_path, routes), deadline_s=DEFAULT_TARGET_REACH_S,
                                timeout_s=config.http_timeout_s)
    except NotReady as exc:
        info.status, info.reason = "start_failed", f"remote target unreachable: {exc}"
        return None
    info.status = "ok"
    ctx.log(f"[{stack.id}] answered HTTP {status} after {seconds:.2f} s (not started by pgarena: no cold start)")
    poller = None
    if len(config.targets) == 1:
        # NOTE: PostgreSQL sees every target as pgarena's one role, and a deployment's connections need not come from
        # the address its URL names (a load balancer, a NAT, a pod network): with one target, every client backend
        # of the role but pgarena's own is its; with several they cannot be told apart, so none is counted (None).
        poller = scope.enter_context(ConnectionPoller(ctx.db.admin_url, ctx.db.user))

        def at_stop() -> None:
            info.peak_connections = poller.peak
            add_pool_flag(info.flags, info.peak_connections, config.pool_size)

        scope.callback(at_stop)
    server = RemoteServer(base_url, ctx.run_dir / "logs" / stack.id / "target.log")
    workloads = [w for w in config.workloads if w in definition.workloads]
    ctx.log(f"[{stack.id}] verifying {', '.join(workloads)}")
    verifications = verify_stack(base_url, stack.id, workloads, ctx.db, perf_test_rows=config.perf_test_rows,
                                 users_limits=config.users_limits, timeout_s=config.http_timeout_s,
                                 health_path=health_path, routes=routes,
                                 scenario_parameters={w: workload_parameters(config, w) for w in wl.SCENARIOS})
    ctx.results.verifications.extend(verifications)
    for v in verifications:
        ctx.log(f"[{stack.id}] {v.workload}: {verification_line(v)}")
    save(ctx.results, ctx.run_dir)
    if kind == "run":
        info.warmup_seconds = definition.run.least_warmup_s(config.warmup_s, True)
    cpu = CpuMeters({})
    cpu.source = NOT_MEASURED_CPU  # no meter on the target's host: its cells' CPU figures stay None
    return LiveStack(stack=stack, info=info, server=server,  # type: ignore[arg-type]
                     cpu=cpu, base_url=base_url, routes=routes,
                     loadable={v.workload for v in verifications if v.ok}, stack_cpu_seconds=None,
                     connections=poller)
