"""`pgarena run`: the whole pipeline with every option of a run, or a resumed run."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Optional

import typer

from pgarena.analysis.sharedrates import slowest_peaks
from pgarena.cli.common import PROJECT_DIR, budget_start, execute_run, fail, print_outputs, run_config
from pgarena.cli.history import record_history
from pgarena.cli.options import (
    AdminDbOpt,
    ConfidenceOpt,
    DbNameOpt,
    DbOpt,
    DbPasswordOpt,
    DbPortOpt,
    DbUserOpt,
    HistoryUrlOpt,
    OverwriteOpt,
    PostgresBinOpt,
    ProfileOpt,
    ResultsDirOpt,
    RunIdOpt,
    StacksDirOpt,
    StacksOpt,
    TargetOpt,
    WorkloadsOpt,
    int_list,
    name_list,
    target_urls,
)
from pgarena.config.defaults import DEFAULT_WIRE_LOAD_MAX_REQUESTS, DEFAULT_WIRE_LOAD_S
from pgarena.config.profiles import DEFAULT_PROFILE
from pgarena.pipeline.context import RunError
from pgarena.pipeline.runner import load_for_resume
from pgarena.results.store import ResultsError, load


def run(
    stacks: StacksOpt = None,
    workloads: WorkloadsOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    target: TargetOpt = None,
    engine: Annotated[Optional[str], typer.Option(help="load generator: oha (default) or k6")] = None,
    repetitions: Annotated[Optional[int], typer.Option(
        help="measured windows per cell (exact, unless --max-repetitions is given: then the minimum)")] = None,
    max_repetitions: Annotated[Optional[int], typer.Option(
        help="repeat up to this many windows while the RPS interval is wider than --target-width")] = None,
    target_width: Annotated[Optional[float], typer.Option(
        help="stop repeating once the 95 % RPS interval is within ± this fraction of the mean, e.g. 0.02")] = None,
    cell_budget: Annotated[Optional[float], typer.Option(help="measured seconds after which a cell stops")] = None,
    budget: Annotated[Optional[str], typer.Option(
        help="wall-clock budget of the whole run, builds included (e.g. 30m, 1h30m): the interleaved rounds go "
             "to the pairs still open and stop when the next round would overrun it (default: the profile's)")] = None,
    budget_from: Annotated[Optional[float], typer.Option(
        help="Unix time the --budget counts from (default: this command's start); `make bench` passes its own "
             "start, so that the setup before the run is inside the budget")] = None,
    confidence: ConfidenceOpt = None,
    margin: Annotated[Optional[float], typer.Option(
        help="equivalence margin: two stacks whose ratio's interval lies within [1/(1+m), 1+m] are 'equivalent' "
             "(default 0.10)")] = None,
    rates: Annotated[Optional[str], typer.Option(
        help="open-model arrival rates: requests/s or % of the closed-model peak, e.g. 50%,90%,2000")] = None,
    shared_rates: Annotated[Optional[str], typer.Option(
        help="open-model levels shared by every stack: shares of the slowest stack's closed-model peak in "
             "--shared-rates-from, e.g. 50%,90%")] = None,
    shared_rates_from: Annotated[Optional[Path], typer.Option(
        help="an earlier run (folder or results.json) whose slowest closed-model peaks set --shared-rates")] = None,
    open_connections: Annotated[Optional[int], typer.Option(help="open model: most requests in flight")] = None,
    slo_p99: Annotated[Optional[float], typer.Option(
        help="search each stack's max sustainable rate with p99 at most this many ms (and < 1 % errors)")] = None,
    slo_steps: Annotated[Optional[int], typer.Option(help="measured windows an SLO search may use")] = None,
    headroom: Annotated[Optional[bool], typer.Option(
        "--headroom/--no-headroom", help="measure the generator's ceiling against a trivial endpoint")] = None,
    ceiling_seconds: Annotated[Optional[int], typer.Option(
        help="seconds of each pgbench run of the database's own ceiling (3 runs per workload and cell condition; 0: not measured)")] = None,
    duration: Annotated[Optional[float], typer.Option(help="seconds per measured window")] = None,
    warmup: Annotated[Optional[float], typer.Option(
        help="least warm-up seconds per cell (each cell warms until its throughput is steady)")] = None,
    warmup_cap: Annotated[Optional[float], typer.Option(help="most warm-up seconds per cell")] = None,
    seed: Annotated[Optional[int], typer.Option(
        help="seed of the shuffled stack order (default: random, recorded in results.json)")] = None,
    vus: Annotated[Optional[str], typer.Option(help="load levels (connections/VUs), e.g. 1,50,100")] = None,
    rows: Annotated[Optional[str], typer.Option(help="perf-test rows, e.g. 1,10,100,500")] = None,
    limits: Annotated[Optional[str], typer.Option(help="users limits, e.g. 20,1000")] = None,
    post_records: Annotated[Optional[str], typer.Option(help="perf-post rows per request, e.g. 10,100")] = None,
    nested_depths: Annotated[Optional[str], typer.Option(help="perf-nested depths (1-3), e.g. 1,2,3")] = None,
    payload_kb: Annotated[Optional[str], typer.Option(help="perf-large-payload sizes in KiB, e.g. 100,500")] = None,
    pool_size: Annotated[Optional[str], typer.Option(
        help="database connections per stack (all its processes), or several as a load dimension, e.g. 10,50 "
             "(each stack restarted at each; default 10)")] = None,
    db_rtt: Annotated[Optional[str], typer.Option(
        "--db-rtt", help="round trips added between every stack and PostgreSQL, a load dimension: e.g. 0,1ms,2ms "
                         "(through Toxiproxy, built from the Go module proxy and cached)")] = None,
    stack_rtt: Annotated[Optional[str], typer.Option(
        "--stack-rtt", help="round trip added between the generator and every stack, e.g. 1ms (a Toxiproxy proxy in "
                            "front of each stack; pgarena's verification goes direct)")] = None,
    netns: Annotated[bool, typer.Option(
        "--netns", help="the generator, the stacks and PostgreSQL each in a network namespace pgarena creates and "
                        "removes (root; traffic crosses veth links instead of the loopback)")] = False,
    topology: Annotated[Optional[Path], typer.Option(
        "--topology", help="a topology file: which host (local, a network namespace, an SSH destination) each "
                           "role lives on, e.g. examples/topology-netns.toml (docs/topology.md)")] = None,
    wire_under_load: Annotated[bool, typer.Option(
        "--wire-under-load", help="after the wire observer's bursts on each stack's second, unmeasured start, also "
                                  "load each workload through it at its highest VU count for a few seconds: round "
                                  "trips, messages, bytes, statements and the pool's connections under load, beside "
                                  "the bursts' (no measured figure goes through the observer)")] = False,
    wire_load_seconds: Annotated[Optional[float], typer.Option(
        help=f"--wire-under-load: seconds of load per workload (default {DEFAULT_WIRE_LOAD_S:g})")] = None,
    wire_load_requests: Annotated[Optional[int], typer.Option(
        help=f"--wire-under-load: most requests per workload, the generator's rate being this over the seconds "
             f"(default {DEFAULT_WIRE_LOAD_MAX_REQUESTS:,})")] = None,
    workers: Annotated[Optional[int], typer.Option(help="worker processes/threads per stack")] = None,
    generator_cpus: Annotated[Optional[str], typer.Option(help="CPUs of the load generator, e.g. 0")] = None,
    server_cpus: Annotated[Optional[str], typer.Option(help="CPUs of stack + PostgreSQL, e.g. 1")] = None,
    http_timeout: Annotated[Optional[float], typer.Option(help="seconds before a request counts as timed out")] = None,
    database_url: DbOpt = None,
    admin_database_url: AdminDbOpt = None,
    allow_overwrite: OverwriteOpt = False,
    db_port: DbPortOpt = None,
    db_user: DbUserOpt = None,
    db_password: DbPasswordOpt = None,
    db_name: DbNameOpt = None,
    postgres_bin: PostgresBinOpt = None,
    run_id: RunIdOpt = None,
    stacks_dir: StacksDirOpt = PROJECT_DIR / "stacks",
    results_dir: ResultsDirOpt = PROJECT_DIR / "results",
    resume: Annotated[Optional[Path], typer.Option(
        help="continue an interrupted run in this folder; its stored settings are used (give --database-url, "
             "--admin-database-url and --db-password again if it had them), finished cells are kept")] = None,
    schedule: Annotated[Optional[str], typer.Option(
        help="interleaved (default: all stacks up together, rounds in a fresh random order) or sequential "
             "(stack after stack)")] = None,
    schedule_seed: Annotated[Optional[int], typer.Option(
        "--schedule-seed", help="seed of the interleaved rounds' order (default: random, recorded)")] = None,
    rewarm: Annotated[Optional[float], typer.Option(
        help="interleaved: uncounted seconds of load before each measured window (default: the warm-up, ≤ 2 s)")] = None,
    idle_rewarm: Annotated[Optional[float], typer.Option(
        help="interleaved: up to this many more seconds of re-warm before a window of a stack that had no load for "
             "over 15 s, in full after 35 s (default 1.5; 0: none)")] = None,
    baseline: Annotated[Optional[str], typer.Option(
        help="a stack whose paired ratio every other stack's figure is also given to")] = None,
    generators: Annotated[Optional[int], typer.Option(
        help="k6 processes per window on this host, each an execution segment of the load, merged exactly "
             "(needs --engine k6; default 1)")] = None,
    history_url: HistoryUrlOpt = None,
) -> None:
    """The whole pipeline: database, build, start, verify, load, results.json and report.md."""
    if resume is not None:
        if budget_from is not None:
            raise fail("--budget-from is for a new run: a resumed run's budget counts from the resume")
        try:
            config, previous = load_for_resume(resume, database_url=database_url,
                                               admin_database_url=admin_database_url, db_password=db_password)
        except RunError as exc:
            raise fail(str(exc)) from None
        print_outputs(record_history(execute_run(config, "run", resume=(resume, previous)), history_url))
        return
    peaks: dict[str, float] | None = None
    if shared_rates_from is not None:
        try:
            peaks = slowest_peaks(load(shared_rates_from))
        except ResultsError as exc:
            raise fail(str(exc)) from None
        if not peaks:
            raise fail(f"{shared_rates_from}: no valid closed-model cell to set --shared-rates from")
    config = run_config(
        profile, stacks=name_list(stacks), workloads=name_list(workloads), engine=engine, repetitions=repetitions,
        max_repetitions=max_repetitions, target_rel_half_width=target_width, cell_budget_s=cell_budget,
        budget_s=budget, equivalence_margin=margin, confidence_level=confidence, arrival_rates=name_list(rates),
        shared_rates=name_list(shared_rates), shared_rate_peaks=peaks,
        shared_rates_from=str(shared_rates_from) if shared_rates_from else None,
        open_connections=open_connections, slo_p99_ms=slo_p99,
        slo_budget_steps=slo_steps, headroom=headroom, ceiling_s=ceiling_seconds, duration_s=duration,
        warmup_s=warmup, warmup_cap_s=warmup_cap, seed=seed,
        vus=int_list(vus, "--vus"), perf_test_rows=int_list(rows, "--rows"),
        users_limits=int_list(limits, "--limits"), post_records=int_list(post_records, "--post-records"),
        nested_depths=int_list(nested_depths, "--nested-depths"), payload_kb=int_list(payload_kb, "--payload-kb"),
        pool_sizes=int_list(pool_size, "--pool-size"), workers=workers, db_rtt_ms=name_list(db_rtt),
        stack_rtt_ms=stack_rtt, netns=netns or None, topology=str(topology) if topology else None,
        generator_cpus=int_list(generator_cpus, "--generator-cpus"),
        server_cpus=int_list(server_cpus, "--server-cpus"),
        http_timeout_s=http_timeout, database_url=database_url, admin_database_url=admin_database_url,
        allow_overwrite=allow_overwrite or None, db_port=db_port, db_user=db_user, db_password=db_password,
        db_name=db_name, postgres_bin=postgres_bin, run_id=run_id, stacks_dir=stacks_dir, results_dir=results_dir,
        schedule=schedule, schedule_seed=schedule_seed, rewarm_s=rewarm, idle_rewarm_s=idle_rewarm, baseline=baseline,
        generators=generators,
        targets=target_urls(target), wire_under_load=wire_under_load or None, wire_load_s=wire_load_seconds,
        wire_load_max_requests=wire_load_requests,
    )
    print_outputs(record_history(execute_run(config, "run", budget_from=budget_start(budget_from, time.time())),
                                 history_url))
