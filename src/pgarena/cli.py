"""Command line: turns arguments into a RunConfig, calls one library function, prints where things are.

User errors become one line on stderr and exit code 2; Ctrl-C exits 130 with the finished cells kept.
"""

from __future__ import annotations

import json
import re
import shlex
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Optional, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from pgarena.analysis import compare as comparing
from pgarena.analysis.sharedrates import slowest_peaks
from pgarena.config import run as cfg
from pgarena.config.stackdef import load_stacks
from pgarena.config.targets import TargetError, parse_targets
from pgarena.db.postgres import PostgresError
from pgarena.load.engines import EngineUnavailable, get_engine
from pgarena.pipeline import calibrate as calibration
from pgarena.pipeline.context import RunError
from pgarena.pipeline.progress import RunProgress
from pgarena.pipeline.runner import describe_os_error, execute, load_for_resume, new_run_id
from pgarena.report import compare as compare_view
from pgarena.report import with_baseline, write_reports
from pgarena.report.calibration import verdict_line
from pgarena.results.store import ResultsError, json_schema, load
from pgarena.verify.verification import failed_stacks

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Benchmark HTTP API stacks on PostgreSQL: verified answers, fair envelopes, repeatable numbers.",
)
err = Console(stderr=True)
out = Console(width=None if sys.stdout.isatty() else 160)

T = TypeVar("T")
PROJECT_DIR = Path.cwd()
SOURCE_DIR = Path(__file__).resolve().parents[2]
"""The checkout pgarena runs from (its git revision is recorded in results)."""


def _fail(message: str, code: int = 2) -> typer.Exit:
    message = " ".join(line.strip() for line in message.splitlines() if line.strip())  # one line, always
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def _ints(text: str | None, what: str) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise _fail(f"{what} must be comma-separated integers, got '{text}'") from None


def _names(text: str | None) -> list[str] | None:
    return None if text is None else [part.strip() for part in text.split(",") if part.strip()]


StacksOpt = Annotated[Optional[str], typer.Option("--stacks", help="comma-separated stack ids (default: all)")]
WorkloadsOpt = Annotated[Optional[str], typer.Option(help="comma-separated: perf-test,users,static")]
ProfileOpt = Annotated[str, typer.Option(help=f"load profile: {', '.join(cfg.PROFILES)}")]
DbOpt = Annotated[Optional[str], typer.Option("--database-url", help="use this server instead of a managed one")]
AdminDbOpt = Annotated[Optional[str], typer.Option(
    "--admin-database-url", help="with --database-url: a superuser or pg_read_all_stats role, for database accounting")]
OverwriteOpt = Annotated[bool, typer.Option(
    "--allow-overwrite", help="with --database-url: use a schema or role named pgarena that pgarena did not create")]
DbPortOpt = Annotated[Optional[int], typer.Option("--db-port", help="managed database: fixed port (default: a free one)")]
DbUserOpt = Annotated[Optional[str], typer.Option("--db-user", help="managed database: the stacks' role (default: pgarena)")]
DbPasswordOpt = Annotated[Optional[str], typer.Option("--db-password", help=(
    "managed database: that role's password; with --target: the password of pgarena's role on --database-url"))]
DbNameOpt = Annotated[Optional[str], typer.Option("--db-name", help="managed database: its name (default: pgarena)")]
PostgresBinOpt = Annotated[Optional[Path], typer.Option(
    "--postgres-bin", help="managed database: folder of initdb, pg_ctl and postgres (any version; "
                           "default: the newest of npm's PostgreSQL 18 from setup, PATH, pg_config, /usr/lib/postgresql/*/bin)")]
TargetOpt = Annotated[Optional[list[str]], typer.Option(
    "--target", metavar="ID=URL", help="a stack already deployed at URL (http/https base URL), verified and loaded "
                                       "but neither built, started nor stopped; repeatable or comma-separated; needs "
                                       "--database-url and --db-password (docs/contract.md, Remote targets)")]
StacksDirOpt = Annotated[Path, typer.Option(help="folder of stack definitions")]
HistoryUrlOpt = Annotated[Optional[str], typer.Option(
    "--history-url", help="the history store: a postgresql:// URL or an SQLite file (default: history.sqlite in "
                          "--results-dir); every run is recorded there (docs/authors.md)")]
ResultsDirOpt = Annotated[Path, typer.Option(help="where run folders are written")]


OPTION_OF_FIELD = {
    "warmup_s": "--warmup", "duration_s": "--duration", "cell_budget_s": "--cell-budget", "budget_s": "--budget",
    "equivalence_margin": "--margin",
    "target_rel_half_width": "--target-width", "perf_test_rows": "--rows", "users_limits": "--limits",
    "post_records": "--post-records", "nested_depths": "--nested-depths", "payload_kb": "--payload-kb",
    "arrival_rates": "--rates", "slo_p99_ms": "--slo-p99", "slo_budget_steps": "--slo-steps",
    "http_timeout_s": "--http-timeout", "max_repetitions": "--max-repetitions", "repetitions": "--repetitions",
    "open_connections": "--open-connections", "generator_cpus": "--generator-cpus",
    "server_cpus": "--server-cpus", "pool_size": "--pool-size", "database_url": "--database-url",
    "stacks_dir": "--stacks-dir", "results_dir": "--results-dir", "run_id": "--run-id", "db_rtt_ms": "--db-rtt",
    "stack_rtt_ms": "--stack-rtt", "netns": "--netns", "topology": "--topology",
    "generators": "--generators",
    "pool_sizes": "--pool-size",
    "targets": "--target",
}
"""RunConfig field → the command-line option that sets it, so that errors name what the user typed."""


def _option_names(message: str) -> str:
    """`message` with every RunConfig field name replaced by its command-line option."""
    return re.sub(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b|\brepetitions\b",
                  lambda m: OPTION_OF_FIELD.get(m.group(0), m.group(0)), message)


def _targets(values: list[str] | None) -> dict[str, str] | None:
    """--target values as {id: base URL}; a malformed one is a user error (one line, exit 2)."""
    if not values:
        return None
    try:
        return parse_targets(values)
    except TargetError as exc:
        raise _fail(str(exc)) from None


def _config(profile: str, **overrides) -> cfg.RunConfig:
    try:
        return cfg.build_config(profile=profile, project_dir=PROJECT_DIR, overrides=overrides)
    except ValidationError as exc:
        first = exc.errors()[0]
        message = _option_names(first["msg"].removeprefix("Value error, "))
        if first["loc"]:
            field = str(first["loc"][0])
            option = OPTION_OF_FIELD.get(field, f"--{field.replace('_', '-')}")
            message = f"{option}: {message}"
        raise _fail(message) from None
    except ValueError as exc:
        raise _fail(_option_names(str(exc))) from None


def _guarded(work: Callable[[str, Callable[[str], None], RunProgress], T]) -> T:
    """Call `work(command_line, log, progress)` as a run: SIGTERM ends it like Ctrl-C (exit 130, finished cells
    kept); a user's mistake is one line and exit 2."""
    def on_term(signum, frame):  # noqa: ARG001 — SIGTERM ends the run like Ctrl-C
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    command_line = shlex.join(["pgarena", *cfg.redact_command(sys.argv[1:])])
    try:
        return work(command_line, lambda line: out.print(line, highlight=False, soft_wrap=True, markup=False),
                    RunProgress(console=out))
    except (RunError, EngineUnavailable, PostgresError) as exc:
        raise _fail(str(exc)) from None
    except OSError as exc:  # a full disk or a read-only folder outside the run's own bookkeeping
        raise _fail(describe_os_error(exc)) from None
    except KeyboardInterrupt:
        err.print("interrupted: finished cells are kept in the run folder's results.json")
        raise typer.Exit(130) from None


def _execute(config: cfg.RunConfig, kind: str, resume: tuple[Path, object] | None = None) -> Path:
    return _guarded(lambda command_line, log, progress: execute(
        config, kind=kind, project_dir=SOURCE_DIR, command_line=command_line, log=log, progress=progress,  # type: ignore[arg-type]
        resume=resume))  # type: ignore[arg-type]


@app.command("list")
def list_stacks(
    stacks_dir: StacksDirOpt = PROJECT_DIR / "stacks",
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
    as_markdown: Annotated[bool, typer.Option("--markdown", help="a Markdown table (docs/stacks.md)")] = False,
) -> None:
    """List stacks (language, framework, driver, availability) and workloads."""
    stacks, errors = load_stacks(stacks_dir)
    if as_markdown:
        from pgarena.pipeline.catalogue import stacks_catalogue

        print(stacks_catalogue(stacks))
        return
    if as_json:
        data = {
            "stacks": [{**s.definition.model_dump(mode="json", exclude={"build", "run"}), "available": s.available,
                        "unavailable_reason": s.unavailable_reason} for s in stacks],
            "errors": [{"stack": e.stack_id, "message": e.message} for e in errors],
        }
        out.print_json(json.dumps(data))
        return
    grid = Table(title=f"Stacks in {stacks_dir}")
    for column in ("id", "language", "framework", "driver", "pooler", "workloads", "available"):
        grid.add_column(column)
    for s in stacks:
        d = s.definition
        grid.add_row(d.id, d.language, f"{d.framework} {d.framework_version}", f"{d.driver} {d.driver_version}",
                     d.pooler, ", ".join(d.workloads),
                     ("yes" if s.available else f"no — {s.unavailable_reason}")
                     + ("" if d.min_postgres is None else f" (needs PostgreSQL {d.min_postgres} or newer)")
                     + ("" if d.competes else " (a demonstration: never ranked)"))
    out.print(grid)
    for e in errors:
        err.print(f"[red]{e.stack_id}[/]: {e.message}", highlight=False)
    from pgarena.contract.workloads import WORKLOAD_NAMES

    out.print(f"Workloads: {', '.join(WORKLOAD_NAMES)}; routes and answers in docs/contract.md")


@app.command()
def verify(
    stacks: StacksOpt = None,
    workloads: WorkloadsOpt = None,
    profile: ProfileOpt = cfg.DEFAULT_PROFILE,
    target: TargetOpt = None,
    database_url: DbOpt = None,
    admin_database_url: AdminDbOpt = None,
    allow_overwrite: OverwriteOpt = False,
    db_port: DbPortOpt = None,
    db_user: DbUserOpt = None,
    db_password: DbPasswordOpt = None,
    db_name: DbNameOpt = None,
    postgres_bin: PostgresBinOpt = None,
    pool_size: Annotated[Optional[int], typer.Option(help="connections per stack")] = None,
    workers: Annotated[Optional[int], typer.Option(help="workers per stack")] = None,
    run_id: Annotated[Optional[str], typer.Option(help="name of the run folder (default: timestamp)")] = None,
    stacks_dir: StacksDirOpt = PROJECT_DIR / "stacks",
    results_dir: ResultsDirOpt = PROJECT_DIR / "results",
) -> None:
    """Build, start and verify stacks against the database; no load.

    Exit codes: 0 every stack passed, 1 a stack failed verification (a failed check, a ❌ column or
    database accounting, answers in a declared other shape (stack.toml [answer]), a bad-input case answered
    wrongly, or it did not build, start or keep running),
    2 a user error.
    """
    config = _config(profile, stacks=_names(stacks), workloads=_names(workloads), database_url=database_url,
                     admin_database_url=admin_database_url, allow_overwrite=allow_overwrite or None, db_port=db_port,
                     db_user=db_user, db_password=db_password, db_name=db_name, postgres_bin=postgres_bin, pool_size=pool_size, workers=workers, run_id=run_id, stacks_dir=stacks_dir,
                     results_dir=results_dir, targets=_targets(target))
    run_dir = _execute(config, "verify")
    failing = failed_stacks(load(run_dir))
    out.print(f"Report: {run_dir / 'report.md'}")
    for stack_id, why in failing.items():
        err.print(f"FAILED {stack_id}: {why}", highlight=False, markup=False, soft_wrap=True)
    if failing:
        raise _fail(f"verification failed: {len(failing)} stack(s): {', '.join(failing)}", code=1)


@app.command()
def run(
    stacks: StacksOpt = None,
    workloads: WorkloadsOpt = None,
    profile: ProfileOpt = cfg.DEFAULT_PROFILE,
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
    run_id: Annotated[Optional[str], typer.Option(help="name of the run folder (default: timestamp)")] = None,
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
    baseline: Annotated[Optional[str], typer.Option(
        help="a stack whose paired ratio every other stack's figure is also given to")] = None,
    generators: Annotated[Optional[int], typer.Option(
        help="k6 processes per window on this host, each an execution segment of the load, merged exactly "
             "(needs --engine k6; default 1)")] = None,
    history_url: HistoryUrlOpt = None,
) -> None:
    """The whole pipeline: database, build, start, verify, load, results.json and report.md."""
    if resume is not None:
        try:
            config, previous = load_for_resume(resume, database_url=database_url,
                                               admin_database_url=admin_database_url, db_password=db_password)
        except RunError as exc:
            raise _fail(str(exc)) from None
        _print_outputs(_record_history(_execute(config, "run", resume=(resume, previous)), history_url))
        return
    peaks: dict[str, float] | None = None
    if shared_rates_from is not None:
        try:
            peaks = slowest_peaks(load(shared_rates_from))
        except ResultsError as exc:
            raise _fail(str(exc)) from None
        if not peaks:
            raise _fail(f"{shared_rates_from}: no valid closed-model cell to set --shared-rates from")
    config = _config(
        profile, stacks=_names(stacks), workloads=_names(workloads), engine=engine, repetitions=repetitions,
        max_repetitions=max_repetitions, target_rel_half_width=target_width, cell_budget_s=cell_budget,
        budget_s=budget, equivalence_margin=margin, arrival_rates=_names(rates), shared_rates=_names(shared_rates), shared_rate_peaks=peaks,
        shared_rates_from=str(shared_rates_from) if shared_rates_from else None,
        open_connections=open_connections, slo_p99_ms=slo_p99,
        slo_budget_steps=slo_steps, headroom=headroom, ceiling_s=ceiling_seconds, duration_s=duration, warmup_s=warmup,
        warmup_cap_s=warmup_cap, seed=seed,
        vus=_ints(vus, "--vus"), perf_test_rows=_ints(rows, "--rows"),
        users_limits=_ints(limits, "--limits"), post_records=_ints(post_records, "--post-records"),
        nested_depths=_ints(nested_depths, "--nested-depths"), payload_kb=_ints(payload_kb, "--payload-kb"),
        pool_sizes=_ints(pool_size, "--pool-size"), workers=workers, db_rtt_ms=_names(db_rtt), stack_rtt_ms=stack_rtt,
        netns=netns or None, topology=str(topology) if topology else None,
        generator_cpus=_ints(generator_cpus, "--generator-cpus"), server_cpus=_ints(server_cpus, "--server-cpus"),
        http_timeout_s=http_timeout, database_url=database_url, admin_database_url=admin_database_url,
        allow_overwrite=allow_overwrite or None, db_port=db_port, db_user=db_user, db_password=db_password,
        db_name=db_name, postgres_bin=postgres_bin, run_id=run_id, stacks_dir=stacks_dir, results_dir=results_dir,
        schedule=schedule, schedule_seed=schedule_seed, rewarm_s=rewarm, baseline=baseline, generators=generators,
        targets=_targets(target),
    )
    _print_outputs(_record_history(_execute(config, "run"), history_url))


def _record_history(run_dir: Path, history_url: str | None, names: dict[str, tuple[str, str]] | None = None) -> Path:
    """Record a finished run in the history store; a store that cannot be written is a warning, not a failure."""
    from pgarena.history.points import run_points
    from pgarena.history.store import HistoryError, open_store

    try:
        store = open_store(run_dir.parent, history_url)
        try:
            stored = store.record(run_points(load(run_dir), names))
        finally:
            store.close()
        out.print(f"History: {stored} point(s) recorded in {store.where}", highlight=False, markup=False)
    except (HistoryError, ResultsError) as exc:
        err.print(f"warning: the run is not in the history: {exc}", highlight=False, markup=False, soft_wrap=True)
    return run_dir


def _print_outputs(run_dir: Path) -> None:
    out.print(f"Results: {run_dir / 'results.json'}")
    out.print(f"Report:  {run_dir / 'report.md'}")
    out.print(f"HTML:    {run_dir / 'report.html'}")


@app.command()
def report(run_dir: Annotated[Path, typer.Argument(help="a run folder (or its results.json)")],
           baseline: Annotated[Optional[str], typer.Option(
               help="a stack every other stack's ratio is also given to (overrides the run's --baseline)")] = None,
           ) -> None:
    """Re-render the reports of a run from its results.json only."""
    try:
        results = load(run_dir)
        if baseline is not None:
            results = with_baseline(results, baseline)
    except (ResultsError, ValueError) as exc:
        raise _fail(str(exc)) from None
    folder = run_dir if run_dir.is_dir() else run_dir.parent
    try:
        written = write_reports(results, folder)
    except OSError as exc:
        raise _fail(f"cannot write the reports: {describe_os_error(exc)}") from None
    for path in written:
        out.print(f"Report: {path}")


@app.command()
def compare(
    run_a: Annotated[Path, typer.Argument(metavar="RUN_A", help="the baseline run folder (or its results.json)")],
    run_b: Annotated[Path, typer.Argument(metavar="RUN_B", help="the run judged against it (folder or results.json)")],
    fail_on_regression: Annotated[Optional[float], typer.Option(
        metavar="PCT", min=0, help=(
            "exit 1 when a cell's RPS dropped significantly by at least PCT %. Each cell is tested alone (Welch, "
            "α = 0.05): with no real change a cell false-alarms up to 2.5 % of the time, 20 cells about 40 %, and "
            "run-to-run drift beyond PCT fails the gate whatever the code did (docs/compare.md, 'A CI gate')"))] = None,
    min_change: Annotated[float, typer.Option(
        metavar="PCT", min=0, help="smallest significant change, in %, that counts as a regression/improvement"
    )] = comparing.DEFAULT_MIN_CHANGE_PCT,
    strict: Annotated[bool, typer.Option(
        "--strict", help="refuse (exit 2) when the environments differ in what matters")] = False,
    out_dir: Annotated[Optional[Path], typer.Option(
        "--out", help="folder for compare-<run A>.md/.html (default: run B's folder)")] = None,
) -> None:
    """Compare two runs cell by cell: change, significance (Welch's t-test) and environment differences.

    Exit codes: 0 compared, 1 a regression reached --fail-on-regression, 2 refused or unreadable.
    The gate tests every cell alone, with no correction for many cells and without the machine's run-to-run
    drift in its variance: its false-alarm rate is stated in docs/compare.md ("A CI gate").
    """
    runs = []
    for path in (run_a, run_b):
        try:
            runs.append(load(path))
        except ResultsError as exc:
            raise _fail(str(exc)) from None
        except ValidationError as exc:
            raise _fail(f"{path}: not a valid results file: {exc.errors()[0]['msg']}") from None
    results_a, results_b = runs
    comparison = comparing.compare_runs(results_a, results_b, min_change=min_change / 100)
    if comparison.differences:
        err.print("[bold red]WARNING: the environments differ in what matters:[/]", highlight=False)
        for line in compare_view.warning_lines(comparison):
            err.print(f"  {line}", style="red", highlight=False, markup=False, soft_wrap=True)
        if strict:
            raise _fail("refusing to compare (--strict): the environments differ")
    if compare_view.noise_warning(comparison):
        err.print(f"note: {compare_view.noise_warning(comparison)}", style="yellow", highlight=False, markup=False,
                  soft_wrap=True)
    if sys.stdout.isatty() and out.width >= compare_view.TERMINAL_TABLE_MIN_WIDTH:
        out.print(compare_view.terminal_table(comparison))
    else:
        for line in compare_view.terminal_lines(comparison):
            print(line)
    for label, note in comparison.only_a + comparison.only_b + comparison.not_comparable:
        out.print(f"not compared: {label} ({note})", highlight=False, markup=False)
    out.print(compare_view.summary_text(comparison), highlight=False, markup=False)
    folder = out_dir or (run_b if run_b.is_dir() else run_b.parent)
    try:
        written = compare_view.write_outputs(comparison, folder)
    except OSError as exc:
        raise _fail(f"cannot write the comparison: {describe_os_error(exc)}") from None
    for path in written:
        out.print(f"Comparison: {path}", highlight=False, markup=False)
    if fail_on_regression is not None:
        failing = comparison.regressions(fail_on_regression / 100)
        if comparison.failed_in_b:
            raise _fail(f"{len(comparison.failed_in_b)} cell(s) measured in A failed in B: "
                        + "; ".join(comparison.failed_in_b), code=1)
        if failing:
            raise _fail(f"{len(failing)} cell(s) lost at least {fail_on_regression:g} % RPS (significant): "
                        + "; ".join(f"{c.label} {c.rps.change:+.1%}" for c in failing), code=1)


@app.command()
def calibrate(
    stack: Annotated[str, typer.Option(help="the stack copied")] = calibration.DEFAULT_STACK,
    copies: Annotated[int, typer.Option(help="identical copies measured as different stacks")] = calibration.DEFAULT_COPIES,
    workloads: Annotated[str, typer.Option(help="comma-separated workloads")] = ",".join(calibration.DEFAULT_WORKLOADS),
    vus: Annotated[str, typer.Option(help="closed-model levels, e.g. 1,50")] = ",".join(map(str, calibration.DEFAULT_VUS)),
    profile: ProfileOpt = cfg.DEFAULT_PROFILE,
    engine: Annotated[Optional[str], typer.Option(help="load generator: oha (default) or k6")] = None,
    duration: Annotated[Optional[float], typer.Option(help="seconds per measured window")] = None,
    budget: Annotated[Optional[str], typer.Option(
        help="wall-clock budget of the check, build included (e.g. 10m; default: the profile's)")] = None,
    run_id: Annotated[Optional[str], typer.Option(help="name of the calibration's folder (default: timestamp)")] = None,
    stacks_dir: StacksDirOpt = PROJECT_DIR / "stacks",
    results_dir: ResultsDirOpt = PROJECT_DIR / "results",
) -> None:
    """A/A check of this machine: copies of one stack (perf-test rows=1, users limit=20, static) measured as
    different stacks; reports how noisy the machine is and what difference it resolves in what time.

    Exit codes: 0 no order claimed among the copies, 1 an order was claimed (the check failed), 2 a user error.
    """
    config = _config(profile, workloads=_names(workloads), vus=_ints(vus, "--vus"), engine=engine,
                     duration_s=duration, budget_s=budget, perf_test_rows=[calibration.DEFAULT_ROWS],
                     users_limits=[calibration.DEFAULT_LIMIT], stacks_dir=stacks_dir, results_dir=results_dir,
                     run_id=run_id)
    done = _guarded(lambda command_line, log, progress: calibration.calibrate(
        config, stack_id=stack, copies=copies, project_dir=SOURCE_DIR, command_line=command_line, log=log,
        progress=progress))
    print(done.report.read_text(encoding="utf-8"))
    out.print(f"Calibration: {done.report}")
    out.print(f"Run report:  {done.run_dir / 'report.md'}")
    if not done.check.passed:
        raise _fail(verdict_line(done.check), code=1)


@app.command("param-modes")
def param_modes(
    rows: Annotated[str, typer.Option(help="perf-test rows to measure")] = "1,100",
    clients: Annotated[int, typer.Option(help="pgbench clients")] = 8,
    seconds: Annotated[int, typer.Option(help="seconds per measurement")] = 5,
    database_url: DbOpt = None,
    results_dir: ResultsDirOpt = PROJECT_DIR / "results",
) -> None:
    """Measure perf_test's database cost with literals vs bound parameters (pgbench), for docs/workloads.md."""
    from pgarena.db.cluster import provide_database
    from pgarena.db.data import load_workload_data
    from pgarena.pipeline.parammodes import markdown, measure

    generator_cpus, server_cpus = cfg.default_cpu_sets()
    workdir = results_dir / f"param-modes-{new_run_id()}"
    try:
        with provide_database(workdir, database_url=database_url, cpus=server_cpus) as db:
            load_workload_data(db, ["perf-test"])
            out.print(markdown(measure(db, rows=_ints(rows, "--rows") or [1], clients=clients, seconds=seconds,
                                       cpus=generator_cpus)), markup=False)
    except PostgresError as exc:
        raise _fail(str(exc)) from None
    out.print(f"pgbench on CPUs {generator_cpus}, PostgreSQL on {server_cpus}; {clients} clients, {seconds} s each.")


@app.command()
def schema() -> None:
    """Print the JSON Schema of results.json (published as docs/results.schema.json)."""
    print(json.dumps(json_schema(), indent=2))


@app.command()
def engines() -> None:
    """Show the load generators, their pinned versions and whether they are installed."""
    for name in ("oha", "k6"):
        engine = get_engine(name)
        try:
            out.print(f"{name}: {engine.binary} — {engine.version()} (pinned {engine.pinned_version})")
        except EngineUnavailable as exc:
            out.print(f"{name}: {exc}")


k8s_app = typer.Typer(no_args_is_help=True, help="Kubernetes: one cell as a k6-operator TestRun (docs/distributed.md).")
app.add_typer(k8s_app, name="k8s")


@k8s_app.command("export")
def k8s_export(
    url: Annotated[str, typer.Option(help="the stack's base URL as the cluster's pods reach it, e.g. "
                                          "http://my-stack.default.svc:8080")],
    workload: Annotated[str, typer.Option(help="the workload to load, e.g. users")],
    parameter: Annotated[Optional[int], typer.Option(help="its parameter (perf-test rows, users limit, ...)")] = None,
    vus: Annotated[int, typer.Option(help="closed model: VUs over all runners; open model: most in flight")] = 50,
    rate: Annotated[Optional[float], typer.Option(help="open model: requests/s over all runners")] = None,
    duration: Annotated[float, typer.Option(help="seconds of load")] = 30.0,
    parallelism: Annotated[int, typer.Option(help="k6 runner pods, each one execution segment")] = 2,
    name: Annotated[Optional[str], typer.Option(help="the TestRun's name (default pgarena-<workload>)")] = None,
    namespace: Annotated[Optional[str], typer.Option(help="namespace of every object (default: kubectl's)")] = None,
    stack: Annotated[str, typer.Option(help="the stack's id: recorded in the outputs, its routes read from "
                                            "--stacks-dir when it is there")] = "",
    http_timeout: Annotated[float, typer.Option(help="seconds before a request counts as timed out")] = (
        cfg.DEFAULT_HTTP_TIMEOUT_S),
    output_claim: Annotated[Optional[str], typer.Option(
        help="an existing PersistentVolumeClaim for the outputs (default: one is created, ReadWriteMany)")] = None,
    storage_class: Annotated[Optional[str], typer.Option(help="storage class of the created claim")] = None,
    separate: Annotated[bool, typer.Option("--separate", help="every runner on its own node")] = False,
    stacks_dir: StacksDirOpt = PROJECT_DIR / "stacks",
    out_file: Annotated[Optional[Path], typer.Option("--out", help="the manifest file (default <name>.yaml)")] = None,
) -> None:
    """Write a k6-operator TestRun (parallelism N), its script's ConfigMap, an outputs claim and a collector pod."""
    from pgarena.contract import workloads as wl
    from pgarena.load import k8s

    if workload in wl.WORKLOAD_NAMES and wl.PARAMETER_NAMES.get(workload) and parameter is None:
        raise _fail(f"--workload {workload} needs --parameter (its {wl.PARAMETER_NAMES[workload]})")
    routes: dict[str, str] = {}
    if stack:
        found = next((s for s in load_stacks(stacks_dir)[0] if s.id == stack), None)
        routes = dict(found.definition.routes) if found is not None else {}
    spec = k8s.ExportSpec(name=name or f"pgarena-{workload}", base_url=url, workload=workload, parameter=parameter,
                          vus=vus, duration_s=duration, parallelism=parallelism, stack=stack, rate=rate,
                          timeout_s=http_timeout, routes=routes, namespace=namespace, output_claim=output_claim,
                          storage_class=storage_class, separate=separate)
    try:
        path = k8s.export(spec, out_file or Path(f"{spec.name}.yaml"))
    except ValueError as exc:
        raise _fail(str(exc)) from None
    except OSError as exc:
        raise _fail(f"cannot write the manifest: {describe_os_error(exc)}") from None
    out.print(f"Manifest: {path} (k6-operator {k8s.K6_OPERATOR_VERSION} TestRun, {parallelism} runners); "
              "the commands that run it and collect its outputs: docs/distributed.md", highlight=False)


@app.command()
def ingest(
    outputs: Annotated[list[Path], typer.Argument(help="k6 outputs: folders or *.k6-summary.json files (raw "
                                                       "samples *.k6.csv.gz beside each)")],
    stack: Annotated[Optional[str], typer.Option(help="the stack's id (default: recorded in the outputs)")] = None,
    workload: Annotated[Optional[str], typer.Option(help="the workload (default: recorded in the outputs)")] = None,
    parameter: Annotated[Optional[int], typer.Option(help="its parameter (default: recorded in the outputs)")] = None,
    run_id: Annotated[Optional[str], typer.Option(help="name of the run folder (default: timestamp)")] = None,
    stacks_dir: StacksDirOpt = PROJECT_DIR / "stacks",
    results_dir: ResultsDirOpt = PROJECT_DIR / "results",
) -> None:
    """Turn the k6 outputs of a `k8s export` TestRun (one per runner pod) into a run: results.json and reports."""
    from pgarena.pipeline.ingest import IngestError
    from pgarena.pipeline.ingest import ingest as ingest_outputs

    if run_id is not None and not cfg.RUN_ID_PATTERN.fullmatch(run_id):
        raise _fail(f"--run-id '{run_id}' is not a plain folder name")
    command_line = shlex.join(["pgarena", *cfg.redact_command(sys.argv[1:])])
    try:
        run_dir = ingest_outputs(outputs, results_dir=results_dir, stacks_dir=stacks_dir, project_dir=SOURCE_DIR,
                                 command_line=command_line, run_id=run_id or new_run_id(), stack=stack,
                                 workload=workload, parameter=parameter)
    except IngestError as exc:
        raise _fail(str(exc)) from None
    except OSError as exc:
        raise _fail(describe_os_error(exc)) from None
    _print_outputs(run_dir)


@app.command()
def ab(
    stack: Annotated[str, typer.Argument(help="the stack whose two versions are compared")],
    base: Annotated[str, typer.Option(help="the base version: 'current', a name of the stack.toml's [versions], "
                                           "git:<ref>, or a folder holding the stack at another version")] = "current",
    head: Annotated[str, typer.Option(help="the head version (the same kinds as --base)")] = "current",
    fail_on_regression: Annotated[Optional[str], typer.Option(
        metavar="PCT", help="exit 1 when the head is surely slower than (100 − PCT) % of the base in a table, 0 when "
                            "every table rules that out, 2 when the budget ended before it could tell; e.g. 5%")] = None,
    profile: ProfileOpt = cfg.DEFAULT_PROFILE,
    workloads: WorkloadsOpt = None,
    budget: Annotated[Optional[str], typer.Option(help="wall-clock budget, builds included (e.g. 20m)")] = None,
    vus: Annotated[Optional[str], typer.Option(help="load levels (connections/VUs), e.g. 50")] = None,
    rows: Annotated[Optional[str], typer.Option(help="perf-test rows, e.g. 10")] = None,
    limits: Annotated[Optional[str], typer.Option(help="users limits, e.g. 20")] = None,
    duration: Annotated[Optional[float], typer.Option(help="seconds per measured window")] = None,
    database_url: DbOpt = None,
    history_url: HistoryUrlOpt = None,
    summary: Annotated[Optional[Path], typer.Option(
        help="also write the Markdown summary here (e.g. for a pull-request comment)")] = None,
    run_id: Annotated[Optional[str], typer.Option(help="name of the run folder (default: timestamp)")] = None,
    stacks_dir: StacksDirOpt = PROJECT_DIR / "stacks",
    results_dir: ResultsDirOpt = PROJECT_DIR / "results",
) -> None:
    """A/B: two versions of one stack measured in the same interleaved rounds; head/base per table.

    Exit codes with --fail-on-regression: 0 no regression beyond the margin, 1 a regression, 2 could not tell
    within the budget (or a user error). Without it: 0 once the run finished.
    """
    from pgarena.analysis.abgate import DEFAULT_REGRESSION_MARGIN, ab_gate, parse_margin
    from pgarena.pipeline.ab import prepare_ab
    from pgarena.report.ab import ab_markdown

    try:
        margin = parse_margin(fail_on_regression) if fail_on_regression else DEFAULT_REGRESSION_MARGIN
    except ValueError as exc:
        raise _fail(f"--fail-on-regression: {exc}") from None
    if run_id is not None and not cfg.RUN_ID_PATTERN.fullmatch(run_id):
        raise _fail(f"--run-id '{run_id}' is not a plain folder name")
    run_id = run_id or new_run_id()
    try:
        plan = prepare_ab(stacks_dir, stack, base, head, results_dir / ".ab" / run_id)
    except (RunError, OSError) as exc:
        raise _fail(str(exc)) from None
    config = _config(profile, stacks=[plan.base.stack_id, plan.head.stack_id], workloads=_names(workloads),
                     budget_s=budget, vus=_ints(vus, "--vus"), perf_test_rows=_ints(rows, "--rows"),
                     users_limits=_ints(limits, "--limits"), duration_s=duration, database_url=database_url,
                     run_id=run_id, stacks_dir=plan.stacks_dir, results_dir=results_dir, schedule="interleaved",
                     baseline=plan.base.stack_id, equivalence_margin=margin)
    run_dir = _record_history(_execute(config, "run"), history_url, plan.names)
    gate = ab_gate(load(run_dir), plan.base.stack_id, plan.head.stack_id, margin)
    text = ab_markdown(gate, title=f"pgarena ab {stack}: {plan.base.label} → {plan.head.label}",
                       report_link="report.html")
    for path in [run_dir / "ab-summary.md", *([summary] if summary else [])]:
        path.write_text(text, encoding="utf-8")
        out.print(f"Summary: {path}", highlight=False, markup=False)
    print(text)
    _print_outputs(run_dir)
    if fail_on_regression is not None and gate.exit_code:
        err.print(gate.sentence(), highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(gate.exit_code)


@app.command()
def history(
    stack: Annotated[Optional[str], typer.Argument(help="one stack's series (default: every stack's)")] = None,
    record: Annotated[Optional[list[Path]], typer.Option(
        help="first record these run folders (runs made before the history existed); repeatable")] = None,
    history_url: HistoryUrlOpt = None,
    out_file: Annotated[Optional[Path], typer.Option(
        "--out", help="the HTML page (default: history.html in --results-dir)")] = None,
    results_dir: ResultsDirOpt = PROJECT_DIR / "results",
) -> None:
    """List the recorded series (stack × cell × machine) with their change points and write the HTML page."""
    from pgarena.history.changes import OtavaMissing, change_points
    from pgarena.history.page import render_history
    from pgarena.history.points import run_points
    from pgarena.history.store import HistoryError, open_store, series

    try:
        store = open_store(results_dir, history_url)
        for run_dir in record or []:
            out.print(f"recorded {store.record(run_points(load(run_dir)))} point(s) of {run_dir}", highlight=False)
        points = store.points(stack)
        store.close()
    except (HistoryError, ResultsError) as exc:
        raise _fail(str(exc)) from None
    if not points:
        raise _fail(f"no run recorded in {store.where}" + (f" for stack {stack}" if stack else ""))
    for (stack_id, cell, machine), members in series(points).items():
        try:
            changes = [c.text() for c in change_points(members)]
        except OtavaMissing as exc:
            changes = [f"(no change points: {exc})"]
        print(f"{stack_id} · {cell} · machine {machine}: {len(members)} run(s), latest {members[-1].version} "
              f"{members[-1].rps_median:,.0f} 2xx/s")
        for line in changes:
            print(f"  change point: {line}")
    target = out_file or results_dir / "history.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_history(points, store=store.where, stack=stack), encoding="utf-8")
    out.print(f"HTML: {target}", highlight=False, markup=False)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
