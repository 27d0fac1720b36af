"""A cell (stack × workload × parameter × load level) and its figures over the repetitions: spreads,
intervals, warm-up, summary."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from pgarena.contract.values import Verdict
from pgarena.results.models.base import Record
from pgarena.results.models.verification import TxInvariants
from pgarena.results.models.window import Repetition


class Spread(Record):
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


class Interval(Record):
    """A confidence interval for the mean of one figure over the repetitions."""

    mean: float
    low: float
    high: float
    rel_half_width: float = Field(description="(high - low) / 2 / mean")
    level: float = Field(description="confidence level, e.g. 0.95")
    method: str = Field(description="how it was computed")


class CellSummary(Record):
    """The cell's figures over its repetitions."""

    rps: Spread = Field(description="2xx answers per second over the repetitions (answered work)")
    rps_interval: Interval | None = Field(None, description="None with fewer than 2 repetitions")
    requests_per_second_all: Spread | None = Field(
        None, description="every completed request per second, failed ones included (beside `rps`)")
    stop_reason: Literal["interval", "budget", "max-repetitions", "fixed", "settled", "out-of-reach"] = Field(
        "fixed", description="why repetitions stopped: interval within target, time budget, cap, fixed count, or "
                             "(interleaved) every paired comparison of the cell ordered or equivalent")
    final_look: bool | None = Field(None, description=(
        "interleaved: measured in every round of its table until the time or the cap of rounds ended them (not "
        "what the rounds showed), so its pairs with the table's other such stacks get the verdict's final "
        "fixed-sample look (docs/methodology.md, 'Statistics'); None: not measured in rounds, or older results "
        "(the confidence sequence alone, at the whole error)"))
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


class Warmup(Record):
    """The warm-up before a cell: one-second generator windows until throughput was steady (warmup.py)."""

    seconds: float = Field(description="warm-up time, the sum of the windows' durations")
    steady: bool = Field(description="the last windows' throughput agreed within the tolerance (False: hit the cap)")
    minimum_seconds: float = Field(description="the least warm-up asked (profile warm-up, stack's min_warmup_s)")
    cap_seconds: float
    windows_rps: list[float] = Field(description="completed requests/s of each window, in order")
    windows_unit_ns: list[float | None] = Field(default_factory=list, description=(
        "the speed probe's unit time in each window (ns; None: not read; empty: no probe), which the steadiness rule "
        "takes out of the rate (load/warmup.py)"))
    windows_others_cpu: list[float] = Field(default_factory=list, description=(
        "interleaved: the other stacks' CPU during each window, together, as a share of one CPU (their cgroups; "
        "empty: not measured)"))
    peak_connections: int | None = Field(None, description="most database connections the stack held during it")
    lead_in: bool = Field(False, description=(
        "a table after the headline: the warm-up, one window at most, was the lead-in of the cell's first window "
        "(its re-warm lengthened to the warm-up), not a generator run of its own; windows_rps is empty"))


class Cell(Record):
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
