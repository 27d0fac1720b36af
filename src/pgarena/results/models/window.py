"""One measured window of a cell: its latency, errors, database accounting and, with several generators,
each one's figures."""

from __future__ import annotations

from pydantic import Field

from pgarena.contract.values import Verdict
from pgarena.results.models.base import Record


class Latency(Record):
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


class Errors(Record):
    """Failed requests of one repetition, by kind."""

    non_2xx: int = 0
    connect: int = 0
    timeout: int = 0
    other: int = 0

    @property
    def total(self) -> int:
        """Failed requests of every kind."""
        return self.non_2xx + self.connect + self.timeout + self.other

    @property
    def unanswered(self) -> int:
        """Requests that got no HTTP answer at all (they count at the timeout in the latency)."""
        return self.connect + self.timeout + self.other


class WindowAccounting(Record):
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


class GeneratorFigures(Record):
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


class DistributedLoad(Record):
    """How a window's load was split over several k6 processes and merged (load/distributed.py, merge.py)."""

    places: list[GeneratorFigures]
    start: str = Field(description="how the places were started together")
    start_skew_seconds: float | None = Field(
        None, description="from the first place's start command to the last one's answer (an upper bound of "
                          "how far apart they started; None: not measured)")
    merge: str = Field(description="how the places' figures were merged into the repetition's")


class Repetition(Record):
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
    reference_gap_before_ns: float | None = Field(None, description=(
        "the same mean over the idle gap right before the window's load (its re-warm is load): the machine with "
        "no stack under load, which no stack can shift; None: not measured"))
    reference_gap_after_ns: float | None = Field(None, description=(
        "the same over the idle gap right after the window, until the next load; None: not measured (the run's "
        "last load)"))
    rewarm_seconds: float | None = Field(None, description=(
        "interleaved: the uncounted load right before this window (the phase's re-warm, longer after an idle gap: "
        "contract/idle.py); None: not recorded"))
    idle_seconds: float | None = Field(None, description=(
        "interleaved: how long the stack had had no load when this window's re-warm began (None: not recorded)"))
