"""Run-wide measurements beside the cells: how CPU is accounted, the database ceiling, the generator's headroom."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Sequence
from contextlib import ExitStack
from dataclasses import replace

from pgarena.config.stackdef import Stack
from pgarena.contract import workloads as wl
from pgarena.contract.flags import ABOVE_CEILING
from pgarena.contract.workloads import WORKLOAD_NAMES
from pgarena.db.ceiling import CEILING_PROTOCOL, measure_ceiling
from pgarena.db.postgres import (
    PostgresError,
)
from pgarena.load.headroom import HeadroomUnavailable, measure_headroom
from pgarena.pipeline.context import RunContext
from pgarena.report.conditions import NO_DATABASE_WORKLOADS
from pgarena.results.models import Cell, DbCeiling, RunResults
from pgarena.results.store import save
from pgarena.system import cgroups
from pgarena.system.resources import SAMPLE_INTERVAL_S
from pgarena.system.speedprobe import PROBE_INTERVAL_S, UNIT_ARRAY_BYTES, UNIT_ITERATIONS, UNIT_SYSCALLS, SpeedProbe


def cpu_accounting(ctx: RunContext, scope: ExitStack) -> None:
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


def speed_probe(ctx: RunContext, scope: ExitStack, stacks: Sequence[Stack]) -> None:
    """The reference probe on the server CPUs for the whole run (system/speedprobe.py), stopped with the
    run's scope. Not started when no stack runs on this machine (remote targets, stacks on an SSH host):
    their windows' `reference_unit_ns` stay None (not measured)."""
    if ctx.placement.kind("stack") == "ssh" or not any(s.available and s.target_url is None for s in stacks):
        return
    logs = ctx.run_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    ctx.probe = scope.enter_context(SpeedProbe(ctx.config.server_cpus, tracker=ctx.registry,
                                               log_path=logs / "speedprobe.log"))
    ctx.results.environment.speed_probe = ctx.probe.policy
    ctx.log(f"speed probe: {UNIT_ITERATIONS:,} reads from {UNIT_ARRAY_BYTES >> 20} MiB and {UNIT_SYSCALLS} system "
            f"calls every {PROBE_INTERVAL_S:g} s on CPUs {ctx.config.server_cpus}, "
            f"{ctx.probe.policy or 'scheduling not reported'} (pid {ctx.probe.pid})")


def ceiling_conditions(results: RunResults, cells: Iterable[Cell]) -> list[tuple[str, int | None, float | None, int]]:
    """The distinct conditions (workload, parameter, round trip ms, connections) the run's cells need a database
    ceiling under (`RunResults.ceiling_conditions`), direct ones first, then by round trip: each is measured
    once per run (ceiling.py)."""
    found = {results.ceiling_conditions(c) for c in cells if c.workload not in NO_DATABASE_WORKLOADS}
    return sorted(found, key=lambda k: (k[2] is not None, k[2] or 0.0, WORKLOAD_NAMES.index(k[0])
                                        if k[0] in WORKLOAD_NAMES else 99, k[1] or 0, k[3]))


def database_ceiling(ctx: RunContext, cells: Iterable[Cell]) -> None:
    """pgbench running each workload's statements on the idle database, before any stack starts, once per
    condition the planned `cells` were measured under (ceiling.py): a round trip through a Toxiproxy proxy of
    its own at the cells' round trip, over min(VUs, pool size) connections. Kept across a resume."""
    config, results = ctx.config, ctx.results
    if config.ceiling_s <= 0:
        results.ceiling_unavailable = "not measured (--ceiling-seconds 0)"
        return
    set_rtt, route, warmed = None, None, set()
    for workload, parameter, rtt, connections in ceiling_conditions(results, cells):
        if results.ceiling(workload, parameter, rtt, connections) is not None:
            continue
        label = workload if parameter is None else f"{workload} {wl.PARAMETER_NAMES[workload]}={parameter}"
        where = f"{connections} connections" + ("" if rtt is None else f", through a {rtt:g} ms round trip")
        target = ctx.db
        if rtt is not None:
            if ctx.network is None:
                results.ceiling_unavailable = f"{label} at {rtt:g} ms: no proxy for the round trip"
                continue
            if route is None:
                route = ctx.network.route("ceiling")
                set_rtt = ctx.network.setter(route)
            set_rtt(rtt)  # type: ignore[misc]
            target = replace(ctx.db, host=route.host, port=route.port)
        try:
            found = measure_ceiling(target, workload, parameter, connections=connections, seconds=config.ceiling_s,
                                    cpus=config.server_cpus, log_dir=ctx.run_dir / "logs" / "ceiling",
                                    label=f"c{connections}" + ("" if rtt is None else f"-rtt{rtt:g}ms"),
                                    warm_up=(workload, parameter) not in warmed)
            warmed.add((workload, parameter))
        except (PostgresError, OSError, subprocess.SubprocessError) as exc:
            results.ceiling_unavailable = f"{label} ({where}): pgbench could not measure it: {exc}"
            ctx.log(f"database ceiling of {label} ({where}) not measured: {exc}")
            continue
        if found is None:
            continue
        low, high = found.interval or (None, None)
        results.ceilings.append(DbCeiling(
            workload=workload, parameter_name=wl.PARAMETER_NAMES[workload], parameter=parameter,
            connections=found.connections, transactions=found.transactions, seconds=found.seconds,
            tps=round(found.tps, 1), protocol=CEILING_PROTOCOL, statements=found.description,
            cpus=list(config.server_cpus), db_rtt_ms=rtt, runs_tps=[round(t, 1) for t in found.runs_tps],
            tps_low=None if low is None else round(low, 1), tps_high=None if high is None else round(high, 1)))
        ctx.log(f"database ceiling, {label} ({where}): {found.tps:,.0f} tps"
                + ("" if low is None else f" ({low:,.0f}–{high:,.0f})")
                + f" ({found.description}; pgbench -M {CEILING_PROTOCOL})")
    if route is not None:
        route.delete()
    save(results, ctx.run_dir)


def flag_above_ceiling(results: RunResults) -> list[Cell]:
    """Adds flags.ABOVE_CEILING to every measured cell whose median 2xx/s is above the database ceiling of its
    conditions (a measurement problem, never a silent "120 %"); returns the cells flagged now."""
    flagged = []
    for cell in results.cells:
        ceiling = results.ceiling_for(cell)
        if (cell.summary is not None and ceiling is not None and 0 < ceiling.tps < cell.summary.rps.median
                and ABOVE_CEILING not in cell.flags):
            cell.flags.append(ABOVE_CEILING)
            flagged.append(cell)
    return flagged


def generator_headroom(ctx: RunContext) -> None:
    """The generator's ceiling against a trivial endpoint, recorded before any stack runs: driven by the run's
    generator places together (--generators N, a topology's generators), as every cell is (headroom.py)."""
    try:
        headroom = measure_headroom(ctx.engine, ctx.config, ctx.run_dir,  # type: ignore[arg-type]
                                    server_prefix=ctx.placement.prefix("stack"),
                                    server_host=ctx.placement.address("stack"), places=ctx.generator_places)
    except HeadroomUnavailable as exc:
        ctx.results.environment.headroom_unavailable = str(exc)
        ctx.log(f"generator headroom not measured: {exc}")
        return
    ctx.results.generator_headroom = headroom
    ctx.log(f"generator headroom: {headroom.rps:,.0f} req/s against a trivial endpoint "
            f"({headroom.connections} connections, generator CPU "
            + (f"{headroom.generator_cpu_fraction:.0%})" if headroom.generator_cpu_fraction is not None else "?)"))
    for place in headroom.places:
        ctx.log(f"  {place.name} ({place.host}): {place.rps:,.0f} req/s, CPU "
                + ("not measured (another machine)" if place.cpu_fraction is None else f"{place.cpu_fraction:.0%}"))
    save(ctx.results, ctx.run_dir)
