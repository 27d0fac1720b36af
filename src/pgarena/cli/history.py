"""`pgarena history` (the recorded series and their change points), and recording a finished run there."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from pgarena.cli.common import PROJECT_DIR, err, fail, out
from pgarena.cli.options import HistoryUrlOpt, ResultsDirOpt
from pgarena.results.store import ResultsError, load


def record_history(run_dir: Path, history_url: str | None, names: dict[str, tuple[str, str]] | None = None) -> Path:
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
        raise fail(str(exc)) from None
    if not points:
        raise fail(f"no run recorded in {store.where}" + (f" for stack {stack}" if stack else ""))
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
