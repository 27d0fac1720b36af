"""Where the wire observer (issue 25) sits in a run: between a verified stack and PostgreSQL, never in a measured
window.

`pgarena verify` (no load follows): the stack's one start connects to PostgreSQL through the observer, and its
verification ends, per workload, with the observer's bursts (verify/wire.py). `pgarena run`: the stack that
is measured never sees the observer; after its verification pgarena starts it a second time, briefly, on
another port with the observer as its database, sends the bursts (and, with --wire-under-load, a few seconds
of load per workload: pipeline/wireload.py), and stops it (`observe_second_start`), so the observer's own cost
(a hop of about 0.1 ms per round trip, its CPU) stays off every figure. Not on an SSH or namespaced stack
(the observer listens on this machine's loopback): the workload then records why (`wire_unavailable`). The
observer always connects to PostgreSQL directly, never through --db-rtt's proxy: round trips are counted, not
timed, and the second start of a --db-rtt run is what the round-trip model (analysis/wiremodel.py) reads.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import replace

from pgarena.config.run import workload_parameters
from pgarena.config.stackdef import Stack, render_template
from pgarena.contract import workloads as wl
from pgarena.db.postgres import Database, free_port
from pgarena.pipeline import wireload
from pgarena.pipeline.context import RunContext
from pgarena.results.models import StackInfo, WorkloadVerification
from pgarena.results.store import save
from pgarena.stack.launch import resolve_health_path, stack_environment
from pgarena.system.process import NotReady, ServerProcess, wait_until_healthy
from pgarena.system.wireobserver import WireObserver, WireObserverUnavailable
from pgarena.verify.verification import TX_VERIFY_SEED
from pgarena.verify.wire import burst_parameter, observe_workloads, summary_lines


def unobservable(ctx: RunContext, stack: Stack | None = None) -> str | None:
    """Why this run's stacks, or this one, cannot be observed (None: they can)."""
    if ctx.placement.kind("stack") != "local" or ctx.placement.address("stack") != "127.0.0.1":
        return "the stack runs on another host or in a namespace; the observer listens on this loopback only"
    port = stack.database_port if stack is not None else None
    if port is not None:
        return (f"its database port is fixed ([database] port = {port}): the app connects there, not to "
                "the address pgarena gives it, so its connections cannot go through the observer")
    return None


def start_observer(ctx: RunContext, stack_id: str, values: dict[str, str],
                   scope: ExitStack) -> tuple[WireObserver, dict[str, str]]:
    """An observer to the database, living until `scope` closes, and the stack's launch values pointing
    at it (raises WireObserverUnavailable)."""
    observer = scope.enter_context(WireObserver(
        f"{ctx.db.host}:{ctx.db.port}", log_path=ctx.run_dir / "logs" / stack_id / "wire-observer.log",
        tracker=ctx.registry, cpus=list(ctx.config.generator_cpus)))
    return observer, through_observer(values, ctx.db, observer)


def through_observer(values: dict[str, str], db: Database, observer: WireObserver) -> dict[str, str]:
    """A stack's launch values (stack/launch.stack_values) with the observer as its database: the URL, host
    and port name the observer's listening address, the rest (user, password, database) stays `db`'s."""
    url = replace(db, host=observer.listen_host, port=observer.listen_port).url
    return {**values, "database_url": url, "db_host": observer.listen_host, "db_port": str(observer.listen_port)}


def log_profile(ctx: RunContext, verification: WorkloadVerification) -> None:
    """Log a workload's wire profile, or why it was not measured (nothing when neither is known)."""
    if verification.wire is not None:
        for line in summary_lines(verification.wire):
            ctx.log(f"[{verification.stack}] {verification.workload} {line}")
    elif verification.wire_unavailable:
        ctx.log(f"[{verification.stack}] {verification.workload} on the wire: not measured: "
                f"{verification.wire_unavailable}")


def mark_unavailable(ctx: RunContext, stack_id: str, reason: str) -> None:
    """Record on every verified workload of the stack why it has no wire profile, and no under-load one when
    asked (and log it once)."""
    wireload.mark_unavailable(ctx, stack_id, reason)
    marked = [v for v in ctx.results.verifications if v.stack == stack_id and v.wire is None]
    for verification in marked:
        verification.wire_unavailable = reason
    if marked:
        ctx.log(f"[{stack_id}] on the wire: not measured: {reason}")


def observe_second_start(ctx: RunContext, stack: Stack, info: StackInfo, values: dict[str, str],
                         loadable: set[str]) -> None:
    """`pgarena run`: start the verified stack again through an observer, profile its loadable workloads into
    their verifications, stop both (see the module docstring)."""
    definition = stack.definition
    workloads = [w for w in ctx.config.workloads if w in loadable]
    if not workloads:
        return
    if definition.run.port:  # a fixed port is still held by the measured start
        mark_unavailable(ctx, stack.id, "a fixed port: the stack cannot be started twice")
        return
    with ExitStack() as scope:
        try:
            observer, launch = start_observer(ctx, stack.id, {**values, "port": str(free_port())}, scope)
        except WireObserverUnavailable as exc:
            mark_unavailable(ctx, stack.id, str(exc))
            return
        base_url = f"http://{launch['host']}:{launch['port']}"
        server = scope.enter_context(ServerProcess(
            render_template(definition.run.command, launch), cwd=stack.directory,
            env=stack_environment(launch, definition.run.env), cpus=ctx.config.server_cpus, tracker=ctx.registry,
            log_path=ctx.run_dir / "logs" / stack.id / "run-wire.log"))
        try:
            wait_until_healthy(server, base_url + wl.routed(resolve_health_path(ctx.config, definition),
                                                            dict(definition.routes)),
                               definition.run.startup_timeout_s)
        except NotReady as exc:
            mark_unavailable(ctx, stack.id, f"its second start (through the observer) failed: {exc}")
            return
        ctx.log(f"[{stack.id}] on the wire: a second start through the observer, {', '.join(workloads)}")
        config = ctx.config
        scenarios = {w: workload_parameters(config, w) for w in wl.SCENARIOS}
        parameters = {w: burst_parameter(w, config.perf_test_rows, config.users_limits, scenarios) for w in workloads}
        observe_workloads(ctx.results.verifications, stack.id, workloads, base_url, observer, parameters=parameters,
                          timeout_s=config.http_timeout_s, routes=dict(definition.routes), seed=TX_VERIFY_SEED + 2)
        if config.wire_under_load:
            wireload.observe_under_load(ctx, stack.id, workloads, observer, base_url=base_url,
                                        routes=dict(definition.routes), parameters=parameters)
    for verification in ctx.results.verifications:
        if verification.stack == stack.id:
            log_profile(ctx, verification)
    save(ctx.results, ctx.run_dir)
