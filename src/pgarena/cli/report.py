"""Commands that read stored runs only: `pgarena report`, `pgarena compare` and `pgarena schema`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError

from pgarena.analysis import compare as comparing
from pgarena.cli.common import err, fail, out
from pgarena.pipeline.runner import describe_os_error
from pgarena.report import compare as compare_view
from pgarena.report import with_baseline, write_reports
from pgarena.results.store import ResultsError, json_schema, load


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
        raise fail(str(exc)) from None
    folder = run_dir if run_dir.is_dir() else run_dir.parent
    try:
        written = write_reports(results, folder)
    except OSError as exc:
        raise fail(f"cannot write the reports: {describe_os_error(exc)}") from None
    for path in written:
        out.print(f"Report: {path}")


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
            raise fail(str(exc)) from None
        except ValidationError as exc:
            raise fail(f"{path}: not a valid results file: {exc.errors()[0]['msg']}") from None
    results_a, results_b = runs
    comparison = comparing.compare_runs(results_a, results_b, min_change=min_change / 100)
    if comparison.differences:
        err.print("[bold red]WARNING: the environments differ in what matters:[/]", highlight=False)
        for line in compare_view.warning_lines(comparison):
            err.print(f"  {line}", style="red", highlight=False, markup=False, soft_wrap=True)
        if strict:
            raise fail("refusing to compare (--strict): the environments differ")
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
        raise fail(f"cannot write the comparison: {describe_os_error(exc)}") from None
    for path in written:
        out.print(f"Comparison: {path}", highlight=False, markup=False)
    if fail_on_regression is not None:
        failing = comparison.regressions(fail_on_regression / 100)
        if comparison.failed_in_b:
            raise fail(f"{len(comparison.failed_in_b)} cell(s) measured in A failed in B: "
                       + "; ".join(comparison.failed_in_b), code=1)
        if failing:
            raise fail(f"{len(failing)} cell(s) lost at least {fail_on_regression:g} % RPS (significant): "
                       + "; ".join(f"{c.label} {c.rps.change:+.1%}" for c in failing), code=1)


def schema() -> None:
    """Print the JSON Schema of results.json (published as docs/results.schema.json)."""
    print(json.dumps(json_schema(), indent=2))
