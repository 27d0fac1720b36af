"""`pgarena ab`: two versions of one stack in the same interleaved rounds, with a CI exit code."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from pgarena.analysis.abgate import DEFAULT_RESTART_EVERY
from pgarena.cli.common import PROJECT_DIR, check_run_id, err, execute_run, fail, out, print_outputs, run_config
from pgarena.cli.history import record_history
from pgarena.cli.options import (
    DbOpt,
    HistoryUrlOpt,
    ProfileOpt,
    ResultsDirOpt,
    RunIdOpt,
    StacksDirOpt,
    WorkloadsOpt,
    int_list,
    name_list,
)
from pgarena.pipeline.context import RunError
from pgarena.pipeline.runner import new_run_id
from pgarena.results.store import load

AB_PROFILE = "ab"
"""`pgarena ab`'s profile when it names none: the budget, not a cap of rounds, ends it."""


def ab(
    stack: Annotated[str, typer.Argument(help="the stack whose two versions are compared")],
    base: Annotated[str, typer.Option(help="the base version: 'current', a name of the stack.toml's \\[versions], "
                                           "git:<ref>, or a folder holding the stack at another version")] = "current",
    head: Annotated[str, typer.Option(help="the head version (the same kinds as --base)")] = "current",
    fail_on_regression: Annotated[Optional[str], typer.Option(
        metavar="PCT", help="exit 1 when the head is surely slower than (100 − PCT) % of the base in a table, 0 when "
                            "every table rules that out, 2 when the budget ended before it could tell; e.g. 5%")] = None,
    profile: ProfileOpt = AB_PROFILE,
    workloads: WorkloadsOpt = None,
    budget: Annotated[Optional[str], typer.Option(help="wall-clock budget, builds included (e.g. 20m)")] = None,
    vus: Annotated[Optional[str], typer.Option(help="load levels (connections/VUs), e.g. 50")] = None,
    rows: Annotated[Optional[str], typer.Option(help="perf-test rows, e.g. 10")] = None,
    limits: Annotated[Optional[str], typer.Option(help="users limits, e.g. 20")] = None,
    duration: Annotated[Optional[float], typer.Option(help="seconds per measured window")] = None,
    restart_every: Annotated[int, typer.Option(
        metavar="ROUNDS", help="restart both sides every this many rounds, so the verdict samples executions, not "
                               "one process per side (0: never; docs/authors.md)")] = DEFAULT_RESTART_EVERY,
    database_url: DbOpt = None,
    history_url: HistoryUrlOpt = None,
    summary: Annotated[Optional[Path], typer.Option(
        help="also write the Markdown summary here (e.g. for a pull-request comment)")] = None,
    run_id: RunIdOpt = None,
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
        raise fail(f"--fail-on-regression: {exc}") from None
    check_run_id(run_id)
    run_id = run_id or new_run_id()
    try:
        plan = prepare_ab(stacks_dir, stack, base, head, results_dir / ".ab" / run_id)
    except (RunError, OSError) as exc:
        raise fail(str(exc)) from None
    config = run_config(profile, stacks=[plan.base.stack_id, plan.head.stack_id], workloads=name_list(workloads),
                        budget_s=budget, vus=int_list(vus, "--vus"), perf_test_rows=int_list(rows, "--rows"),
                        users_limits=int_list(limits, "--limits"), duration_s=duration, database_url=database_url,
                        run_id=run_id, stacks_dir=plan.stacks_dir, results_dir=results_dir, schedule="interleaved",
                        baseline=plan.base.stack_id, equivalence_margin=margin, regression_margin=margin,
                        restart_every=restart_every or None)
    run_dir = record_history(execute_run(config, "run"), history_url, plan.names)
    gate = ab_gate(load(run_dir), plan.base.stack_id, plan.head.stack_id, margin)
    text = ab_markdown(gate, title=f"pgarena ab {stack}: {plan.base.label} → {plan.head.label}",
                       report_link="report.html")
    for path in [run_dir / "ab-summary.md", *([summary] if summary else [])]:
        path.write_text(text, encoding="utf-8")
        out.print(f"Summary: {path}", highlight=False, markup=False)
    print(text)
    print_outputs(run_dir)
    if fail_on_regression is not None and gate.exit_code:
        err.print(gate.sentence(), highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(gate.exit_code)
