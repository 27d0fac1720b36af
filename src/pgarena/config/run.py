"""Run configuration: `RunConfig`, everything a run needs, and its validation.

The CLI turns its arguments into a `RunConfig` through `build_config` (profiles.py); the library only sees the
validated object. Every field is stored in results.json, so a run says exactly how it was made. Defaults come
from defaults.py, text option values are read by parsers.py, passwords are hidden by redaction.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from pgarena.config.defaults import (
    DEFAULT_HEADLINE_SHARE, DEFAULT_CEILING_SECONDS, DEFAULT_ENGINE, DEFAULT_HTTP_TIMEOUT_S, DEFAULT_MAX_ERROR_RATE,
    DEFAULT_MAX_REWARM_S, DEFAULT_OPEN_CONNECTIONS, DEFAULT_POOL_SIZE, DEFAULT_SCHEDULE, DEFAULT_WARMUP_CAP_S,
    DEFAULT_WIRE_LOAD_MAX_REQUESTS, DEFAULT_WIRE_LOAD_S, DEFAULT_WORKLOADS, K6_MIN_WINDOW_S, MAX_GENERATORS,
    MAX_POOL_SIZE, MAX_WIRE_LOAD_S, PERF_TEST_MAX_ROWS, RUN_ID_PATTERN, USERS_MAX_LIMIT, Engine, FaultName,
)
from pgarena.config.parsers import parse_budget, parse_rate, parse_rtt_levels, parse_stack_rtt
from pgarena.config.redaction import REDACTED, redact_secrets
from pgarena.config.stackdef import check_role_name
from pgarena.config.targets import check_targets
from pgarena.config.topology import load_topology
from pgarena.contract import workloads as wl
from pgarena.contract.idle import DEFAULT_IDLE_REWARM_S
from pgarena.contract.workloads import WORKLOAD_NAMES
from pgarena.stats.intervals import (
    DEFAULT_CONFIDENCE_LEVEL,
    DEFAULT_EQUIVALENCE_MARGIN,
    DEFAULT_TARGET_REL_HALF_WIDTH,
)


def _seconds(name: str, *args: Any, **kwargs: Any) -> Any:
    """A `<name>_s` setting stored in results.json as `<name>_seconds` (the document's unit suffix);
    both names are read back (a resumed run of schema 3 and earlier stored `_s`)."""
    stored = name.removesuffix("_s") + "_seconds"
    return Field(*args, validation_alias=AliasChoices(name, stored), serialization_alias=stored, **kwargs)


class LaterTables(BaseModel):
    """Quicker windows for every table after the headline (interleaved runs), so that a budgeted run gives every
    workload an answer after giving the headline the rounds that resolve it. Any explicit --duration,
    --repetitions, --rewarm or --warmup-cap on the command line replaces this (one setting for every table)."""

    model_config = ConfigDict(frozen=True)

    duration_s: float = Field(gt=0, description="measured window of one repetition, seconds")
    rewarm_s: float = Field(ge=0, description="uncounted load right before each window, seconds")
    warmup_cap_s: float = Field(gt=0, description="most warm-up of a stack's first window of a workload, seconds")
    repetitions: int = Field(ge=2, description="interleaved rounds at least (2: the least a paired variance needs)")


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
    idle_rewarm_s: float = _seconds("idle_rewarm_s", DEFAULT_IDLE_REWARM_S, ge=0, le=10, description=(
        "interleaved: up to this much more re-warm before a window of a stack that had no load for a while "
        "(contract/idle.py: none up to 15 s, in full from 35 s); 0: the same re-warm before every window"))
    baseline: str | None = Field(None, description="a stack every other stack's paired ratio is also given to")
    regression_margin: float | None = Field(None, gt=0, lt=1, description=(
        "`pgarena ab`: the rounds decide other/baseline against the floor 1 − this (analysis/abgate.py) instead of "
        "ordering or equivalence; needs a baseline and exactly two stacks"))
    restart_every: int | None = Field(None, ge=2, description="`pgarena ab`: restart both stacks every this many "
                                      "rounds, judged over those blocks (analysis/executions.py); None: never")
    resolve_every_pair: bool = Field(False, description=(
        "interleaved: a table's rounds go on until every pair of its stacks is ordered or equivalent within the "
        "margin (or out of reach), not only every neighbouring pair (`pgarena calibrate`)"))
    later_tables: LaterTables | None = Field(None, description=(
        "interleaved: quicker windows for every table after the headline (the profile's; None: as the headline)"))
    headline_share: float = Field(DEFAULT_HEADLINE_SHARE, gt=0, lt=1, description=(
        "with a budget: the least share of the time left that the headline's rounds get when the phases after it are "
        "not forecast (SLO searches, several pool sizes); otherwise it gets what they will not need"))
    generators: int = Field(1, ge=1, le=MAX_GENERATORS, description=(
        "k6 processes driving each window, each one execution segment of the load, merged exactly "
        "(load/distributed.py); 1 = the single generator"))
    wire_under_load: bool = Field(False, description="the wire observer also under load (pipeline/wireload.py)")
    wire_load_s: float = _seconds("wire_load_s", DEFAULT_WIRE_LOAD_S, ge=K6_MIN_WINDOW_S, le=MAX_WIRE_LOAD_S,
                                  description="--wire-under-load: seconds of load per workload")
    wire_load_max_requests: int = Field(DEFAULT_WIRE_LOAD_MAX_REQUESTS, ge=1, le=1_000_000,
                                        description="--wire-under-load: most requests per workload")
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

    _stack_rtt = field_validator("stack_rtt_ms", mode="before")(parse_stack_rtt)

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

    _rtt_levels = field_validator("db_rtt_ms", mode="before")(parse_rtt_levels)

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
    def _regression_margin_needs_an_ab(self) -> RunConfig:
        if self.regression_margin is not None and (self.baseline is None or len(self.stacks or []) != 2):
            raise ValueError("a regression margin decides an A/B: it needs a baseline and exactly two stacks")
        if self.restart_every is not None and (self.regression_margin is None or self.schedule != "interleaved"):
            raise ValueError("restarting the stacks between blocks of rounds is an A/B's (pgarena ab), interleaved")
        return self

    @model_validator(mode="after")
    def _wire_load_needs_a_stack_here(self) -> RunConfig:
        if self.wire_under_load and (where := "--target" if self.targets else "--netns" if self.netns else None):
            raise ValueError(f"--wire-under-load with {where}: the wire observer sits on this machine's loopback "
                             "between a stack pgarena starts and PostgreSQL")
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
