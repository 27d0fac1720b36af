"""Reports rendered from results.json only (so they can be regenerated without re-running load)."""

from __future__ import annotations

from pathlib import Path

from pgarena.atomic import write_text_atomic
from pgarena.report.html import render_html
from pgarena.report.markdown import render_markdown
from pgarena.results import RunResults

EXPORTERS = {"report.md": render_markdown, "report.html": render_html}
"""File name → renderer; every exporter takes the RunResults and returns the document's text."""


def write_reports(results: RunResults, run_dir: Path) -> list[Path]:
    """Render every exporter into `run_dir` (each file replaced atomically); return the written paths."""
    written = []
    for name, render in EXPORTERS.items():
        path = run_dir / name
        write_text_atomic(path, render(results))
        written.append(path)
    return written
