"""The whole run's document (RunResults) with its schema version, and how its windows were scheduled or
ingested."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field

from pgarena.results.models.base import Record
from pgarena.results.models.baselines import DbCeiling, Headroom
from pgarena.results.models.cell import Cell
from pgarena.results.models.environment import DatabaseInfo, Environment
from pgarena.results.models.network import NetworkInfo, TopologyInfo
from pgarena.results.models.resilience import FaultResult
from pgarena.results.models.slo import SloSearchResult
from pgarena.results.models.stack import StackInfo
from pgarena.results.models.verification import WorkloadVerification

SCHEMA_VERSION = 4
"""History: 1 — the foundation (refused: no migration); 2 — adaptive repetitions, open model, SLO searches;
3 — `rps` is 2xx answers per second (was every completed request), interleaved rounds, window accounting,
request variants, observed connections, the database ceiling; 4 — the stored configuration's durations end in
`_seconds` like every other figure (was `_s`). Older documents are migrated on load by the
`update_to_N` functions of results/migrations.py (pyperf and asv do the same), never rewritten on disk."""
RESULTS_FILE = "results.json"


class PhaseRecord(Record):
    """One phase of an interleaved schedule: its cells measured in rounds until settled (scheduler.py)."""

    name: str = Field(description="'headline' (the first table, ranked first), 'closed' or 'open'; with several "
                                  "pool sizes, each pool size's phases are named '<phase> · pool <n>'")
    cells: int = Field(description="cells (workload × parameter × level) in the phase")
    windows: int = Field(0, description="measured windows so far")
    rounds: int = 0
    stop_reason: str | None = Field(None, description=(
        "settled, out-of-reach, max-rounds or budget; None while running"))
    unsettled: list[str] = Field(default_factory=list, description="pairs still unordered when it stopped")
    window_seconds: float | None = Field(None, description="measured window of the phase's cells (None: not recorded)")
    rewarm_seconds: float | None = Field(None, description="uncounted load before each of its windows (None: the run's)")
    rewarm_lead_in: bool | None = Field(None, description=(
        "True: the re-warm was the lead-in of each window's own generator process (oha, closed model, one generator "
        "here), the window cut from it by each answer's end; False: a generator run of its own; None: not recorded"))
    slot_seconds: float | None = Field(None, description=(
        "wall time per window, measured: its re-warm, the window, the answer and accounting checks and the "
        "bookkeeping after it, averaged over the windows the phase measured (after a resume: those since; None: not "
        "recorded)"))
    idle_rewarm_windows: int = Field(0, description=(
        "its windows whose re-warm was longer, their stack having had no load for a while (contract/idle.py)"))
    idle_rewarm_seconds: float = Field(0.0, description="the seconds of re-warm those windows had beyond the phase's")
    not_measured: list[str] = Field(default_factory=list, description=(
        "its tables left unmeasured: when the phase began, their least rounds and warm-ups no longer fit its share "
        "of the time budget (forecast from the slot an earlier phase measured)"))
    finished_at: dt.datetime | None = None


class ScheduleRecord(Record):
    """How the run's windows were scheduled."""

    kind: Literal["interleaved", "sequential"]
    seed: int | None = Field(None, description="the seed of the rounds' random orders (interleaved)")
    rewarm_seconds: float | None = Field(None, description="uncounted load before each interleaved window")
    idle_rewarm_seconds: float | None = Field(None, description=(
        "the most re-warm added before a window of a stack that had no load for a while (contract/idle.py: none up to "
        "15 s without load, in full from 35 s; 0: none added; None: not recorded, results from before it)"))
    idle_rewarm_exempt: list[str] = Field(default_factory=list, description=(
        "stacks that get no idle re-warm: their stack.toml declares `[run] idle_rewarm = false`, their runtime "
        "measured not to read slower after an idle gap"))
    sequential_fallback: dict[str, str] = Field(
        default_factory=dict, description="stacks that could not run beside the others, and why")
    phases: list[PhaseRecord] = Field(default_factory=list)


class IngestRecord(Record):
    """Where an ingested run's load came from (`pgarena ingest`): k6 outputs recorded elsewhere."""

    source: str = Field(description="e.g. 'k6-operator TestRun: one k6 summary and raw-sample file per runner pod'")
    outputs: list[str] = Field(description="the k6 summaries read, as given")
    segments: list[str] = Field(description="the execution segment of each output, in the same order")
    not_measured: list[str] = Field(description="what pgarena could not see from outputs alone (shown as not measured)")


class RunResults(Record):
    """The whole run: configuration, environment, stacks, verification and cells."""

    schema_version: int = SCHEMA_VERSION
    run_id: str
    command: str = Field(description="the command line that started the run")
    kind: Literal["run", "verify", "ingest"] = Field(description=(
        "run: pgarena measured; verify: no load; ingest: load outputs recorded elsewhere (k6-operator) turned "
        "into a run (`pgarena ingest`): nothing of the stack or the database was measured"))
    status: Literal["running", "complete", "interrupted", "failed"]
    started_at: dt.datetime
    finished_at: dt.datetime | None = None
    resumed: list[dt.datetime] = Field(default_factory=list, description="when `run --resume` continued the run")
    error: str | None = None
    config: dict = Field(description="the full RunConfig, database password redacted")
    environment: Environment
    database: DatabaseInfo | None = None
    stacks: list[StackInfo] = Field(default_factory=list)
    stack_order: list[str] = Field(default_factory=list, description="the order the stacks ran in (config.seed)")
    verifications: list[WorkloadVerification] = Field(default_factory=list)
    cells: list[Cell] = Field(default_factory=list)
    slo_searches: list[SloSearchResult] = Field(default_factory=list)
    generator_headroom: Headroom | None = None
    network: NetworkInfo | None = Field(None, description="--db-rtt: the proxy between stacks and PostgreSQL")
    topology: TopologyInfo | None = Field(None, description=(
        "--netns: the namespaces the roles ran in; None: every role on this machine's loopback"))
    resilience: list[FaultResult] = Field(default_factory=list, description="the resilience profile's faults")
    schedule: ScheduleRecord | None = None
    ceilings: list[DbCeiling] = Field(default_factory=list, description="the database's own ceiling per workload")
    ceiling_unavailable: str | None = Field(None, description="why the ceiling was not measured")
    ingested: IngestRecord | None = Field(None, description="kind 'ingest': the outputs the run was made from")

    def ceiling_conditions(self, cell: Cell) -> tuple[str, int | None, float | None, int]:
        """(workload, parameter, round trip ms, connections): the conditions the database ceiling beside `cell`
        is measured under — the cell's round trip and min(VUs, pool size), the most connections its stack
        could use at once (VUs: closed-model users, or the open model's most requests in flight)."""
        pool = cell.pool_size or self.config.get("pool_size")
        return cell.workload, cell.parameter, cell.db_rtt_ms, min(cell.vus, pool) if pool else cell.vus

    def ceiling(self, workload: str, parameter: int | None, db_rtt_ms: float | None = None,
                connections: int | None = None) -> DbCeiling | None:
        """The ceiling measured for a workload × parameter at a round trip (None: direct) over `connections`
        (None: any), if any."""
        return next((c for c in self.ceilings if (c.workload, c.parameter, c.db_rtt_ms) == (workload, parameter, db_rtt_ms)
                     and connections in (None, c.connections)), None)

    def ceiling_for(self, cell: Cell) -> DbCeiling | None:
        """The ceiling measured under `cell`'s conditions (`ceiling_conditions`); None when none was: a ceiling
        under other conditions (direct for a cell behind a round trip, 10 connections for a 1-VU cell) is not
        that cell's ceiling."""
        return self.ceiling(*self.ceiling_conditions(cell))

    def stack(self, stack_id: str) -> StackInfo:
        """The stack's record (StopIteration when the run has none of that id)."""
        return next(s for s in self.stacks if s.id == stack_id)

    def verification(self, stack_id: str, workload: str) -> WorkloadVerification | None:
        """The stack × workload verification, if the run has one."""
        return next((v for v in self.verifications if v.stack == stack_id and v.workload == workload), None)
