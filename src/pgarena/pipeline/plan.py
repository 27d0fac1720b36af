"""Planning a run: which stacks, which cells, which cluster settings, which open-model rates."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from pgarena.analysis.sharedrates import SHARED_SPEC_SUFFIX, rate_key
from pgarena.config.parsers import parse_rate
from pgarena.config.redaction import redact_secrets
from pgarena.config.run import RunConfig, workload_parameters, workload_vus
from pgarena.config.stackdef import Stack, StackLoadError, load_stacks
from pgarena.config.targets import target_stacks
from pgarena.contract import workloads as wl
from pgarena.contract.flags import DEMONSTRATION
from pgarena.db.cluster import ClusterSettings, merge_cluster_settings, port_taken
from pgarena.db.namespace import SCHEMA
from pgarena.db.postgres import PostgresError
from pgarena.pipeline.context import RunError
from pgarena.results.models import (
    Cell,
    StackInfo,
)
from pgarena.stack import loc

if TYPE_CHECKING:
    from pgarena.pipeline.context import RunContext


def stack_info(stack: Stack) -> StackInfo:
    d = stack.definition
    remote = stack.target_url is not None  # a target's deployed code is not this folder's, as far as pgarena knows
    return StackInfo(
        lines_of_code=loc.count(stack.directory, d.source_globs) if d.source_globs and not remote else None,
        target_url=redact_secrets(stack.target_url) if remote else None,  # type: ignore[arg-type]
        id=d.id, title=d.title, language=d.language, framework=d.framework, framework_version=d.framework_version,
        driver=d.driver, driver_version=d.driver_version, server=d.server, pooler=d.pooler,
        prepared_statements=d.prepared_statements, workloads=list(d.workloads), notes=list(d.notes),
        competes=d.competes,
        status="pending" if stack.available else "unavailable", reason=stack.unavailable_reason,
    )


def config_error_info(error: StackLoadError) -> StackInfo:
    return StackInfo(
        id=error.stack_id, title=error.stack_id, language="?", framework="?", framework_version="?", driver="?",
        driver_version="?", server="", pooler="", prepared_statements=None, workloads=[], notes=[],
        status="config_error", reason=error.message,
    )


def select_stacks(config: RunConfig) -> tuple[list[Stack], list[StackLoadError]]:
    """The stacks the config asks for; an unknown id is a RunError naming the known ones. With --target, the
    remote targets instead (config/targets.py)."""
    if config.targets:
        return target_stacks(config.targets, config.workloads, config.stacks_dir)
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


def cluster_settings(config: RunConfig, stacks: list[Stack]) -> ClusterSettings:
    """The managed database's settings: --db-* plus the selected stacks' `[database]` (RunError if they
    disagree, or if a stack fixes them while the run uses --database-url)."""
    wanted = {s.id: ClusterSettings(**s.definition.database.cluster_keys()) for s in stacks
              if s.available and s.definition.database is not None and s.target_url is None
              and any(v is not None for v in s.definition.database.cluster_keys().values())}
    schemas = stack_schemas(stacks)
    if config.database_url and schemas:
        stack_id, schema = next(iter(schemas.items()))
        raise RunError(f"stack {stack_id} expects pgarena's objects in schema {schema}; on your own database "
                       f"(--database-url) pgarena keeps them in schema {SCHEMA} only and creates nothing in "
                       f"{schema}: run that stack on the managed database")
    if config.database_url and wanted:
        raise RunError(f"stack {next(iter(wanted))} needs the managed database's settings "
                       f"({next(iter(wanted.values())).described()}); run it without --database-url")
    given = ClusterSettings(port=config.db_port, user=config.db_user, password=config.db_password,
                            name=config.db_name)
    try:
        return merge_cluster_settings(given, wanted)
    except PostgresError as exc:
        raise RunError(str(exc)) from None


def fixed_port_in_rtt_run(config: RunConfig, stacks: list[Stack]) -> list[Stack]:
    """The stacks, those whose `[database] port` is fixed marked unavailable in a `--db-rtt` run: such an app
    connects to that port, not to the round-trip proxy's (seed 000's apps, on 5432), so its cells would be
    labelled with a round trip their requests never crossed."""
    if not config.db_rtt_ms:
        return stacks
    marked = []
    for stack in stacks:
        port = stack.database_port
        if stack.available and stack.target_url is None and port is not None:
            stack = replace(stack, unavailable_reason=(
                f"not in a --db-rtt run: its [database] port {port} is fixed, so it would reach PostgreSQL directly, "
                "not through the round-trip proxy"))
        marked.append(stack)
    return marked


def ports_in_use(config: RunConfig, stacks: list[Stack], taken=port_taken) -> list[Stack]:
    """The stacks, those of a default selection (no --stacks) whose `[database] port` is taken here marked
    unavailable with the reason: an app written elsewhere that fixes the managed cluster's port (seed 000's, on
    5432) must not stop the whole run on a machine whose own PostgreSQL holds that port. Named with --stacks,
    the run refuses instead (cluster.ManagedCluster)."""
    if config.stacks is not None or config.database_url:
        return stacks
    marked = []
    for stack in stacks:
        port = stack.database_port
        if stack.available and stack.target_url is None and port is not None and taken(port):
            stack = replace(stack, unavailable_reason=f"unavailable here: its [database] port {port} is in use on "
                                                      "this machine (name it with --stacks once the port is free)")
        marked.append(stack)
    return marked


def stack_schemas(stacks: list[Stack]) -> dict[str, str]:
    """Stack id → the schema its `[database] schema` names for pgarena's objects (stacks that name one other
    than pgarena's own, available and started here)."""
    return {s.id: s.definition.database.schema_ for s in stacks
            if s.available and s.target_url is None and s.definition.database is not None
            and s.definition.database.schema_ not in (None, SCHEMA)}


def plan_cells(config: RunConfig, stack: Stack, engine: str) -> list[Cell]:
    """Every cell of one stack, in the order they run: pool size by pool size (a stack is started once per
    pool size), then round trip by round trip (set on the running stack's proxy)."""
    cells = []
    varied = len(config.pool_levels) > 1
    for pool in config.pool_levels:
        for rtt in config.db_rtt_ms or [None]:
            for cell in _cells_at(config, stack, engine, rtt):
                cell.pool_size, cell.pool_size_varied = pool, varied
                cells.append(cell)
    if not stack.definition.competes:
        for cell in cells:
            cell.flags.append(DEMONSTRATION)
    return cells


def _cells_at(config: RunConfig, stack: Stack, engine: str, rtt: float | None) -> list[Cell]:
    """The cells of one stack at one database round trip (None: direct)."""
    cells = []
    for workload in config.workloads:
        if workload not in stack.definition.workloads:
            continue
        for parameter in workload_parameters(config, workload):
            common = dict(stack=stack.id, workload=workload, parameter_name=wl.PARAMETER_NAMES[workload],
                          parameter=parameter, engine=engine, warmup_seconds=config.warmup_s,
                          duration_seconds=config.duration_s, db_rtt_ms=rtt)
            for vus in workload_vus(config, workload):
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


def cells_at_pool(cells: list[Cell], pool: int | None) -> list[Cell]:
    """The cells measured at one pool size of a run with several (`Cell.pool_dimension`); all with None."""
    return cells if pool is None else [c for c in cells if c.pool_dimension == pool]


def closed_peak(cells: list[Cell], stack: str, workload: str, parameter: int | None,
                db_rtt_ms: float | None = None, pool_size: int | None = None) -> float | None:
    """The highest median RPS of the measured closed-model cells of one stack × workload × parameter (at
    one round trip and, in a run with several pool sizes, one pool size)."""
    peaks = [c.summary.rps.median for c in cells
             if c.stack == stack and c.workload == workload and c.parameter == parameter and c.model == "closed"
             and c.status == "ok" and c.summary is not None and c.db_rtt_ms == db_rtt_ms
             and c.pool_dimension == pool_size]
    return max(peaks) if peaks else None


def resolve_rate(cell: Cell, cells: list[Cell]) -> None:
    """Turn a relative arrival rate ('90%') into requests/s from the closed-model peak (ValueError if none)."""
    if cell.model != "open" or cell.arrival_rate is not None:
        return
    value, _ = parse_rate(cell.arrival_rate_spec or "")
    peak = closed_peak(cells, cell.stack, cell.workload, cell.parameter, cell.db_rtt_ms, cell.pool_dimension)
    if peak is None:
        raise ValueError(f"no measured closed-model cell to take {cell.arrival_rate_spec} of")
    cell.arrival_rate = round(value * peak, 1)


def coexist_problem(stack: Stack, before: Sequence[Stack] = ()) -> str | None:
    """Why a stack cannot run beside the others (None if it can). A fixed port is no reason by itself: the
    ports pgarena gives the other stacks are the kernel's ephemeral ones, and a start checks that the fixed one
    is free (lifecycle.bring_up). Two stacks fixing the same port cannot both be up, so a stack whose port one
    of the stacks `before` it already fixes runs apart. A remote target always can."""
    if stack.target_url is not None:
        return None
    port = stack.definition.run.port
    holder = next((s.id for s in before if s.target_url is None and port and s.definition.run.port == port), None)
    return f"it listens on the fixed port {port}, as {holder} does" if holder else None


def pool_batch_done(ctx: RunContext, stacks: list[Stack], pool: int) -> bool:
    """A resumed run measured this pool size before its interruption: its phases finished and every cell of
    every stack still in the run stored (measured, or failed with its reason)."""
    record = ctx.results.schedule
    phases = [p for p in record.phases if p.name.endswith(pool_suffix(pool))] if record is not None else []
    if not phases or any(p.stop_reason is None for p in phases):
        return False
    stored = {c.key: c for c in ctx.results.cells}
    for stack in stacks:
        if ctx.results.stack(stack.id).status not in ("pending", "ok"):
            continue
        for cell in cells_at_pool(plan_cells(ctx.config, stack, ctx.engine.name), pool):  # type: ignore[union-attr]
            done = stored.get(cell.key)
            if done is None or (done.summary is None and done.status != "failed"):
                return False
    return True


def pool_suffix(pool: int | None) -> str:
    """What a phase's name ends with in a run with several pool sizes ('' with one)."""
    return "" if pool is None else f" · pool {pool}"
