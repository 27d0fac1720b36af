"""`--wire-under-load` (issue 25): a few seconds of load through the wire observer, on the stack's second start.

After the bursts of `pipeline/wire.observe_second_start` (the stack's second, unmeasured start, with the observer
as its database), each loadable workload gets one window of the run's own generator (load/engines, oha or k6)
built like a measured cell's (load/window.request_spec: the same request files) at the workload's highest
closed-model VU count for `config.wire_load_s` seconds, its arrival rate capped at
`config.wire_load_max_requests` over the window (the open model with the VUs as the most requests in flight: a
stack slower than the cap sees the VUs' concurrency, a faster one fewer). The observer is read right before
and right after the window (verify/wire.load_profile): round trips, messages, bytes, prepared/reused statements
and pipelining per request of the load, and what the pool did (connections opened and closed, the most open at
once). The result is the workload's `wire_under_load`, or why not in `wire_under_load_unavailable`.

Nothing of it reaches a figure: the measured start never goes through the observer, this start is stopped
before any cell, and the observer's hop (docs/verification.md, "The observer's own cost") is in this profile's
latencies only, which are not kept.
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from pgarena.config.run import workload_vus
from pgarena.load.engines import EngineUnavailable
from pgarena.load.engines.base import EngineOutputError
from pgarena.load.window import workload_stem, request_spec, run_window
from pgarena.pipeline.context import RunContext
from pgarena.results.models import WorkloadVerification
from pgarena.results.wire import WireLoad
from pgarena.system.wireobserver import WireObserver, WireObserverUnavailable
from pgarena.verify.wire import bypassed, load_profile, summary_lines


def mark_unavailable(ctx: RunContext, stack_id: str, reason: str) -> None:
    """With `--wire-under-load`: record on every verified workload of the stack why it has no under-load
    profile (nothing when the option is off)."""
    if not ctx.config.wire_under_load:
        return
    for verification in ctx.results.verifications:
        if verification.stack == stack_id and verification.wire_under_load is None:
            verification.wire_under_load_unavailable = reason


def load_one(ctx: RunContext, verification: WorkloadVerification, observer: WireObserver, *, base_url: str,
             routes: dict[str, str], parameter: int | None) -> None:
    """One window of load on `verification`'s workload through `observer` into its `wire_under_load` (or the
    reason into `wire_under_load_unavailable`)."""
    config, engine, workload = ctx.config, ctx.engine, verification.workload
    if engine is None:
        verification.wire_under_load_unavailable = "no load generator in this run"
        return
    vus = max(workload_vus(config, workload))
    seconds, cap = config.wire_load_s, config.wire_load_max_requests
    raw_dir = ctx.run_dir / "raw" / verification.stack
    raw_dir.mkdir(parents=True, exist_ok=True)
    label = f"wire-{workload_stem(workload, parameter)}-vus{vus}"
    spec = request_spec(workload, parameter, stack=verification.stack, label=label, raw_dir=raw_dir,
                        base_url=base_url, routes=routes, connections=vus, config=config, rate=cap / seconds)
    burst = verification.wire
    try:
        cpu_before, before = observer.cpu_seconds(), observer.read()  # the read resets the observer's peaks
        window = run_window(engine, spec, seconds, raw_dir, label, config)
        after = observer.read()
    except (WireObserverUnavailable, httpx.HTTPError, EngineUnavailable, EngineOutputError, OSError) as exc:
        verification.wire_under_load_unavailable = f"the load through the observer failed: {exc}"
        return
    outcome = window.outcome
    if not outcome.answered_2xx:
        verification.wire_under_load_unavailable = (f"none of the {outcome.requests} requests of the load through "
                                                    "the observer was answered 2xx")
        return
    load = WireLoad(engine=engine.name, vus=vus, parameter=parameter, request_cap=cap, pool_size=config.pool_size,
                    duration_seconds=round(outcome.duration_seconds, 3), peak_open_connections=0)
    profile = load_profile(before, after, requests=outcome.requests, answered=outcome.answered_2xx, load=load,
                           burst_peak_statements=burst.peak_statements_per_flight if burst is not None else None,
                           observer_cpu_seconds=round(observer.cpu_seconds() - cpu_before, 3))
    verification.wire_under_load_unavailable = bypassed(profile, workload)
    verification.wire_under_load = profile if verification.wire_under_load_unavailable is None else None


def observe_under_load(ctx: RunContext, stack_id: str, workloads: Sequence[str], observer: WireObserver, *,
                       base_url: str, routes: dict[str, str], parameters: dict[str, int | None]) -> None:
    """`--wire-under-load`: one window of load per workload of a running stack through its observer (see the
    module docstring); `parameters`: workload → the parameter its burst used, which the load uses too."""
    by_workload = {v.workload: v for v in ctx.results.verifications if v.stack == stack_id}
    for workload in workloads:
        if workload not in by_workload:
            continue
        verification = by_workload[workload]
        load_one(ctx, verification, observer, base_url=base_url, routes=routes, parameter=parameters.get(workload))
        profile = verification.wire_under_load
        if profile is not None and profile.load is not None:
            ctx.log(f"[{stack_id}] {workload} under load ({profile.load.vus} VUs, {profile.requests:,} requests in "
                    f"{profile.load.duration_seconds:g} s, {profile.load.peak_open_connections} connections at "
                    f"most, {profile.connections_opened} opened) {summary_lines(profile)[0]}")
        else:
            ctx.log(f"[{stack_id}] {workload} under load: not measured: {verification.wire_under_load_unavailable}")
