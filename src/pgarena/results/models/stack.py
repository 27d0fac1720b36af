"""A stack's record: its declared facts, lines of code, cold start, its starts per pool size, what happened to it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pgarena.results.models.base import Record


class LinesOfCode(Record):
    """Code lines (no blanks, no comments) of a stack's own sources."""

    total: int
    by_language: dict[str, int]
    files: int
    counter: str = Field(description="the counting tool")


class ColdStart(Record):
    """A stack's first moments: from process start to its first correct answer, and its first requests."""

    healthy_seconds: float = Field(description="process start → first answer of the health path")
    first_correct_seconds: float | None = Field(
        description="process start → first correct workload answer (None: none was correct)")
    request: str = Field(description="the request timed (method and path)")
    first_requests_ms: list[float] = Field(description="latency of each of the first sequential requests")
    failed: int = Field(0, description="of those, answers that were not correct")


class PoolStart(Record):
    """One start of a stack at one pool size: with several --pool-size values pgarena stops and starts each
    stack once per pool size (PGARENA_POOL_SIZE is read at start)."""

    pool_size: int = Field(description="the PGARENA_POOL_SIZE it was started with")
    startup_seconds: float | None = Field(None, description="process start → first healthy answer (None: never)")
    verified: dict[str, bool] = Field(default_factory=dict, description=(
        "workload → its request answered right, value by value, right after this start (the first start runs "
        "the full verification instead: `RunResults.verifications`)"))
    peak_connections: int | None = Field(None, description=(
        "most database connections the stack held during this start (None: not observed)"))
    problem: str | None = Field(None, description="why its cells were not measured at this pool size")


class StackInfo(Record):
    """A stack's declared facts and what happened to it in this run."""

    id: str
    title: str
    language: str
    framework: str
    framework_version: str
    driver: str
    driver_version: str
    server: str
    pooler: str
    prepared_statements: bool | None
    competes: bool = Field(True, description="false: a demonstration (an anti-pattern on purpose), never ranked")
    workloads: list[str]
    notes: list[str]
    status: Literal["pending", "ok", "unavailable", "config_error", "build_failed", "start_failed", "crashed"]
    reason: str | None = Field(None, description="why the stack did not run (unavailable, failed build, ...)")
    log_tail: str | None = Field(None, description="last lines of the failing phase's log")
    build_seconds: float | None = None
    build_inputs_sha256: str | None = Field(None, description=(
        "SHA-256 of the stack's definition and input files when it was built and verified (stack/inputs.py); a "
        "resumed run re-checks the stack briefly instead of verifying it again when it is unchanged (None: not "
        "known, e.g. a folder outside git: verified again)"))
    startup_seconds: float | None = Field(None, description="process start → first healthy answer")
    lines_of_code: LinesOfCode | None = None
    warmup_seconds: float | None = Field(None, description="longest warm-up of its cells (seconds)")
    warmup_steady: bool | None = Field(
        None, description="every cell's warm-up reached steady throughput (False: at least one hit the cap)")
    cold_start: ColdStart | None = None
    idle_cpu_fraction: float | None = Field(None, description=(
        "interleaved: the stack's CPU while other stacks were under load, as a share of one CPU (None: not "
        "measured); above 0.05 it may have disturbed their windows"))
    warmup_idle_cpu_fraction: float | None = Field(None, description=(
        "interleaved: the stack's CPU while other stacks took their warm-up windows (pipeline/warming.py), as a "
        "share of one CPU (None: not measured); a JIT compiling in the background shows here"))
    peak_connections: int | None = Field(
        None, description="most database connections the stack held at once, from start to stop "
                          "(pg_stat_activity polled every 0.2 s; pgbouncer stacks: pgbouncer's server connections)")
    listen_addresses: list[str] = Field(
        default_factory=list, description="'address:port' the stack's processes listened on (TCP LISTEN)")
    flags: list[str] = Field(default_factory=list, description="e.g. 'pool-exceeded', 'listens-wide'")
    database_levelled: str | None = Field(
        None, description="what ran on the database before the stack (VACUUM (ANALYZE), CHECKPOINT) or why not")
    pool_starts: list[PoolStart] = Field(default_factory=list, description=(
        "--pool-size with several values: each start of the stack, one per pool size, in order"))
    target_url: str | None = Field(None, description=(
        "a remote target (--target): the base URL it was loaded at (credentials redacted); pgarena did not build, "
        "start or stop it, and its CPU, memory, cold start and lines of code are not measured (None)"))
