"""The named load profiles (`--profile`) and `build_config`, which turns a profile and the user's overrides
into a validated RunConfig.

NOTE: the PROFILES table and the Profile model stay together in this module; a profile's numbers are changed
here and nowhere else.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pgarena.config.defaults import (
    DEFAULT_HEADLINE_SHARE,
    DEFAULT_SLO_P99_MS,
    DEFAULT_WARMUP_CAP_S,
    Engine,
    FaultName,
    default_cpu_sets,
)
from pgarena.config.run import LaterTables, RunConfig
from pgarena.config.topology import load_topology
from pgarena.contract.workloads import PERF_MANY_PARAMS, PERF_MINIMAL, SCENARIOS
from pgarena.stats.intervals import DEFAULT_TARGET_REL_HALF_WIDTH

DEFAULT_PROFILE = "bench"
"""The profile of a run that names none (--profile): `make bench`'s."""


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
        "with a budget: the least share of the time left that the headline's rounds get when the phases after it are "
        "not forecast (SLO searches, several pool sizes); otherwise it gets what they will not need"))


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
                         "users 20): 1 s windows after a 0.5 s re-warm, raced in interleaved "
                         "rounds until each table is resolved or the 43-minute budget (builds included) is spent"),
            warmup_s=1,
            # the headline's warm-ups until steady: a JVM climbs for a minute or more (java-spring-mvc-jdbc warmed in
            # 1 s visits with gaps: 0.15, 0.38, 0.51, 0.74, 0.87 of its 120 s rate over the first 50 s of load;
            # scripts/warmup_curve.py, docs/methodology.md), and at a 10 s cap it entered the rounds at a third of it
            warmup_cap_s=60,
            # 1 s windows after a 0.5 s re-warm for every table: four copies of go-nethttp-pgx on perf-test at
            # 50 VUs, alternated with 2 s windows after a 1 s re-warm (calw-w2a, w1a, w1b, w2b; docs/methodology.md),
            # scattered alike per window (log-sd after the probe 0.093, 0.128 against 0.114, 0.123) in 1.86 s of
            # wall time per window against 3.36 s: a paired interval's variance after a given time is about half
            duration_s=1,
            rewarm_s=0.5,
            repetitions=3,
            # the budget, not the cap, ends the rounds: head1s-2's headline (21 stacks, log-sd 0.19) stopped as
            # out of reach of 40 rounds after 19 with 6 of its 22 minutes left
            max_repetitions=100,
            cell_budget_s=100,
            # 43 minutes, setup and builds included: on a fresh machine (bench17, 2026-11-28 21:46, every cache cold)
            # setup and the builds took until minute 21 of 40, and the later tables' least rounds, 14.9 minutes measured,
            # did not fit the 14.7 left (2 of 11 tables not measured); the run ends about half a minute before its budget
            budget_s=43 * 60,
            target_rel_half_width=0.10,
            vus=[50],
            perf_test_rows=[1],
            users_limits=[20],
            # 22 stacks × 12 tables after the headline were 186 cells in bench15 (2026-11-28): at 1 s windows after a
            # 0.5 s re-warm and a 1 s warm-up, their 2 rounds took 13 min; the headline gets the rest of the budget,
            # its own least rounds at the least (pipeline/rounds.py `moving_deadline`)
            later_tables=LaterTables(duration_s=1, rewarm_s=0.5, warmup_cap_s=1, repetitions=2),
        ),
        Profile(
            name="ab",
            description=("`pgarena ab`: two versions of one stack on perf-test (1 row) and users (20) at 50 VUs, in "
                         "interleaved rounds, both restarted every 10, until head/base clears the regression floor "
                         "in both or the 45-minute budget (builds included) is spent"),
            warmup_s=1,
            warmup_cap_s=10,
            # 1 s windows (the re-warm stays 1 s): perf-test's per-round log-ratio sd was 0.107 in win1-1 against
            # 0.126–0.144 in 2 s windows (selfab4-1..3), at 2.7 s per window slot against 3.9 s
            duration_s=1,
            repetitions=3,
            max_repetitions=400,  # the budget, not a cap, ends an A/B: a self-A/B needs ~80 rounds at log-sd 0.14
            cell_budget_s=800,
            # judged over blocks of executions (analysis/executions.py) with the gate's one-sided bounds, two
            # identical builds at a per-round log-sd of ~0.14 need a median of ~80 rounds, 150 in one run of ten,
            # to clear a 5 % floor (tests/unit/test_executions.py)
            budget_s=45 * 60,
            vus=[50],
            perf_test_rows=[1],
            users_limits=[20],
            workloads=["perf-test", "users"],
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


