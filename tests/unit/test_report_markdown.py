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


def test_markdown_titles_relative_rates_and_prints_lower_bounds():
    """Issue 10 items 4-6: a share of each stack's own peak is titled so and not ranked; a shared rate
    is titled and ranked by p99; a p99 that counts timeouts is printed '≥'; throughput is 2xx/s."""
    text = render_markdown(sample_results())
    assert "### perf-test — open model, 50 % of each stack's own peak, ≤ 100 in flight, 1 Record" in text
    assert "2,000 req/s offered to every stack" in text and "`#` ranks p99 latency" in text
    relative = text.split("50 % of each stack's own peak")[1].split("###")[0]
    assert "| – | go-fast |" in relative and "| 1 | go-fast |" not in relative
    assert "≥ 10,000ms" in text
    assert "| 2xx/s (median) |" in text and "Requests/s (median)" not in text


def test_markdown_says_when_no_open_level_is_shared():
    results = sample_results()
    results.cells = [c for c in results.cells if c.arrival_rate_spec != "2000"]
    assert "No open-model level was shared by every stack" in render_markdown(results)
    assert "No open-model level was shared" not in render_markdown(sample_results())
