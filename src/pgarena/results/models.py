"""The results document: one record type per stage, units in names, a schema version, atomic saves.

`results/<run-id>/results.json` is rewritten after every cell (write to a temporary file, then rename),
so a crash or Ctrl-C loses at most the cell in flight. Reports are rendered from this file only.
The JSON Schema in docs/results.schema.json is generated from these models (`pgarena schema`).

Schema history:
- 1: first version (perf-test, users, static, tx, graphql; closed model; oha and k6).
- 2: open model (Cell.model, arrival rates, dropped requests), confidence intervals and adaptive
  repetitions (CellSummary.rps_interval, stop_reason), CPU fractions and their accounting source, SLO
  searches, generator headroom, cold starts of stacks.
- 3: rps = 2xx answers per second, interleaved rounds, window accounting, the database ceiling.
- 4: the stored configuration's durations in `_seconds` (the unit suffix of the whole document).
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pgarena.contract.values import Verdict
from pgarena.results.wire import WireProfile

SCHEMA_VERSION = 4
"""History: 1 — the foundation (refused: no migration); 2 — adaptive repetitions, open model, SLO searches;
3 — `rps` is 2xx answers per second (was every completed request), interleaved rounds, window accounting,
request variants, observed connections, the database ceiling; 4 — the stored configuration's durations end in
`_seconds` like every other figure (was `_s`). Older documents are migrated on load by the
`update_to_N` functions below (pyperf and asv do the same), never rewritten on disk."""
RESULTS_FILE = "results.json"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TargetHost(_Model):
    """The host of a remote target (--target) as pgarena sees it from outside: its URL only. What pgarena
    cannot read there is None ("not measured"), never a guess or this machine's figure."""

    stack: str = Field(description="the target's stack id")
    url: str = Field(description="the base URL it was verified and loaded at (credentials redacted)")
    cpu_model: str | None = Field(None, description="not measured: pgarena cannot read a remote host's CPU")
    cpu_count: int | None = Field(None, description="not measured")
    memory_bytes: int | None = Field(None, description="not measured")
    kernel: str | None = Field(None, description="not measured")


class Environment(_Model):
    """Where and with what the run happened."""

    hostname: str
    cpu_model: str
    cpu_count: int
    memory_bytes: int
    kernel: str
    os: str
    python: str
    pgarena_version: str
    pgarena_git_revision: str = Field(description="git commit of pgarena, '+dirty' if modified; 'unknown' outside git")
    postgres_version: str | None = None
    engine_versions: dict[str, str] = Field(default_factory=dict, description="load generator → version")
    toolchains: dict[str, str] = Field(default_factory=dict, description="command → first line it printed")
    generator_cpus: list[int]
    server_cpus: list[int]
    cpu_sets_shared: bool = Field(description="generator and server share CPUs (a one-CPU machine)")
    cpu_accounting: str | None = Field(None, description="how stack and PostgreSQL CPU time was measured")
    headroom_unavailable: str | None = Field(None, description="why the generator headroom was not measured")
    pgarena_cpus: list[int] | None = Field(
        None, description="CPUs pgarena's own process and its sampler threads were pinned to (the generator CPUs)")
    targets: list[TargetHost] = Field(default_factory=list, description=(
        "remote targets: where each was loaded; its host is not this machine and its CPU, memory and kernel are "
        "not measured (the CPU sets above are then the generator's and pgarena's only)"))


class DatabaseInfo(_Model):
    """The database the run used."""

    mode: Literal["managed", "external"]
    version: str
    settings_profile: str | None = Field(description="pgarena settings profile applied (managed only)")
    settings: dict[str, str] = Field(description="every setting not at its built-in default")
    url: str = Field(description="application URL, password redacted")
    cpu_affinity: list[int] | None = Field(
        None, description="CPUs the postmaster may run on, read from the running server (managed only)")
    cpu_affinity_note: str | None = Field(
        None, description="why cpu_affinity is absent, e.g. 'not pinned (external)': pgarena does not pin a "
                          "server it did not start")


class LinesOfCode(_Model):
    """Code lines (no blanks, no comments) of a stack's own sources."""

    total: int
    by_language: dict[str, int]
    files: int
    counter: str = Field(description="the counting tool")


class ColdStart(_Model):
    """A stack's first moments: from process start to its first correct answer, and its first requests."""

    healthy_seconds: float = Field(description="process start → first answer of the health path")
    first_correct_seconds: float | None = Field(
        description="process start → first correct workload answer (None: none was correct)")
    request: str = Field(description="the request timed (method and path)")
    first_requests_ms: list[float] = Field(description="latency of each of the first sequential requests")
    failed: int = Field(0, description="of those, answers that were not correct")


class PoolStart(_Model):
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


class StackInfo(_Model):
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


class Check(_Model):
    """One yes/no verification check with what was seen."""

    name: str
    ok: bool
    detail: str | None = None


class ColumnVerdict(_Model):
    """The worst verdict over every compared value of one column, with the first reason."""

    column: str
    pg_type: str
    verdict: Verdict
    reason: str | None = None


class BadInputCase(_Model):
    """One malformed request and how the stack answered it."""

    description: str
    path: str
    status: int | None
    ok: bool = Field(description="400 with a JSON body")
    detail: str | None = None


class TxInvariants(_Model):
    """TPC-B consistency over one tx cell (or the verification requests): see txcheck.py."""

    holds: bool
    answered_200: int = Field(description="200 answers the generator counted (warm-up included)")
    history_rows_added: int
    accounts_delta: int
    tellers_delta: int
    branches_delta: int
    history_delta: int
    unknown_outcome: int = Field(0, description="requests without an answer (timeouts, resets): may have committed")
    unknown_committed: int = Field(0, description="how many of those did commit (history rows beyond the 200s)")
    problem: str | None = None


class DbAccounting(_Model):
    """pg_stat_statements over a burst of identical requests (accounting.py)."""

    requests: int
    workload_statements_per_request: float = Field(description="statements naming the workload's objects")
    rows_per_request: float = Field(description="rows those statements returned or changed, per request")
    other_statements_per_request: float = Field(description="BEGIN/COMMIT, SET, resets, pings, ...")
    expected_statements_per_request: int
    allowed_other_statements_per_request: int
    top_other_statements: dict[str, int] = Field(default_factory=dict, description="query text → calls")
    verdict: Verdict
    reason: str | None = None
    statements_by_limit: dict[int, float] | None = Field(None, description=(
        "graphql-nested / users-posts: workload statements per request at each users limit of the N+1 probe"))
    posts_statements_by_limit: dict[int, float] | None = Field(None, description=(
        "graphql-nested / users-posts: statements reading the posts (a join or a view over both included) per "
        "request at each users limit of the N+1 probe; fewer than 1 is a posts cache"))
    n_plus_one: bool | None = Field(None, description=(
        "graphql-nested / users-posts: statements per request grow with the limit (one query per user); shown, "
        "never invalid"))


class WorkloadVerification(_Model):
    """Verification of one stack × workload, before any load."""

    stack: str
    workload: str
    ok: bool = Field(description="status, content type and shape right; the workload is loaded")
    checks: list[Check]
    columns: list[ColumnVerdict] = Field(default_factory=list)
    bad_input: list[BadInputCase] = Field(default_factory=list)
    accounting: DbAccounting | None = None
    accounting_unavailable: str | None = Field(None, description="why there is no accounting")
    tx_invariants: TxInvariants | None = Field(None, description="over the verification's tx requests")
    answer_mapping: str | None = Field(None, description=(
        "the shape the stack's stack.toml [answer] declares and pgarena undid before judging the values, e.g. "
        "'envelope \"data\", camelCase keys' (the cells are flagged answer-mapped); None: answers judged as sent"))
    wire: WireProfile | None = Field(None, description="what the driver sent to PostgreSQL (results/wire.py)")
    wire_unavailable: str | None = Field(None, description="why there is no wire profile")

    @property
    def wrong_columns(self) -> list[str]:
        return [c.column for c in self.columns if c.verdict is Verdict.WRONG]

    @property
    def content_type_wrong(self) -> bool:
        """A failed content-type check (the answer's JSON may still be right: see verify/verification.py)."""
        return any(not c.ok and c.name.endswith(": content type JSON") for c in self.checks)


class Latency(_Model):
    """Request latency of one repetition, in milliseconds, over every request of the window: a request
    that got no answer (timeout, connection error) counts at the HTTP timeout, and so does an open-model
    request dropped by the window's end (engines/latency.py)."""

    avg_ms: float
    p50_ms: float
    p90_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    censored: list[str] = Field(default_factory=list, description=(
        "fields that are lower bounds ('p99_ms', 'max_ms', ...): they reach requests without an answer or "
        "dropped ones (open model), counted at the timeout; reports print them with '≥'"))


class Errors(_Model):
    """Failed requests of one repetition, by kind."""

    non_2xx: int = 0
    connect: int = 0
    timeout: int = 0
    other: int = 0

    @property
    def total(self) -> int:
        return self.non_2xx + self.connect + self.timeout + self.other

    @property
    def unanswered(self) -> int:
        """Requests that got no HTTP answer at all (they count at the timeout in the latency)."""
        return self.connect + self.timeout + self.other


class WindowAccounting(_Model):
    """pg_stat_statements around one measured window, against that window's answers (windowcheck.py).

    Workload statement calls must lie within [expected_calls_low, expected_calls_high]: at least the
    statements of every 2xx answer (generator and sampler), at most those plus the requests whose outcome
    is unknown (errors of the window) and the requests that may still run in the server across the edges.
    """

    answered_2xx: int = Field(description="2xx answers in the window: the generator's plus pgarena's sampler's")
    unknown_outcome: int = Field(description="requests that failed at the client (timeouts, resets, non-2xx)")
    in_flight_allowance: int = Field(description="requests that may run in the server across the window's edges")
    statements_per_request: int = Field(description="workload statements one request needs")
    workload_statement_calls: int = Field(description="calls of statements naming the workload's objects")
    expected_calls_low: int
    expected_calls_high: int
    workload_rows: int = Field(0, description="rows those statements returned or changed")
    expected_rows_low: int | None = Field(None, description="rows at least (None: not checked)")
    posts_statement_calls: int | None = Field(None, description=(
        "graphql-nested / users-posts: calls of statements reading the posts (a join or a view over both included)"))
    expected_posts_calls_low: int | None = Field(None, description=(
        "graphql-nested / users-posts: posts statement calls at least (one per 2xx answer, less the tolerance)"))
    verdict: Verdict = Field(description="exact: within the bounds; wrong: a cache (too few) or an N+1 (too many)")
    reason: str | None = None


class GeneratorFigures(_Model):
    """One generator place's share of a distributed window (load/distributed.py): its own counts, its own
    latency percentiles (from its own raw samples) and its own CPU. The window's merged figures are in the
    repetition itself."""

    name: str = Field(description="the place's name, e.g. 'gen1'")
    host: str = Field("local", description="the machine it ran on ('local': this one, or a namespace on it)")
    segment: str = Field(description="k6 --execution-segment of this place, e.g. '0:1/2'")
    requests: int = Field(description="requests it completed (any status, failed ones included)")
    failures: int = Field(description="of those, non-2xx answers and requests without an answer")
    answered_2xx: int
    duration_seconds: float = Field(description="its k6 run's duration (state.testRunDurationMs)")
    rps: float = Field(description="its 2xx answers per second")
    latency_p50_ms: float | None = Field(description="p50 of its own pgarena_latency samples (None: no request)")
    latency_p99_ms: float | None = Field(description="p99 of its own pgarena_latency samples (None: no request)")
    dropped: int | None = Field(None, description="open model: iterations it could not start (dropped_iterations)")
    cpu_seconds: float | None = Field(description="its CPU over the measured window (None: not measured here, "
                                                  "e.g. a process on another host)")
    cpus: list[int] | None = Field(None, description="the CPUs it was pinned to (None: not pinned by pgarena)")
    clock_offset_seconds: float | None = Field(
        description="its clock minus pgarena's clock (None: not measured); 0 on this host by construction")
    clock_offset_method: str | None = Field(None, description="how the offset was obtained, e.g. 'same host'")
    raw_output: str | None = Field(None, description="its k6 summary, relative to the run directory")
    raw_samples: str | None = Field(None, description="its raw samples (k6 CSV), relative to the run directory")


class DistributedLoad(_Model):
    """How a window's load was split over several k6 processes and merged (load/distributed.py, merge.py)."""

    places: list[GeneratorFigures]
    start: str = Field(description="how the places were started together")
    start_skew_seconds: float | None = Field(
        None, description="from the first place's start command to the last one's answer (an upper bound of "
                          "how far apart they started; None: not measured)")
    merge: str = Field(description="how the places' figures were merged into the repetition's")


class Repetition(_Model):
    """One measured window of one cell."""

    index: int
    round: int | None = Field(None, description="interleaved schedule: the round this window belongs to")
    requests: int = Field(description="requests completed in the window (any status, failed ones included)")
    duration_seconds: float
    rps: float = Field(description="answered work: 2xx answers per second (failures are not throughput)")
    requests_per_second_all: float | None = Field(
        None, description="every completed request per second, failed ones included (what the generator did)")
    latency: Latency
    errors: Errors
    status_codes: dict[str, int]
    stack_cpu_seconds: float | None
    db_cpu_seconds: float | None
    stack_rss_peak_bytes: int | None = Field(description="peak of the tree's summed RSS (shared pages counted "
                                                      "once per process; kept for older results)")
    stack_pss_peak_bytes: int | None = Field(
        None, description="peak of the tree's summed PSS (Linux: shared pages split among their sharers)")
    proxy_cpu_seconds: float | None = Field(None, description=(
        "--db-rtt: CPU time of the Toxiproxy process over the window (counted apart from the stack's; it runs "
        "on the generator CPUs, so the generator-bound test counts it)"))
    pgarena_cpu_seconds: float | None = Field(None, description=(
        "CPU time of pgarena's own process over the window (its answer sampler, resource samplers and pollers, "
        "all pinned to the generator CPUs; its children not included): counted by the generator-bound test"))
    peak_connections: int | None = Field(
        None, description="most database connections the stack held during this repetition")
    generator_cpu_seconds: float | None = Field(description=(
        "the load generator's CPU over the window (several generators: their sum; None: not measured, e.g. "
        "load ingested from Kubernetes)"))
    raw_output: str = Field(description="generator output, relative to the run directory")
    offered_requests: int | None = Field(None, description="open model: arrival rate × window")
    dropped: int = Field(0, description="open model: offered requests that were never completed in the window")
    checks_total: int = Field(0, description="answers sampled during the window and compared whole with the "
                                             "expected answer (checks.py)")
    checks_failed: int = 0
    check_failure: str | None = Field(None, description="the first failed sampled answer: request and why")
    accounting: WindowAccounting | None = Field(None, description="database accounting over this window")
    generators: DistributedLoad | None = Field(
        None, description="several generators (k6 execution segments): each one's figures; None: one generator")
    reference_unit_ns: float | None = Field(None, description=(
        "mean CPU nanoseconds of the reference probe's unit of work on the server CPUs during the window "
        "(system/speedprobe.py); higher = the machine was slower; None: not measured"))
    reference_samples: int = Field(0, description="units of work the reference probe timed during the window")


class Spread(_Model):
    """Median and range of one figure over the repetitions."""

    median: float
    min: float
    max: float
    rel_spread: float = Field(description="(max - min) / median; 0 when the median is 0")

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        """Median, min, max and relative spread of one figure over the repetitions.

        The median is the robust centre of a few repetitions (hyperfine and pyperf report it for the
        same reason: one noisy repetition does not move it); the range is reported beside it."""
        if not values:
            raise ValueError("spread of no values")
        median = statistics.median(values)
        low, high = min(values), max(values)
        return cls(median=median, min=low, max=high, rel_spread=(high - low) / median if median else 0.0)

    def overlaps(self, other: Spread) -> bool:
        """True when two ranges overlap: their order is not established by these repetitions."""
        return self.min <= other.max and other.min <= self.max


class Interval(_Model):
    """A confidence interval for the mean of one figure over the repetitions."""

    mean: float
    low: float
    high: float
    rel_half_width: float = Field(description="(high - low) / 2 / mean")
    level: float = Field(description="confidence level, e.g. 0.95")
    method: str = Field(description="how it was computed")


class CellSummary(_Model):
    """The cell's figures over its repetitions."""

    rps: Spread = Field(description="2xx answers per second over the repetitions (answered work)")
    rps_interval: Interval | None = Field(None, description="None with fewer than 2 repetitions")
    requests_per_second_all: Spread | None = Field(
        None, description="every completed request per second, failed ones included (beside `rps`)")
    stop_reason: Literal["interval", "budget", "max-repetitions", "fixed", "settled", "out-of-reach"] = Field(
        "fixed", description="why repetitions stopped: interval within target, time budget, cap, fixed count, or "
                             "(interleaved) every paired comparison of the cell ordered or equivalent")
    noisy: bool = Field(False, description="the RPS interval ended wider than the target: do not rank")
    latency_avg_ms: Spread
    latency_p99_ms: Spread
    latency_censored: list[str] = Field(default_factory=list, description=(
        "summary figures that are lower bounds ('latency_p99_ms', 'latency_avg_ms'): a repetition's value "
        "that reached requests without an answer (counted at the timeout) decides the median"))
    requests_total: int
    failures_total: int
    failure_rate: float
    stack_cpu_us_per_request: float | None = None
    db_cpu_us_per_request: float | None = None
    stack_rss_peak_bytes: int | None = None
    stack_pss_peak_bytes: int | None = Field(None, description="highest peak PSS of the stack over the repetitions")
    generator_cpu_fraction: float | None = Field(None, description="generator CPU time / (window × its CPUs)")
    generator_set_cpu_fraction: float | None = Field(None, description=(
        "everything on the generator CPU set — the generator, pgarena's own process (samplers, pollers) and "
        "Toxiproxy — CPU time / (window × those CPUs): what the generator-bound test judges (None: older results)"))
    generator_cpu_us_per_request: float | None = Field(None, description="the load generator's own CPU cost")
    stack_cpu_fraction: float | None = Field(None, description="stack CPU time / (window × server CPUs)")
    db_cpu_fraction: float | None = Field(None, description="PostgreSQL CPU time / (window × server CPUs)")
    cpu_accounting: str = Field("psutil", description="where CPU times came from: a cgroup backend or psutil")
    cpu_us_per_request_interval: Interval | None = Field(
        None, description="interval on each repetition's (stack + PostgreSQL) CPU µs per request")
    timeouts_total: int = 0
    offered_total: int | None = Field(None, description="open model: requests the arrival rate asked for")
    dropped_total: int = Field(0, description="open model: offered requests not completed")


class Warmup(_Model):
    """The warm-up before a cell: one-second generator windows until throughput was steady (warmup.py)."""

    seconds: float = Field(description="warm-up time, the sum of the windows' durations")
    steady: bool = Field(description="the last windows' throughput agreed within the tolerance (False: hit the cap)")
    minimum_seconds: float = Field(description="the least warm-up asked (profile warm-up, stack's min_warmup_s)")
    cap_seconds: float
    windows_rps: list[float] = Field(description="completed requests/s of each window, in order")
    peak_connections: int | None = Field(None, description="most database connections the stack held during it")


class FaultResult(_Model):
    """One fault injected into one stack's steady load (issue 14, pipeline/resilience.py; analysis/recovery.py
    defines every figure)."""

    stack: str
    workload: str
    parameter: int | None
    fault: Literal["pg-restart", "terminate", "stall", "reset"]
    description: str = Field(description="what was done, e.g. 'pg_ctl restart -m fast'")
    engine: str
    rate_rps: float | None = Field(None, description="the open-model arrival rate of the window (None: not run)")
    peak_rps: float | None = Field(None, description="the stack's closed-model peak the rate is a share of")
    window_seconds: float | None = None
    fault_start_s: float | None = Field(None, description="seconds from the window's start")
    fault_end_s: float | None = None
    status: Literal["recovered", "never-recovered", "no-baseline", "unsteady-baseline", "not-run"]
    baseline_rps: float | None = None
    failed_requests: int | None = Field(None, description="non-2xx, unanswered and dropped (due but never sent) "
                                                          "requests from the fault's start until recovery (None: not "
                                                          "measured)")
    unanswered: int | None = None
    errors_by_kind: dict[str, int] = Field(default_factory=dict)
    first_ok_after_s: float | None = Field(None, description="fault end → first 2xx answer (resolution: one bin)")
    recovered_after_s: float | None = Field(None, description="fault end → 2xx/s back within 10 % for 1 s")
    recovered_without_restart: bool | None = Field(None, description=(
        "after the window the stack, not restarted, answered its health path and a verified request correctly"))
    bin_seconds: float = 0.1
    timeline_ok: list[int] = Field(default_factory=list, description="2xx answers per bin")
    timeline_failed: list[int] = Field(default_factory=list, description="failed requests per bin")
    tx_invariants: TxInvariants | None = Field(None, description="tx: TPC-B consistency across the window")
    reason: str | None = Field(None, description="why it was not run or not measured")


class NetworkInfo(_Model):
    """How the stacks reached PostgreSQL when a round trip was added (--db-rtt)."""

    mode: Literal["toxiproxy"]
    description: str
    proxy: str = Field(description="the proxy and its version")
    proxy_cpus: list[int] = Field(description="CPUs the proxy was pinned to (its CPU is counted apart)")
    db_rtt_ms: list[float] = Field(description="the configured round trips, the run's load dimension")
    overhead: list[dict[str, float | int]] = Field(default_factory=list, description=(
        "per configured round trip: what the proxy added to request/response round trips against the same "
        "round trips straight to an echo server (median and p99 µs) and its CPU µs per round trip"))
    stack_rtt_ms: float = Field(0, description=(
        "--stack-rtt: round trip added between the generator and each stack (a proxy in front of the stack)"))


class RolePlace(_Model):
    """Where one role of the run ran."""

    host: str = Field(description="'local' (this machine), the network namespace's name, or 'ssh <destination>'")
    address: str = Field(description="the address the other roles reach it at")
    interface: str | None = Field(None, description="its interface in its namespace")
    kind: Literal["local", "netns", "ssh"] = "netns"
    name: str | None = Field(None, description="the host's name in the topology file (None: --netns or pgarena)")
    environment: dict[str, Any] | None = Field(None, description=(
        "ssh hosts: the host's CPU, memory, kernel, OS and toolchain versions as read over SSH (a value it could "
        "not read is null: not measured); None for this machine and its namespaces (see `environment`)"))


class TopologyInfo(_Model):
    """Where the generators, the stacks and PostgreSQL ran and how they were linked (--netns, --topology)."""

    mode: Literal["netns", "topology"] = Field(description="netns: every role in a namespace pgarena created")
    description: str
    subnet: str | None = Field(None, description="the namespaces' subnet (None: no namespace)")
    roles: dict[str, RolePlace] = Field(description=(
        "role (generator or 'generator N', stack, database, pgarena) → where it ran"))
    links: list[str] = Field(default_factory=list, description="the links between the roles, one line each")


class Cell(_Model):
    """stack × workload × parameter × load level, measured `repetitions` times."""

    stack: str
    workload: str
    parameter_name: str | None
    parameter: int | None
    vus: int = Field(description="closed model: concurrent connections/VUs; open model: most requests in flight")
    model: Literal["closed", "open"] = "closed"
    arrival_rate: float | None = Field(None, description="open model: requests per second offered")
    arrival_rate_spec: str | None = Field(None, description="open model: the level as configured ('90%', '2000')")
    db_rtt_ms: float | None = Field(None, description=(
        "round trip added between the stack and PostgreSQL (--db-rtt, through Toxiproxy); None: direct"))
    pool_size: int | None = Field(None, description=(
        "the pool size the stack was started with for this cell (PGARENA_POOL_SIZE); None: results from before "
        "it was recorded per cell (the run's `config.pool_size`). What the stack really held is `peak_connections`"))
    pool_size_varied: bool = Field(False, description=(
        "the run measured several pool sizes (--pool-size 10,50), so the pool size is part of the cell's key; "
        "False: the run's one pool size, kept out of the key (cells match those of earlier runs)"))
    engine: str
    warmup_seconds: float = Field(description="the least warm-up asked for (see `warmup` for what ran)")
    duration_seconds: float
    warmup: Warmup | None = None
    peak_connections: int | None = Field(
        None, description="most database connections the stack held during the cell, warm-up included")
    repetitions: list[Repetition] = Field(default_factory=list)
    summary: CellSummary | None = None
    flags: list[str] = Field(default_factory=list, description="e.g. 'failures>1%', 'columns-wrong'")
    tx_invariants: TxInvariants | None = Field(None, description="tx cells: TPC-B consistency over the cell")
    variants: int | None = Field(None, description="distinct requests the generator drew from (tx: bodies); "
                                                   "None: not recorded")
    variants_failed: int = Field(0, description="variants whose answer was wrong when checked before the load")
    variants_failure: str | None = Field(None, description="the first wrong variant: why, and its request")
    window_accounting: Verdict | None = Field(
        None, description="worst per-window database accounting verdict (None: not measured)")
    window_accounting_reason: str | None = Field(None, description="the first wrong window's reason")
    window_accounting_unavailable: str | None = Field(None, description="why windows were not accounted")
    status: Literal["ok", "failed"] = "ok"
    error: str | None = None

    @property
    def key(self) -> tuple:
        """Identifies the cell within a run (and across runs, for compare and resume)."""
        level = self.vus if self.model == "closed" else (self.arrival_rate_spec or self.arrival_rate)
        key = (self.stack, self.workload, self.parameter, self.model, str(level))
        key = key if self.db_rtt_ms is None else (*key, f"rtt={self.db_rtt_ms:g}ms")
        return key if self.pool_dimension is None else (*key, f"pool={self.pool_dimension}")

    @property
    def pool_dimension(self) -> int | None:
        """The cell's pool size where the run measured several (a load dimension), else None."""
        return self.pool_size if self.pool_size_varied else None

    @property
    def level_label(self) -> str:
        """'1 VU', '50 VUs' or '1,800 req/s (90%)'."""
        if self.model == "closed":
            return f"{self.vus} VU{'s' if self.vus != 1 else ''}"
        spec = self.arrival_rate_spec or ""
        return f"{self.arrival_rate or 0:,.0f} req/s" + (f" ({spec})" if spec.endswith("%") else "")


class SloPoint(_Model):
    """One measured level of an SLO search."""

    level: float = Field(description="arrival rate (requests/s) or VUs")
    rps: float
    latency: Latency
    error_rate: float
    dropped: int = 0
    timeouts: int = Field(0, description="requests that hit the HTTP timeout: any fails the step")
    passed: bool


class SloSearchResult(_Model):
    """Max sustainable throughput of one stack × workload × parameter under an SLO (slo.py)."""

    stack: str
    workload: str
    parameter_name: str | None
    parameter: int | None
    model: Literal["closed", "open"]
    slo_p99_ms: float
    slo_max_error_rate: float
    window_seconds: float
    curve: list[SloPoint] = Field(description="every measured level in the order measured")
    answer_level: float | None = Field(description="highest level that met the SLO (None: none did)")
    answer_rps: float | None
    bracket_low: float = Field(description="the limit lies between the last passing level ...")
    bracket_high: float | None = Field(description="... and the first failing one (None: none failed)")
    stop_reason: str
    error: str | None = None
    engine: str | None = Field(None, description="load generator that measured the curve (None: older results)")


class HeadroomPlace(_Model):
    """One generator place's part of the headroom window (--generators N, a topology's generators): all the
    run's places drove the trivial endpoint together, as they drive every cell."""

    name: str = Field(description="the place's name, e.g. 'gen1'")
    host: str = Field(description="'local' (this machine or a namespace on it) or 'ssh <destination>'")
    rps: float = Field(description="its requests per second in the window (every request)")
    cpus: list[int] | None = Field(None, description="the CPUs it was pinned to (None: not pinned by pgarena)")
    cpu_fraction: float | None = Field(None, description=(
        "its CPU set's busy share over the window, shared with the places pinned to the same CPUs (None: not "
        "measured — a generator on another machine, whose CPU pgarena cannot read)"))


class Headroom(_Model):
    """The load generator's own ceiling: its RPS against a trivial endpoint on its CPU set — with several
    generator places, of all of them together (the way every cell is driven), each place's part in `places`."""

    rps: float = Field(description="requests per second of the whole window (all places together)")
    latency_p99_ms: float
    connections: int
    duration_seconds: float
    generator_cpu_fraction: float | None = Field(description=(
        "the generator CPU set's busy share (several places: the busiest measured set; None: not measured, "
        "e.g. every place on another machine)"))
    endpoint: str = Field(description="what answered (a minimal HTTP server pinned to the server CPUs)")
    engine: str | None = Field(None, description="load generator whose ceiling this is (None: older results)")
    places: list[HeadroomPlace] = Field(default_factory=list, description=(
        "several generator places: each one's part (empty: one local generator, or results from before "
        "per-place headroom, which measured one local generator whatever the run's places)"))
    cpu_not_measured: list[str] = Field(default_factory=list, description=(
        "places whose CPU could not be read (another machine): whether the headroom window was generator-bound "
        "there is not measured"))


class DbCeiling(_Model):
    """The database alone running one workload's statements under one cell condition (ceiling.py): the most
    any stack could get there."""

    workload: str
    parameter_name: str | None
    parameter: int | None
    connections: int = Field(description=(
        "pgbench clients: min(VUs, pool size) of the cells it stands beside (results before per-condition "
        "ceilings: the largest pool size, for every cell)"))
    transactions: int = Field(description="transactions counted over the measured runs")
    seconds: float = Field(description="seconds those transactions took, over the measured runs")
    tps: float = Field(description="transactions per second, the mean over the runs (one transaction = one "
                                   "request's statements)")
    protocol: str = Field(description="pgbench -M mode: prepared = parsed once, generic plan")
    statements: str = Field(description="what pgbench ran")
    cpus: list[int] = Field(default_factory=list, description="CPUs pgbench was pinned to (the server CPU set)")
    db_rtt_ms: float | None = Field(None, description=(
        "the round trip pgbench went through (--db-rtt, the cells' Toxiproxy at that round trip); None: direct"))
    runs_tps: list[float] = Field(default_factory=list, description="each measured pgbench run's transactions/s")
    tps_low: float | None = Field(None, description="95 % t interval of the mean over the runs: low end (tps)")
    tps_high: float | None = Field(None, description="... and high end (tps); None with fewer than two runs")


class PhaseRecord(_Model):
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
    finished_at: dt.datetime | None = None


class ScheduleRecord(_Model):
    """How the run's windows were scheduled."""

    kind: Literal["interleaved", "sequential"]
    seed: int | None = Field(None, description="the seed of the rounds' random orders (interleaved)")
    rewarm_seconds: float | None = Field(None, description="uncounted load before each interleaved window")
    sequential_fallback: dict[str, str] = Field(
        default_factory=dict, description="stacks that could not run beside the others, and why")
    phases: list[PhaseRecord] = Field(default_factory=list)


class IngestRecord(_Model):
    """Where an ingested run's load came from (`pgarena ingest`): k6 outputs recorded elsewhere."""

    source: str = Field(description="e.g. 'k6-operator TestRun: one k6 summary and raw-sample file per runner pod'")
    outputs: list[str] = Field(description="the k6 summaries read, as given")
    segments: list[str] = Field(description="the execution segment of each output, in the same order")
    not_measured: list[str] = Field(description="what pgarena could not see from outputs alone (shown as not measured)")


class RunResults(_Model):
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
        return next(s for s in self.stacks if s.id == stack_id)

    def verification(self, stack_id: str, workload: str) -> WorkloadVerification | None:
        return next((v for v in self.verifications if v.stack == stack_id and v.workload == workload), None)
