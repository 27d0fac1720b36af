"""Run configuration: profiles, defaults and the CPU envelope. The one source of truth for defaults.

The CLI turns its arguments into a `RunConfig` through `build_config`; the library only sees the
validated object. Every field is stored in results.json, so a run says exactly how it was made.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from pgarena.config.stackdef import check_role_name
from pgarena.config.targets import check_targets
from pgarena.config.topology import load_topology
from pgarena.contract import workloads as wl
from pgarena.contract.workloads import PERF_MANY_PARAMS, PERF_MINIMAL, SCENARIOS, WORKLOAD_NAMES
from pgarena.stats.intervals import (
    DEFAULT_CONFIDENCE_LEVEL,
    DEFAULT_EQUIVALENCE_MARGIN,
    DEFAULT_TARGET_REL_HALF_WIDTH,
)

DEFAULT_MAX_ERROR_RATE = 0.01
"""A level whose failed-request share exceeds 1 % breaks the SLO (the same line as the `failures>1%` flag)."""

DEFAULT_ENGINE = "oha"
DEFAULT_SCHEDULE = "interleaved"
DEFAULT_CEILING_SECONDS = 2
"""Seconds of each of the database ceiling's pgbench runs (ceiling.py: 3 runs per workload × parameter ×
round trip × connections, after a 1 s warm-up)."""
DEFAULT_MAX_REWARM_S = 2.0
"""Interleaved runs re-warm a stack before each measured window for the warm-up, but at most this long."""
DEFAULT_WARMUP_CAP_S = 60.0
"""The longest warm-up of one cell (warmup.py); a stack still changing then is recorded as not steady."""
DEFAULT_HEADLINE_SHARE = 1 / 3
"""With a time budget, the headline's rounds get at least this share of the time left when they start."""
DEFAULT_POOL_SIZE = 10
MAX_POOL_SIZE = 10_000
"""The largest pool size pgarena takes: the managed cluster's max_connections is raised to cover every pool
(stacks up together × the largest pool), and a PostgreSQL backend is a process with its own memory."""
DEFAULT_PROFILE = "bench"
DEFAULT_HTTP_TIMEOUT_S = 10.0
DEFAULT_WORKLOADS = WORKLOAD_NAMES

PERF_TEST_MAX_ROWS = 1000
"""Largest `_records` a stack must serve (docs/contract.md)."""
USERS_MAX_LIMIT = 10000
"""Largest `limit` a stack must serve (docs/contract.md); the table has this many rows."""

Engine = Literal["oha", "k6"]
DEFAULT_OPEN_CONNECTIONS = 100
RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,99}")
"""A run id is one plain folder name inside the results folder: no '/', no '..', not hidden, ≤ 100 characters."""
"""Open model: the most requests in flight at once (oha connections, k6 VUs), seed 000's top VU level."""
DEFAULT_SLO_P99_MS = 50.0
"""The default SLO of the max-sustainable-throughput search: p99 at most 50 ms and < 1 % errors."""
K6_MIN_WINDOW_S = 1.0
MAX_GENERATORS = 64
"""Most k6 processes per window (--generators)."""
"""k6's constant-VUs executor refuses shorter durations."""


class LaterTables(BaseModel):
    """Quicker windows for every table after the headline (interleaved runs), so that a budgeted run gives every
    workload an answer after giving the headline the rounds that resolve it. Any explicit --duration,
    --repetitions, --rewarm or --warmup-cap on the command line replaces this (one setting for every table)."""

    model_config = ConfigDict(frozen=True)

    duration_s: float = Field(gt=0, description="measured window of one repetition, seconds")
    rewarm_s: float = Field(ge=0, description="uncounted load right before each window, seconds")
    warmup_cap_s: float = Field(gt=0, description="most warm-up of a stack's first window of a workload, seconds")
    repetitions: int = Field(ge=2, description="interleaved rounds at least (2: the least a paired variance needs)")


class Profile(BaseModel):
    """A named set of load settings; the CLI can override each field."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    warmup_s: float = Field(gt=0, description="least warm-up before each cell, not counted")
    warmup_cap_s: float = Field(DEFAULT_WARMUP_CAP_S, gt=0, description="most warm-up before each cell (warmup.py)")
    duration_s: float = Field(gt=0, description="measured window of one repetition")
    repetitions: int = Field(ge=1, description="minimum measured windows per cell")
    max_repetitions: int = Field(ge=1, description="more windows while the RPS interval is wider than the target")
    cell_budget_s: float = Field(gt=0, description="measured seconds after which a cell stops repeating")
    budget_s: float | None = Field(None, gt=0, description=(
        "wall-clock budget of the whole run (build, verification and load); None: no budget"))
    rewarm_s: float | None = Field(None, ge=0, description=(
        "interleaved runs: the re-warm before each window (None: the warm-up, at most DEFAULT_MAX_REWARM_S)"))
    target_rel_half_width: float = Field(DEFAULT_TARGET_REL_HALF_WIDTH, gt=0, lt=1,
                                         description="RPS interval half-width (fraction of the mean) to stop at")
    vus: list[int] = Field(description="closed-model load levels: concurrent connections / VUs")
    perf_test_rows: list[int]
    users_limits: list[int]
    post_records: list[int] = Field(default_factory=lambda: [10], description="perf-post rows per request")
    nested_depths: list[int] = Field(default_factory=lambda: [3], description="perf-nested depths (100 rows each)")
    payload_kb: list[int] = Field(default_factory=lambda: [100], description="perf-large-payload sizes (KiB)")
    workload_vus: dict[str, list[int]] = Field(default_factory=dict, description=(
        "load levels of a workload that differ from `vus` (seed 000's server profile)"))
    arrival_rates: list[str] = Field(default_factory=list, description="open-model levels (see RunConfig)")
    slo_p99_ms: float | None = Field(None, description="search max sustainable RPS under this p99 (None: no search)")
    workloads: list[str] | None = Field(None, description="the profile's workloads (None: all)")
    faults: list[FaultName] = Field(default_factory=list, description="resilience: faults injected per stack")
    engine: Engine | None = Field(None, description="the profile's load generator (None: the default)")
    schedule: Literal["interleaved", "sequential"] | None = None
    db_rtt_ms: list[float] = Field(default_factory=list)
    later_tables: LaterTables | None = Field(None, description=(
        "quicker windows for the tables after the headline (None: every table as the headline)"))
    headline_share: float = Field(DEFAULT_HEADLINE_SHARE, gt=0, lt=1, description=(
        "with a budget: the least share of the time left that the headline's rounds get"))


FaultName = Literal["pg-restart", "terminate", "stall", "reset"]
SEED_SCENARIO_PARAMETERS: dict[str, list[int]] = {
    "post_records": [10, 100], "nested_depths": [1, 2, 3], "payload_kb": [100, 500]}
"""Seed 000's server profile for its newer scenarios: perf-post with 10 and 100 records, perf-nested 100 records
at depths 1/2/3, perf-large-payload 100 and 500 KiB."""
SEED_SCENARIO_VUS: dict[str, list[int]] = {PERF_MINIMAL: [100, 200, 500], PERF_MANY_PARAMS: [50, 100, 200]}
"""…and its load levels where they differ from perf-test's: perf-minimal at 100/200/500 VUs, perf-many-params at
50/100/200."""

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            name="bench",
            description=("`make bench`: every workload at 50 VUs at the parameters users read first (perf-test 1 row, "
                         "users 20): the headline in 2 s windows, the other tables in 1 s ones, raced in interleaved "
                         "rounds until each table is resolved or the 40-minute budget (builds included) is spent"),
            warmup_s=1,
            warmup_cap_s=10,
            duration_s=2,
            repetitions=3,
            max_repetitions=40,
            cell_budget_s=80,
            budget_s=40 * 60,
            target_rel_half_width=0.10,
            vus=[50],
            perf_test_rows=[1],
            users_limits=[20],
            # 20 stacks × ~9 tables after the headline are ~180 cells: at 1 s windows after a 0.5 s re-warm and a
            # 1 s warm-up, their 2 rounds take ~15 min, which leaves the headline ~40 % of what the budget has left
            later_tables=LaterTables(duration_s=1, rewarm_s=0.5, warmup_cap_s=1, repetitions=2),
            headline_share=0.4,
        ),
        Profile(
            name="quick",
            description="the longer quick grid: a few seconds per cell at 1 and 50 VUs, two parameters each",
            budget_s=4 * 3600,
            warmup_s=1,
            warmup_cap_s=15,  # a quick run on a busy machine would otherwise spend up to a minute per cell
            duration_s=2,
            repetitions=3,
            max_repetitions=6,
            cell_budget_s=12,
            target_rel_half_width=0.10,  # 2 s windows on a noisy machine: ±2 % is out of reach (README)
            vus=[1, 50],
            perf_test_rows=[1, 100],
            users_limits=[20, 1000],
        ),
        Profile(
            name="standard",
            budget_s=12 * 3600,
            description="every seed parameter at every seed load level, 15 s per repetition",
            warmup_s=5,
            duration_s=15,
            repetitions=3,
            max_repetitions=6,
            cell_budget_s=90,
            vus=[1, 50, 100],
            perf_test_rows=[1, 10, 100, 500],
            users_limits=[20, 50, 250, 1000, 5000],
            **SEED_SCENARIO_PARAMETERS,
        ),
        Profile(
            name="seed",
            budget_s=12 * 3600,
            description=("seed 000's matrix: perf-test rows 1/10/100/500 x VUs 1/50/100 and its five newer scenarios "
                         "at the seed's server profile, 60 s windows, constant VUs"),
            warmup_s=10,
            duration_s=60,
            repetitions=3,
            max_repetitions=5,
            cell_budget_s=300,
            vus=[1, 50, 100],
            perf_test_rows=[1, 10, 100, 500],
            users_limits=[20, 50, 250, 1000, 5000],
            **SEED_SCENARIO_PARAMETERS,
            workload_vus=SEED_SCENARIO_VUS,
            workloads=["perf-test", *SCENARIOS],
        ),
        Profile(
            name="resilience",
            budget_s=2 * 3600,
            description=("per stack: its closed-model peak on users and tx, then each fault (PostgreSQL restart, "
                         "its connections terminated, the database stalled, connections reset) in a 20 s k6 window "
                         "at half that peak"),
            warmup_s=1,
            warmup_cap_s=15,
            duration_s=2,
            repetitions=3,
            max_repetitions=6,
            cell_budget_s=12,
            target_rel_half_width=0.10,
            vus=[50],
            perf_test_rows=[1],
            users_limits=[20],
            workloads=["users", "tx"],
            faults=["pg-restart", "terminate", "stall", "reset"],
            engine="k6",
            schedule="sequential",  # a fault hits the shared database: one stack up at a time
            db_rtt_ms=[0],  # behind Toxiproxy at no added delay, for the reset fault
        ),
        Profile(
            name="full",
            budget_s=8 * 3600,
            description="every workload, closed and open model, SLO search, adaptive repetitions (±2 % at 95 %)",
            warmup_s=5,
            duration_s=5,
            repetitions=3,
            max_repetitions=10,
            cell_budget_s=40,
            vus=[1, 50, 100],
            perf_test_rows=[1, 100, 500],
            users_limits=[20, 1000],
            **SEED_SCENARIO_PARAMETERS,
            arrival_rates=["50%", "90%", "150%"],
            slo_p99_ms=DEFAULT_SLO_P99_MS,
        ),
    )
}


def default_cpu_sets() -> tuple[list[int], list[int]]:
    """(generator CPUs, server CPUs): the first allowed CPU drives load, the rest run stack + PostgreSQL.

    On a one-CPU machine both share it (the run records that, and the report says so).
    """
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return cpus, cpus
    return cpus[:1], cpus[1:]


def _seconds(name: str, *args: Any, **kwargs: Any) -> Any:
    """A `<name>_s` setting stored in results.json as `<name>_seconds` (the document's unit suffix);
    both names are read back (a resumed run of schema 3 and earlier stored `_s`)."""
    stored = name.removesuffix("_s") + "_seconds"
    return Field(*args, validation_alias=AliasChoices(name, stored), serialization_alias=stored, **kwargs)


class RunConfig(BaseModel):
    """Everything a run needs; stored verbatim (password redacted) in results.json."""

    model_config = ConfigDict(frozen=True)

    profile: str
    engine: Engine = DEFAULT_ENGINE
    stacks: list[str] | None = Field(None, description="selected stack ids; None = all available")
    workloads: list[str] = Field(default_factory=lambda: list(DEFAULT_WORKLOADS))
    warmup_s: float = _seconds("warmup_s", gt=0)
    duration_s: float = _seconds("duration_s", gt=0)
    repetitions: int = Field(ge=1, description="minimum measured windows per cell")
    max_repetitions: int = Field(ge=1, description="most measured windows per cell")
    target_rel_half_width: float = Field(DEFAULT_TARGET_REL_HALF_WIDTH, gt=0, lt=1,
                                         description="stop repeating once the RPS interval is within ± this")
    confidence_level: float = Field(DEFAULT_CONFIDENCE_LEVEL, gt=0, lt=1, description=(
        "interleaved runs: the level at which all the claims of one table hold together"))
    equivalence_margin: float = Field(DEFAULT_EQUIVALENCE_MARGIN, gt=0, lt=1, description=(
        "two stacks are 'equivalent' when their ratio's interval lies within [1/(1+m), 1+m]"))
    budget_s: float | None = _seconds("budget_s", None, gt=0, description=(
        "wall-clock budget of the whole run from its start (build, verification and load): rounds stop when "
        "the next would overrun it; None: no budget"))
    cell_budget_s: float = _seconds("cell_budget_s", gt=0, description="stop repeating once this many seconds were measured")
    vus: list[int]
    perf_test_rows: list[int]
    users_limits: list[int]
    post_records: list[int] = Field(default_factory=lambda: [10], description="perf-post rows per request")
    nested_depths: list[int] = Field(default_factory=lambda: [3], description="perf-nested depths (100 rows each)")
    payload_kb: list[int] = Field(default_factory=lambda: [100], description="perf-large-payload sizes (KiB)")
    workload_vus: dict[str, list[int]] = Field(default_factory=dict, description=(
        "load levels of a workload that differ from `vus` (the seed profile: seed 000's server profile)"))
    arrival_rates: list[str] = Field(default_factory=list, description=(
        "open-model levels per cell parameter: '2000' = 2000 requests/s, '90%' = 90 % of the highest median "
        "RPS the closed-model cells of the same stack, workload and parameter reached"))
    shared_rates: list[str] = Field(default_factory=list, description=(
        "open-model levels shared by every stack: shares ('50%') of `shared_rate_peaks` (sharedrates.py)"))
    shared_rate_peaks: dict[str, float] = Field(default_factory=dict, description=(
        "per workload parameter ('perf-test/100'): the slowest stack's closed-model peak 2xx/s in the "
        "run named by `shared_rates_from`"))
    shared_rates_from: str | None = Field(None, description="the earlier run the shared levels were set from")
    open_connections: int = Field(DEFAULT_OPEN_CONNECTIONS, ge=1, description="open model: most requests in flight")
    faults: list[FaultName] = Field(default_factory=list, description=(
        "resilience: faults injected into each stack's steady load after its cells (pipeline/resilience.py)"))
    db_rtt_ms: list[float] = Field(default_factory=list, description=(
        "round trips added between each stack and PostgreSQL, a load dimension like VUs (Toxiproxy; empty: the "
        "stacks connect directly)"))
    netns: bool = Field(False, description=(
        "the generator, the stacks and PostgreSQL each in a network namespace pgarena creates, joined by veth "
        "links (system/netns.py); False: everything on this machine's loopback"))
    topology: str | None = Field(None, description=(
        "a topology file (config/topology.py): which host each role lives on; None: every role here"))
    stack_rtt_ms: float = Field(0, description=(
        "round trip added between the generator and each stack (a Toxiproxy proxy in front of the stack; 0: none)"))
    slo_p99_ms: float | None = Field(None, gt=0, description="max-sustainable search: p99 bound (None = no search)")
    slo_max_error_rate: float = Field(DEFAULT_MAX_ERROR_RATE, ge=0, lt=1)
    slo_budget_steps: int = Field(8, ge=1, description="measured windows the search may use per stack × workload")
    headroom: bool = Field(True, description="measure the generator's own ceiling against a trivial endpoint")
    ceiling_s: int = _seconds("ceiling_s", DEFAULT_CEILING_SECONDS, ge=0, description=(
        "seconds of each pgbench run of the database's own ceiling (3 runs per condition; 0 = not measured)"))
    cold_start_requests: int = Field(20, ge=1, description="first requests timed right after a stack is healthy")
    pool_size: int = Field(DEFAULT_POOL_SIZE, ge=1, le=MAX_POOL_SIZE, description=(
        "database connections per stack, all its processes together (PGARENA_POOL_SIZE); with several "
        "`pool_sizes`: the first of them"))
    pool_sizes: list[int] = Field(default_factory=list, description=(
        "pool sizes measured as a load dimension (--pool-size 10,50): every stack is restarted at each and "
        "every cell is measured at each; empty: one pool size, `pool_size`, for every cell"))
    workers: int = Field(ge=1, description="worker processes/threads for every stack")
    generator_cpus: list[int]
    server_cpus: list[int]
    http_timeout_s: float = _seconds("http_timeout_s", DEFAULT_HTTP_TIMEOUT_S, gt=0)
    warmup_cap_s: float = _seconds("warmup_cap_s", DEFAULT_WARMUP_CAP_S, gt=0, description=(
        "longest warm-up of one cell: each cell warms until its throughput is steady (warmup.py) or this"))
    seed: int | None = Field(None, description="seed of the shuffled stack order (a run draws one if not given)")
    database_url: str | None = Field(None, description="external database; None = managed cluster")
    admin_database_url: str | None = Field(None, description=(
        "external database: a role that may read every role's pg_stat_statements (for accounting)"))
    allow_overwrite: bool = Field(False, description=(
        "external database: use a schema or role named pgarena that pgarena did not create"))
    db_port: int | None = Field(None, ge=1, le=65535, description="managed database: fixed port (None = a free one)")
    db_user: str | None = Field(None, min_length=1, max_length=63,
                                description="managed database: the stacks' role (None = pgarena; pg_* is reserved)")
    db_password: str | None = Field(None, min_length=1, description="managed database: that role's password")
    db_name: str | None = Field(None, min_length=1, description="managed database: its name (None = pgarena)")
    postgres_bin: Path | None = Field(None, description=(
        "managed database: the folder of its server binaries (None: PATH, pg_config, /usr/lib/postgresql/*/bin)"))
    stacks_dir: Path
    results_dir: Path
    run_id: str | None = None
    schedule: Literal["interleaved", "sequential"] = Field(DEFAULT_SCHEDULE, description=(
        "interleaved: all stacks run together and every round measures each (stack, cell) once in a fresh "
        "random order; sequential: stack after stack, each cell's repetitions back to back"))
    schedule_seed: int | None = Field(None, description="seed of the interleaved rounds' order (None = random, recorded)")
    rewarm_s: float | None = _seconds("rewarm_s", None, ge=0, description=(
        "interleaved: uncounted load right before each measured window (None = the warm-up, at most 2 s)"))
    baseline: str | None = Field(None, description="a stack every other stack's paired ratio is also given to")
    later_tables: LaterTables | None = Field(None, description=(
        "interleaved: quicker windows for every table after the headline (the profile's; None: as the headline)"))
    headline_share: float = Field(DEFAULT_HEADLINE_SHARE, gt=0, lt=1, description=(
        "with a budget: the least share of the time left that the headline's rounds get"))
    generators: int = Field(1, ge=1, le=MAX_GENERATORS, description=(
        "k6 processes driving each window, each one execution segment of the load, merged exactly "
        "(load/distributed.py); 1 = the single generator"))
    targets: dict[str, str] = Field(default_factory=dict, description=(
        "remote targets (--target ID=URL): stack id → base URL of a stack deployed elsewhere, verified and loaded "
        "but neither built, started nor stopped by pgarena (config/targets.py); empty: local stacks"))

    @property
    def rewarm_seconds(self) -> float:
        """The re-warm before each interleaved window, in seconds."""
        seconds = self.rewarm_s if self.rewarm_s is not None else min(self.warmup_s, DEFAULT_MAX_REWARM_S)
        if self.engine == "k6" and 0 < seconds < K6_MIN_WINDOW_S:
            return K6_MIN_WINDOW_S  # k6's constant-VUs executor refuses shorter durations
        return seconds

    @field_validator("run_id")
    @classmethod
    def _plain_folder_name(cls, run_id: str | None) -> str | None:
        if run_id is not None and not RUN_ID_PATTERN.fullmatch(run_id):
            raise ValueError(f"'{run_id}' is not a plain folder name: use letters, digits, '.', '_' and '-' "
                             "(no '/', no '..', not starting with '.' or '-'); the run folder stays inside "
                             "the results folder")
        return run_id

    @field_validator("workloads")
    @classmethod
    def _known_workloads(cls, names: list[str]) -> list[str]:
        unknown = [n for n in names if n not in WORKLOAD_NAMES]
        if unknown:
            raise ValueError(f"unknown workload '{unknown[0]}'; known: {', '.join(WORKLOAD_NAMES)}")
        return names

    _role_name = field_validator("db_user")(check_role_name)
    _targets = field_validator("targets")(check_targets)

    @field_validator("vus")
    @classmethod
    def _positive_levels(cls, levels: list[int]) -> list[int]:
        if not levels or any(level < 1 for level in levels):
            raise ValueError("load levels must be positive integers")
        return levels

    @field_validator("post_records", "nested_depths", "payload_kb")
    @classmethod
    def _in_range(cls, values: list[int], info) -> list[int]:
        low, high, option = {"post_records": (*wl.RECORDS_RANGE, "--post-records"),
                             "nested_depths": (*wl.DEPTH_RANGE, "--nested-depths"),
                             "payload_kb": (*wl.SIZE_KB_RANGE, "--payload-kb")}[info.field_name]
        if not values or any(not low <= value <= high for value in values):
            raise ValueError(f"{option} takes values from {low} to {high}, got {values}")
        return values

    @field_validator("budget_s", mode="before")
    @classmethod
    def _budget(cls, value: Any) -> Any:
        return parse_budget(value) if isinstance(value, str) else value

    @field_validator("stack_rtt_ms", mode="before")
    @classmethod
    def _stack_rtt(cls, value: Any) -> Any:
        value = parse_rtt(value) if isinstance(value, str) else value
        if not isinstance(value, int | float) or not 0 <= value <= 1000:
            raise ValueError("a round trip from 0 to 1000 ms")
        if value != int(value):
            raise ValueError("whole milliseconds only (Toxiproxy's latency toxic counts whole ms)")
        return value

    @model_validator(mode="after")
    def _netns_needs_a_managed_database(self) -> RunConfig:
        if self.netns and self.database_url:
            raise ValueError("--netns starts PostgreSQL in a namespace of its own; it cannot move --database-url's "
                             "server there (drop one of the two)")
        if self.topology is not None:
            if self.netns:
                raise ValueError("--netns is a topology of its own; give --netns or --topology, not both")
            topology = load_topology(Path(self.topology))  # TopologyError (a ValueError) names the file and key
            if self.database_url and topology.roles.database:
                raise ValueError(f"{self.topology} places the managed database (roles.database) and --database-url "
                                 "names your own: leave roles.database out of the file, or drop --database-url")
            if not self.database_url and not topology.roles.database:
                raise ValueError(f"{self.topology}: roles.database is missing; name the managed database's host, or "
                                 "give --database-url (your own server)")
            remote = [n for n in topology.roles.generators if topology.hosts[n].kind == "ssh"]
            if remote and self.engine != "k6":
                raise ValueError(f"{self.topology}: a generator on an SSH host ({remote[0]}) needs --engine k6 "
                                 "(pgarena copies its pinned k6 binary there)")
            if len(topology.roles.generators) > 1 and self.engine != "k6":
                raise ValueError(f"{self.topology}: {len(topology.roles.generators)} generators need --engine k6 "
                                 "(k6 splits one load between them with execution segments)")
            if self.generators > 1:
                raise ValueError("--generators places generators on this machine; with --topology, name them in "
                                 "the file's roles.generators")
        return self

    @field_validator("db_rtt_ms", mode="before")
    @classmethod
    def _rtt_levels(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        levels = [parse_rtt(v) if isinstance(v, str) else v for v in value]
        if any(not isinstance(v, int | float) or v < 0 or v > 1000 for v in levels):
            raise ValueError("round trips from 0 to 1000 ms")
        if len(set(levels)) != len(levels):
            raise ValueError("each round trip once")
        if any(v != int(v) for v in levels):
            raise ValueError("whole milliseconds only (Toxiproxy's latency toxic counts whole ms; a "
                             "sub-millisecond delay needs the kernel's netem qdisc, which this kernel lacks)")
        return levels

    @model_validator(mode="before")
    @classmethod
    def _one_pool_size_is_no_dimension(cls, data: Any) -> Any:
        """`pool_sizes` [n] is `pool_size` n (nothing changes for a run with one pool size: same cells, same
        keys); with several, `pool_size` is the first (what a stack gets outside the cells: the verify command)."""
        if isinstance(data, dict):
            sizes = data.get("pool_sizes")
            if isinstance(sizes, list) and sizes and all(isinstance(n, int) and 1 <= n <= MAX_POOL_SIZE for n in sizes):
                data = {**data, "pool_size": sizes[0], "pool_sizes": sizes if len(sizes) > 1 else []}
        return data

    @field_validator("pool_sizes")
    @classmethod
    def _pool_levels(cls, sizes: list[int]) -> list[int]:
        if any(not 1 <= n <= MAX_POOL_SIZE for n in sizes):
            raise ValueError(f"pool sizes from 1 to {MAX_POOL_SIZE:,} connections, got {','.join(map(str, sizes))}")
        if len(set(sizes)) != len(sizes):
            raise ValueError(f"each pool size once, got {','.join(map(str, sizes))}")
        return sizes

    @property
    def pool_levels(self) -> list[int]:
        """Every pool size the run measures, in order: `pool_sizes`, or the one `pool_size`."""
        return list(self.pool_sizes) or [self.pool_size]

    @field_validator("workload_vus")
    @classmethod
    def _known_levels(cls, levels: dict[str, list[int]]) -> dict[str, list[int]]:
        for name, values in levels.items():
            if name not in WORKLOAD_NAMES or not values or any(v < 1 for v in values):
                raise ValueError(f"workload_vus: '{name}' needs a known workload and positive levels")
        return levels

    @field_validator("arrival_rates")
    @classmethod
    def _rates(cls, rates: list[str]) -> list[str]:
        for rate in rates:
            parse_rate(rate)
        return rates

    @field_validator("shared_rates")
    @classmethod
    def _shares(cls, rates: list[str]) -> list[str]:
        for rate in rates:
            if not parse_rate(rate)[1]:
                raise ValueError(f"shared rate '{rate}' must be a share of the slowest peak, e.g. 50%")
        return rates

    @model_validator(mode="after")
    def _shared_rates_have_peaks(self) -> RunConfig:
        if self.shared_rates and not self.shared_rate_peaks:
            raise ValueError("--shared-rates needs --shared-rates-from RUN (a run with closed-model cells)")
        return self

    @field_validator("perf_test_rows")
    @classmethod
    def _rows_in_range(cls, rows: list[int]) -> list[int]:
        if any(not 1 <= r <= PERF_TEST_MAX_ROWS for r in rows):
            raise ValueError(f"rows must be between 1 and {PERF_TEST_MAX_ROWS}")
        return rows

    @field_validator("users_limits")
    @classmethod
    def _limits_in_range(cls, limits: list[int]) -> list[int]:
        if any(not 1 <= n <= USERS_MAX_LIMIT for n in limits):
            raise ValueError(f"limits must be between 1 and {USERS_MAX_LIMIT}")
        return limits

    @model_validator(mode="after")
    def _faults_need_k6_and_one_stack_at_a_time(self) -> RunConfig:
        if self.faults and self.engine != "k6":
            raise ValueError("the resilience faults need --engine k6 (its JSON output records every request, "
                             "failed ones included; oha's records answered requests only)")
        if self.faults and self.schedule != "sequential":
            raise ValueError("the resilience faults need --schedule sequential (a fault hits the shared database)")
        return self

    @model_validator(mode="after")
    def _generators_need_k6(self) -> RunConfig:
        if self.generators > 1 and self.engine != "k6":
            raise ValueError(f"--generators {self.generators} needs --engine k6 (k6 splits a test into "
                             f"execution segments; {self.engine} cannot)")
        return self

    @model_validator(mode="after")
    def _repetition_bounds(self) -> RunConfig:
        if self.max_repetitions < self.repetitions:
            raise ValueError(f"max_repetitions ({self.max_repetitions}) is below repetitions ({self.repetitions})")
        return self

    @model_validator(mode="after")
    def _k6_minimum_window(self) -> RunConfig:
        if self.engine == "k6" and min(self.warmup_s, self.duration_s) < K6_MIN_WINDOW_S:
            raise ValueError(f"k6 needs --warmup and --duration of at least {K6_MIN_WINDOW_S:g} s "
                             f"(got {self.warmup_s:g} s and {self.duration_s:g} s)")
        return self

    @model_validator(mode="after")
    def _managed_only_settings(self) -> RunConfig:
        # NOTE: with remote targets --db-password is the password of pgarena's role on --database-url (targets.py)
        managed_only = ("db_port", "db_user", "db_name") if self.targets else ("db_port", "db_user", "db_password",
                                                                                "db_name")
        given = [f"--db-{k.removeprefix('db_')}" for k in managed_only
                 if getattr(self, k) is not None] + (["--postgres-bin"] if self.postgres_bin is not None else [])
        if self.database_url and given:
            raise ValueError(f"{', '.join(given)} only configure{'s' if len(given) == 1 else ''} the managed "
                             "database; not usable with --database-url")
        external_only = [o for o, v in (("--admin-database-url", self.admin_database_url),
                                        ("--allow-overwrite", self.allow_overwrite)) if v]
        if not self.database_url and external_only:
            raise ValueError(f"{' and '.join(external_only)} need{'s' if len(external_only) == 1 else ''} "
                             "--database-url")
        return self

    @model_validator(mode="after")
    def _target_rules(self) -> RunConfig:
        """Remote targets run alone, against the user's database, whose pgarena role they log in with."""
        if not self.targets:
            return self
        if self.stacks is not None:
            raise ValueError("--target and --stacks in one run: refused. A remote target runs on another machine "
                             "than the local stacks, so a ranking between them would compare machines and networks, "
                             "not stacks; measure them in separate runs")
        if not self.database_url:
            raise ValueError("--target needs --database-url: the database the deployed stack reads, where pgarena "
                             "loads its data and checks every answer (a managed database lives and dies with the run)")
        if not self.db_password:
            raise ValueError("--target needs --db-password: the password pgarena gives its role 'pgarena' on "
                             "--database-url, which the deployed stack logs in with (docs/contract.md, Remote targets)")
        if self.db_rtt_ms:
            raise ValueError("--db-rtt with --target: pgarena cannot put its proxy between a deployed stack and "
                             "its database")
        if self.faults:
            raise ValueError("the resilience faults with --target: they need a stack pgarena started and its managed "
                             "database")
        if len(self.pool_levels) > 1:
            raise ValueError("--pool-size with several values and --target: pgarena cannot restart a deployed stack "
                             "with another pool size")
        if self.stack_rtt_ms:
            raise ValueError("--stack-rtt with --target: measure the deployment at its own distance (a proxy here "
                             "would add this machine as a hop)")
        return self

    def redacted(self) -> dict:
        """The config as stored: every password (in URLs, conninfo strings, --db-password) replaced by '***'."""
        data = self.model_dump(mode="json", by_alias=True)
        for key in ("database_url", "admin_database_url"):
            if data.get(key):
                data[key] = redact_secrets(data[key])
        if data.get("db_password"):
            data["db_password"] = REDACTED
        if data.get("targets"):
            data["targets"] = {k: redact_secrets(v) for k, v in data["targets"].items()}
        return data


def parse_rate(text: str) -> tuple[float, bool]:
    """An arrival-rate level: ('2000' → (2000.0, False) requests/s; '90%' → (0.9, True) of the closed peak)."""
    raw = str(text).strip()
    relative = raw.endswith("%")
    try:
        value = float(raw[:-1] if relative else raw)
    except ValueError:
        raise ValueError(f"arrival rate '{text}' is neither a number of requests/s nor a percentage") from None
    if not value > 0:
        raise ValueError(f"arrival rate '{text}' must be positive")
    return (value / 100, True) if relative else (value, False)


REDACTED = "***"
"""What a password is replaced by wherever pgarena stores or shows it."""
MIN_KNOWN_SECRET_CHARS = 4
"""A known secret shorter than this is not replaced in free text (a 1-character password would blank every 'a')."""
SECRET_OPTIONS = ("--database-url", "--admin-database-url", "--db-password")
"""Command-line options whose value is, or may contain, a password."""
_SECRET_KEYS = r"password|passwd|pgpassword|sslpassword"
_KEY_VALUE_RE = re.compile(rf"""(?i)\b({_SECRET_KEYS})(\s*=\s*)('(?:[^'\\]|\\.)*'|"[^"]*"|[^\s&;'"]*)""")
_URL_USERINFO_RE = re.compile(r"(?i)\b(https?://[^:/?#@\s]*):([^@/?#\s]*)@")
_PG_URL_USERINFO_RE = re.compile(r"(?i)\b(postgres(?:ql)?://[^:/?#@\s]*):((?:(?!\w+://)[^@\n])*)@")
"""A PostgreSQL URL's `user:password@`. NOTE: libpq takes everything up to the first '@' as the user info, so
a password may hold an unencoded '#', '?', '/' or space (`postgresql://u:pa#ss@h/db`): the password runs to the
first '@' on the line (never into another URL). Without a password (`postgresql://h:5432/db`) there is no '@'
and nothing is changed; a later '@' on the same line would be over-redacted, never under-redacted."""


def redact_url(url: str) -> str:
    """`postgresql://u:secret@h/db?password=secret` → `postgresql://u:***@h/db?password=***` (http(s) URLs too)."""
    return redact_secrets(url)


def redact_secrets(text: str, known: Sequence[str] = ()) -> str:
    """Any text with every password it holds replaced by '***': a URL's `user:secret@` (a PostgreSQL URL's
    password as libpq reads it, unencoded '#', '?', '/' and spaces included), and `password=`,
    `PGPASSWORD=`-style key/value pairs (URL queries, conninfo strings, environment assignments); and every
    `known` secret (a password pgarena set) wherever it stands."""
    for secret in known:  # a password rendered into a command bare (`--password ${db_password}`)
        if secret and len(secret) >= MIN_KNOWN_SECRET_CHARS:
            text = text.replace(secret, REDACTED)
    text = _PG_URL_USERINFO_RE.sub(lambda m: f"{m.group(1)}:{REDACTED}@", text)
    text = _URL_USERINFO_RE.sub(lambda m: f"{m.group(1)}:{REDACTED}@", text)
    return _KEY_VALUE_RE.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)


def redact_command(argv: list[str]) -> list[str]:
    """A command line with the values of SECRET_OPTIONS (`--opt value` and `--opt=value`) replaced by
    '***' (--db-password) or redacted (URLs), and any other password-looking text redacted too."""
    result: list[str] = []
    pending: str | None = None
    for arg in argv:
        if pending is not None:
            result.append(REDACTED if pending == "--db-password" else redact_secrets(arg))
            pending = None
            continue
        option, eq, value = arg.partition("=")
        if option in SECRET_OPTIONS and eq:
            result.append(f"{option}={REDACTED if option == '--db-password' else redact_secrets(value)}")
        elif arg in SECRET_OPTIONS:
            result.append(arg)
            pending = arg
        else:
            result.append(redact_secrets(arg))
    return result


def build_config(
    *,
    profile: str = DEFAULT_PROFILE,
    project_dir: Path,
    overrides: dict | None = None,
) -> RunConfig:
    """Combine a profile, the machine's defaults and explicit overrides (None values are ignored)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile '{profile}'; known: {', '.join(PROFILES)}")
    base = PROFILES[profile]
    generator_cpus, server_cpus = default_cpu_sets()
    values: dict = {
        "profile": profile,
        "warmup_s": base.warmup_s,
        "warmup_cap_s": base.warmup_cap_s,
        "rewarm_s": base.rewarm_s,
        "duration_s": base.duration_s,
        "repetitions": base.repetitions,
        "max_repetitions": base.max_repetitions,
        "cell_budget_s": base.cell_budget_s,
        "budget_s": base.budget_s,
        "target_rel_half_width": base.target_rel_half_width,
        "vus": base.vus,
        "perf_test_rows": base.perf_test_rows,
        "users_limits": base.users_limits,
        "post_records": base.post_records,
        "nested_depths": base.nested_depths,
        "payload_kb": base.payload_kb,
        "workload_vus": base.workload_vus,
        "arrival_rates": base.arrival_rates,
        "slo_p99_ms": base.slo_p99_ms,
        "later_tables": base.later_tables,
        "headline_share": base.headline_share,
        "generator_cpus": generator_cpus,
        "server_cpus": server_cpus,
        "stacks_dir": project_dir / "stacks",
        "results_dir": project_dir / "results",
    }
    if base.workloads is not None:
        values["workloads"] = base.workloads
    for name in ("engine", "schedule"):
        if getattr(base, name) is not None:
            values[name] = getattr(base, name)
    if base.faults:
        values["faults"], values["db_rtt_ms"] = base.faults, base.db_rtt_ms
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    if "vus" in given and "workload_vus" not in given:
        given["workload_vus"] = {}  # --vus is every workload's levels, the profile's per-workload ones too
    if "repetitions" in given and "max_repetitions" not in given:
        given["max_repetitions"] = given["repetitions"]  # an explicit count is exact unless a maximum is given too
    if "topology" in given and "engine" not in given and _topology_generators(given["topology"]) > 1:
        given["engine"] = "k6"  # several generators split one load with k6's execution segments
    if given.keys() & {"duration_s", "rewarm_s", "repetitions", "warmup_cap_s"}:
        values["later_tables"] = None  # an explicit window setting holds for every table
    values.update(given)
    values.setdefault("workers", len(values["server_cpus"]))
    return RunConfig.model_validate(values)


def _topology_generators(path: str) -> int:
    """How many generators a topology file names, counting one on an SSH host as two (it needs k6 too); 0 if
    it cannot be read (validation says why later)."""
    try:
        topology = load_topology(Path(path))
    except ValueError:
        return 0
    return len(topology.roles.generators) + sum(topology.hosts[n].kind == "ssh" for n in topology.roles.generators)


BUDGET_PATTERN = re.compile(r"\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s)?\s*")


def parse_budget(text: str) -> float:
    """A run's time budget as seconds: '45m', '1h30m', '90s', '2h' (a unit is required)."""
    match = BUDGET_PATTERN.fullmatch(text)
    if not match or not any(match.groups()):
        raise ValueError(f"a budget is a duration with h, m or s (e.g. 30m, 1h30m), got '{text}'")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    return hours * 3600 + minutes * 60 + seconds


RTT_PATTERN = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|us|µs|s)?\s*")


def parse_rtt(text: str) -> float:
    """A round trip as milliseconds: '2ms', '0.5ms', '500us', '0' (a bare number is milliseconds)."""
    match = RTT_PATTERN.fullmatch(text)
    if not match:
        raise ValueError(f"a round trip is a number with ms, us or s (e.g. 0.5ms, 2ms), got '{text}'")
    value = float(match.group(1))
    return value * {"s": 1000.0, "us": 0.001, "µs": 0.001}.get(match.group(2) or "ms", 1.0)


def workload_parameters(config: RunConfig, workload: str) -> list[int | None]:
    """The parameters a workload is measured at (perf-test rows, users limits, perf-post records, perf-nested
    depths, perf-large-payload KiB; [None] for the others). The first is the workload's headline parameter:
    cold start and the SLO search use it."""
    return {wl.PERF_TEST: list(config.perf_test_rows), wl.USERS: list(config.users_limits),
            wl.PERF_POST: list(config.post_records), wl.PERF_NESTED: list(config.nested_depths),
            wl.PERF_LARGE_PAYLOAD: list(config.payload_kb)}.get(workload, [None])


def workload_vus(config: RunConfig, workload: str) -> list[int]:
    """The closed-model load levels of a workload: its own where the profile gives them, else `vus`.
    An explicit --vus applies to every workload (it replaces the profile's levels)."""
    return list(config.workload_vus.get(workload, config.vus))
