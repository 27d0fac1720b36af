"""Golden-file test of the Markdown report (the plain-text twin of report.html) on a crafted run.

`pytest tests/unit/test_report_markdown.py --update-golden` rewrites tests/golden/report.md after an
intended change; review the diff before committing it.
"""

from __future__ import annotations

from pathlib import Path

from pgarena.report.markdown import render_markdown
from tests.fixtures.report_run import sample_results

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "report.md"


def test_markdown_report_matches_golden(update_golden):
    text = render_markdown(sample_results())
    if update_golden:
        GOLDEN.write_text(text, encoding="utf-8")
    assert GOLDEN.exists(), "no golden file yet: run with --update-golden"
    assert text == GOLDEN.read_text(encoding="utf-8"), "report.md changed; if intended, rerun with --update-golden"


def test_markdown_shows_ties_noise_slo_sweep_and_cold_start():
    text = render_markdown(sample_results())
    assert "1–2" in text or "2–3" in text, "overlapping intervals must show a rank range"
    assert "| – |" in text, "noisy or invalid cells are listed without a rank"
    assert "## Max sustainable throughput under the SLO" in text and "| Offered req/s |" in text
    assert "## Cold start" in text and "Generator headroom" in text
