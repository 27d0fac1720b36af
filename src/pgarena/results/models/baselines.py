"""The run-wide baselines every cell is read against: the load generator's own ceiling (headroom) and the
database's own ceiling per workload."""

from __future__ import annotations

from pydantic import Field

from pgarena.results.models.base import Record


class HeadroomPlace(Record):
    """One generator place's part of the headroom window (--generators N, a topology's generators): all the
    run's places drove the trivial endpoint together, as they drive every cell."""

    name: str = Field(description="the place's name, e.g. 'gen1'")
    host: str = Field(description="'local' (this machine or a namespace on it) or 'ssh <destination>'")
    rps: float = Field(description="its requests per second in the window (every request)")
    cpus: list[int] | None = Field(None, description="the CPUs it was pinned to (None: not pinned by pgarena)")
    cpu_fraction: float | None = Field(None, description=(
        "its CPU set's busy share over the window, shared with the places pinned to the same CPUs (None: not "
        "measured — a generator on another machine, whose CPU pgarena cannot read)"))


class Headroom(Record):
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


class DbCeiling(Record):
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
