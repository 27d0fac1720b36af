"""Measurements of the machine and the database rather than of stacks: `pgarena calibrate` (the A/A check) and
`pgarena param-modes` (literals vs bound parameters)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from pgarena.cli.common import PROJECT_DIR, SOURCE_DIR, fail, guarded, out, run_config
from pgarena.cli.options import ConfidenceOpt, DbOpt, ProfileOpt, ResultsDirOpt, StacksDirOpt, int_list, name_list
from pgarena.config.defaults import default_cpu_sets
from pgarena.config.profiles import DEFAULT_PROFILE
from pgarena.db.postgres import PostgresError
from pgarena.pipeline import calibrate as calibration
from pgarena.pipeline.runner import new_run_id
from pgarena.report.calibration import verdict_line


def calibrate(
    stack: Annotated[str, typer.Option(help="the stack copied")] = calibration.DEFAULT_STACK,
    copies: Annotated[int, typer.Option(help="identical copies measured as different stacks")] = calibration.DEFAULT_COPIES,
    workloads: Annotated[str, typer.Option(help="comma-separated workloads")] = ",".join(calibration.DEFAULT_WORKLOADS),
    vus: Annotated[str, typer.Option(help="closed-model levels, e.g. 1,50")] = ",".join(map(str, calibration.DEFAULT_VUS)),
    profile: ProfileOpt = DEFAULT_PROFILE,
    engine: Annotated[Optional[str], typer.Option(help="load generator: oha (default) or k6")] = None,
    duration: Annotated[Optional[float], typer.Option(help="seconds per measured window")] = None,
    rewarm: Annotated[Optional[float], typer.Option(
        help="uncounted seconds of load before each measured window (default: the profile's)")] = None,
    confidence: ConfidenceOpt = None,
    budget: Annotated[Optional[str], typer.Option(
        help="wall-clock budget of the check, build included (e.g. 10m; default: the profile's)")] = None,
    run_id: Annotated[Optional[str], typer.Option(help="name of the calibration's folder (default: timestamp)")] = None,
    stacks_dir: StacksDirOpt = PROJECT_DIR / "stacks",
    results_dir: ResultsDirOpt = PROJECT_DIR / "results",
) -> None:
    """A/A check of this machine: copies of one stack (perf-test rows=1, users limit=20, static) measured as
    different stacks, every pair of copies raced within the budget; reports how noisy the machine is, whether
    every copy-vs-copy interval lies within the equivalence margin (sharp) and what difference it resolves in
    what time.

    Exit codes: 0 no order claimed among the copies, 1 an order was claimed (the check failed), 2 a user error.
    """
    config = run_config(profile, workloads=name_list(workloads), vus=int_list(vus, "--vus"), engine=engine,
                        duration_s=duration, rewarm_s=rewarm, confidence_level=confidence, budget_s=budget,
                        perf_test_rows=[calibration.DEFAULT_ROWS], users_limits=[calibration.DEFAULT_LIMIT],
                        stacks_dir=stacks_dir, results_dir=results_dir, run_id=run_id)
    done = guarded(lambda command_line, log, progress: calibration.calibrate(
        config, stack_id=stack, copies=copies, project_dir=SOURCE_DIR, command_line=command_line, log=log,
        progress=progress))
    print(done.report.read_text(encoding="utf-8"))
    out.print(f"Calibration: {done.report}")
    out.print(f"Run report:  {done.run_dir / 'report.md'}")
    if not done.check.passed:
        raise fail(verdict_line(done.check), code=1)


def param_modes(
    rows: Annotated[str, typer.Option(help="perf-test rows to measure")] = "1,100",
    clients: Annotated[int, typer.Option(help="pgbench clients")] = 8,
    seconds: Annotated[int, typer.Option(help="seconds per measurement")] = 5,
    database_url: DbOpt = None,
    results_dir: ResultsDirOpt = PROJECT_DIR / "results",
) -> None:
    """Measure perf_test's database cost with literals vs bound parameters (pgbench), for docs/workloads.md."""
    from pgarena.db.data import load_workload_data
    from pgarena.db.cluster import provide_database
    from pgarena.pipeline.parammodes import markdown, measure

    generator_cpus, server_cpus = default_cpu_sets()
    workdir = results_dir / f"param-modes-{new_run_id()}"
    try:
        with provide_database(workdir, database_url=database_url, cpus=server_cpus) as db:
            load_workload_data(db, ["perf-test"])
            out.print(markdown(measure(db, rows=int_list(rows, "--rows") or [1], clients=clients, seconds=seconds,
                                       cpus=generator_cpus)), markup=False)
    except PostgresError as exc:
        raise fail(str(exc)) from None
    out.print(f"pgbench on CPUs {generator_cpus}, PostgreSQL on {server_cpus}; {clients} clients, {seconds} s each.")
