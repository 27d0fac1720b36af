"""Reports rendered from results.json only (so they can be regenerated without re-running load)."""

from __future__ import annotations

from pathlib import Path

from pgarena.report.html import render_html
from pgarena.report.markdown import render_markdown
from pgarena.results.atomic import write_text_atomic
from pgarena.results.models import RunResults

EXPORTERS = {"report.md": render_markdown, "report.html": render_html}
"""File name → renderer; every exporter takes the RunResults and returns the document's text."""


def with_baseline(results: RunResults, baseline: str) -> RunResults:
    """The results with `baseline` as the stack every ratio is also given to (overrides the run's
    `--baseline`); ValueError naming the run's stacks when `baseline` is not one of them."""
    known = list(dict.fromkeys([s.id for s in results.stacks] + [c.stack for c in results.cells]))
    if baseline not in known:
        raise ValueError(f"--baseline {baseline}: not a stack of run {results.run_id} "
                         f"(its stacks: {', '.join(known) or 'none'})")
    return results.model_copy(update={"config": {**results.config, "baseline": baseline}})


def write_reports(results: RunResults, run_dir: Path) -> list[Path]:
    """Render every exporter into `run_dir` (each file replaced atomically); return the written paths."""
    written = []
    for name, render in EXPORTERS.items():
        path = run_dir / name
        write_text_atomic(path, render(results))
        written.append(path)
    return written
