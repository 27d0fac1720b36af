"""The results document: one record type per stage, units in names, a schema version, atomic saves.

`results/<run-id>/results.json` is rewritten after every cell (write to a temporary file, then rename),
so a crash or Ctrl-C loses at most the cell in flight. Reports are rendered from this file only.
The JSON Schema in docs/results.schema.json is generated from these models (`pgarena schema`).

One module per stage's record (environment, stack, verification, window, cell, slo, baselines, resilience,
network, run; base.py holds the common base). This package re-exports every record type: it is the
document's public face, so callers import `from pgarena.results.models import Cell, RunResults` whatever
module a record lives in.

Schema history:
- 1: first version (perf-test, users, static, tx, graphql; closed model; oha and k6).
- 2: open model (Cell.model, arrival rates, dropped requests), confidence intervals and adaptive
  repetitions (CellSummary.rps_interval, stop_reason), CPU fractions and their accounting source, SLO
  searches, generator headroom, cold starts of stacks.
- 3: rps = 2xx answers per second, interleaved rounds, window accounting, the database ceiling.
- 4: the stored configuration's durations in `_seconds` (the unit suffix of the whole document).
"""

from __future__ import annotations

from pgarena.results.models.baselines import DbCeiling, Headroom, HeadroomPlace
from pgarena.results.models.cell import Cell, CellSummary, Interval, Spread, Warmup
from pgarena.results.models.environment import DatabaseInfo, Environment, TargetHost
from pgarena.results.models.network import NetworkInfo, RolePlace, TopologyInfo
from pgarena.results.models.resilience import FaultResult
from pgarena.results.models.run import (
    RESULTS_FILE,
    SCHEMA_VERSION,
    IngestRecord,
    PhaseRecord,
    RunResults,
    ScheduleRecord,
)
from pgarena.results.models.slo import SloPoint, SloSearchResult
from pgarena.results.models.stack import ColdStart, LinesOfCode, PoolStart, StackInfo
from pgarena.results.models.verification import (
    BadInputCase,
    Check,
    ColumnVerdict,
    DbAccounting,
    TxInvariants,
    WorkloadVerification,
)
from pgarena.results.models.window import (
    DistributedLoad,
    Errors,
    GeneratorFigures,
    Latency,
    Repetition,
    WindowAccounting,
)

__all__ = [
    "BadInputCase", "Cell", "CellSummary", "Check", "ColdStart", "ColumnVerdict", "DatabaseInfo", "DbAccounting",
    "DbCeiling", "DistributedLoad", "Environment", "Errors", "FaultResult", "GeneratorFigures", "Headroom",
    "HeadroomPlace", "IngestRecord", "Interval", "Latency", "LinesOfCode", "NetworkInfo", "PhaseRecord",
    "PoolStart", "RESULTS_FILE", "Repetition", "RolePlace", "RunResults", "SCHEMA_VERSION", "ScheduleRecord",
    "SloPoint", "SloSearchResult", "Spread", "StackInfo", "TargetHost", "TopologyInfo", "TxInvariants", "Warmup",
    "WindowAccounting", "WorkloadVerification",
]
