"""Run-wide measurements beside the cells: how CPU is accounted, the database ceiling, the generator's headroom."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from contextlib import ExitStack

from pgarena.config.run import workload_parameters
from pgarena.config.stackdef import Stack
from pgarena.contract import workloads as wl
from pgarena.db.ceiling import CEILING_PROTOCOL, measure_ceiling
from pgarena.db.postgres import (
    PostgresError,
)
from pgarena.load.headroom import HeadroomUnavailable, measure_headroom
from pgarena.pipeline.context import RunContext
from pgarena.results.models import (
    DbCeiling,
)
from pgarena.results.store import save
from pgarena.system import cgroups
from pgarena.system.resources import SAMPLE_INTERVAL_S
from pgarena.system.speedprobe import PROBE_INTERVAL_S, UNIT_ITERATIONS, SpeedProbe


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
    ctx.log(f"speed probe: {UNIT_ITERATIONS:,} iterations every {PROBE_INTERVAL_S:g} s on CPUs "
            f"{ctx.config.server_cpus} (pid {ctx.probe.pid})")


def database_ceiling(ctx: RunContext) -> None:
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
                found = measure_ceiling(ctx.db, workload, parameter, connections=max(config.pool_levels),
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


def generator_headroom(ctx: RunContext) -> None:
    """The generator's ceiling against a trivial endpoint, recorded before any stack runs."""
    try:
        headroom = measure_headroom(ctx.engine, ctx.config, ctx.run_dir,  # type: ignore[arg-type]
                                    server_prefix=ctx.placement.prefix("stack"),
                                    server_host=ctx.placement.address("stack"))
    except HeadroomUnavailable as exc:
        ctx.results.environment.headroom_unavailable = str(exc)
        ctx.log(f"generator headroom not measured: {exc}")
        return
    ctx.results.generator_headroom = headroom
    ctx.log(f"generator headroom: {headroom.rps:,.0f} req/s against a trivial endpoint "
            f"({headroom.connections} connections, generator CPU "
            + (f"{headroom.generator_cpu_fraction:.0%})" if headroom.generator_cpu_fraction is not None else "?)"))
    save(ctx.results, ctx.run_dir)
