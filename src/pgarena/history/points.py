"""What the history keeps of one run: a point per stack × cell, keyed by stack, version, cell and machine.

A point is the cell's median 2xx/s with its interval (the cell's own 95 % t-interval of its windows), and
the same run's database ceiling for the workload and generator headroom, so a step that the environment
also took can be told apart from a step of the stack (history/changes.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from pgarena.analysis.ranking import in_field
from pgarena.results.models import Cell, RunResults


@dataclass(frozen=True)
class Point:
    """One stack's cell in one run."""

    run_id: str
    recorded_at: str
    """When the run started, ISO 8601 UTC (the series' order)."""
    run_stack: str
    """The stack's id in the run (an A/B's side is `<stack>-base` / `<stack>-head`)."""
    stack: str
    version: str
    """The stack's version: its A/B label, else '<framework version> / <driver version>'."""
    cell: str
    """workload, parameter, load level and generator, e.g. 'users limit=20 @ 50 VUs (oha)'."""
    machine: str
    """A fingerprint of the machine: hash of host name, CPU model, CPU count and memory."""
    rps_median: float
    """Median 2xx answers per second of the cell's windows."""
    rps_low: float | None
    rps_high: float | None
    db_ceiling_tps: float | None = None
    """The database's own ceiling for the workload in the same run (transactions/s), if measured."""
    headroom_rps: float | None = None
    """The generator's ceiling against a trivial endpoint in the same run (requests/s), if measured."""


def machine_fingerprint(results: RunResults) -> str:
    """12 hex digits identifying the machine a run was made on (same host, CPU and memory: same digits)."""
    env = results.environment
    text = f"{env.hostname}|{env.cpu_model}|{env.cpu_count}|{env.memory_bytes}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def cell_label(cell: Cell) -> str:
    """The cell without its stack: what a series is kept for."""
    parameter = f" {cell.parameter_name}={cell.parameter}" if cell.parameter_name else ""
    extra = "".join(f" {part}" for part in cell.key[5:])
    return f"{cell.workload}{parameter} @ {cell.level_label}{extra} ({cell.engine})"


def run_points(results: RunResults, names: Mapping[str, tuple[str, str]] | None = None) -> list[Point]:
    """Every valid measured cell of a run as a point. `names`: run's stack id → (stack, version) for stacks that
    are versions of another (an A/B's `<stack>-base`); other stacks are recorded under their own id."""
    machine = machine_fingerprint(results)
    infos = {s.id: s for s in results.stacks}
    headroom = results.generator_headroom.rps if results.generator_headroom else None
    points = []
    for cell in results.cells:
        if not in_field(cell) or cell.summary is None:
            continue
        info = infos.get(cell.stack)
        stack, version = (names or {}).get(cell.stack, (
            cell.stack, f"{info.framework_version} / {info.driver_version}" if info else "unknown"))
        interval = cell.summary.rps_interval
        ceiling = results.ceiling(cell.workload, cell.parameter)
        points.append(Point(
            run_id=results.run_id, recorded_at=results.started_at.isoformat(), run_stack=cell.stack, stack=stack, version=version,
            cell=cell_label(cell), machine=machine, rps_median=cell.summary.rps.median,
            rps_low=interval.low if interval else None, rps_high=interval.high if interval else None,
            db_ceiling_tps=ceiling.tps if ceiling else None, headroom_rps=headroom))
    return points
