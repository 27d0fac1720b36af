"""The HTML report's payload against a golden file, and the page's structure (no browser needed).

Rewrite the golden file after an intended change with `pytest tests/unit/test_report_html.py --update-golden`
and review the diff.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pgarena.report import EXPORTERS, write_reports
from pgarena.report.html import html_payload, render_html
from tests.fixtures.report_run import sample_results

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "html_payload.json"


def test_payload_matches_golden(update_golden):
    payload = html_payload(sample_results())
    text = json.dumps(payload, indent=1, ensure_ascii=False) + "\n"
    if update_golden:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(text, encoding="utf-8")
    assert GOLDEN.exists(), f"{GOLDEN} missing: run pytest with --update-golden once"
    assert json.loads(text) == json.loads(GOLDEN.read_text(encoding="utf-8")), (
        "html_payload changed: if intended, rerun with --update-golden and review the diff")


def test_payload_is_deterministic_and_json():
    a, b = html_payload(sample_results()), html_payload(sample_results())
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_noisy_invalid_and_failed_cells_are_marked_and_not_ranked():
    rows = {(c["stack"], c["family"], c["level"]): c
            for table in html_payload(sample_results())["cells"] for c in table["rows"]}
    noisy = rows[("py-steady", "perf-test · 1 row", "50 VUs")]
    invalid = rows[("node-wrong", "perf-test · 1 row", "1 VU")]
    failed = rows[("node-wrong", "tx", "50 VUs")]
    assert noisy["marks"] == ["noisy"] and noisy["rank"] == "–"
    assert invalid["marks"] == ["invalid"] and invalid["rank"] == "–"
    assert failed["marks"] == ["failed"] and failed["rank"] == "–" and "rps_median" not in failed
    assert rows[("go-fast", "perf-test · 1 row", "1 VU")]["rank"] == "1–2"  # overlapping intervals tie


def test_headline_lists_ties_and_the_unranked():
    first = html_payload(sample_results())["headline"][0]
    assert (first["family"], first["level"]) == ("perf-test · 1 row", "1 VU")
    assert [b["stack"] for b in first["best"]] == ["go-fast", "py-steady"]
    assert {b["rank"] for b in first["best"]} == {"1–2"}
    assert first["unranked"] == [{"stack": "node-wrong", "why": "columns-wrong, queries-wrong"}]


def test_charts_without_data_are_not_built():
    sections = html_payload(sample_results())["sections"]
    kinds = {f["kind"] for figs in sections.values() for f in figs}
    assert kinds == {"throughput", "scaling-closed", "scaling-open", "latency", "cost", "memory", "scatter", "slo",
                     "cold-start"}
    # tx has one load level only: no scaling chart for it (a single point shows no scaling)
    assert [f["id"] for f in sections["scaling"]] == ["scaling-closed-perf-test-rows-1", "scaling-open-perf-test-rows-1"]
    # every figure has data
    assert all(f["data"] for figs in sections.values() for f in figs)


def test_rendered_page_is_self_contained():
    html = render_html(sample_results())
    assert "plotly.js v" in html  # inlined, not fetched
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=\"?https?:", html)
    assert html.count('data-chart="') == sum(len(f) for f in html_payload(sample_results())["sections"].values())
    assert 'title="2024-01-15T10:30:00.123Z lost microseconds of 10:30:00.123456"' in html
    assert "pgarena run --stacks go-fast,py-steady,node-wrong" in html


def test_report_html_is_an_exporter(tmp_path):
    assert "report.html" in EXPORTERS
    written = write_reports(sample_results(), tmp_path)
    assert tmp_path / "report.html" in written and (tmp_path / "report.html").stat().st_size > 1_000_000


def test_a_run_without_cells_renders_without_charts():
    results = sample_results().model_copy(update={"cells": [], "slo_searches": [], "kind": "verify",
                                                  "generator_headroom": None})
    for stack in results.stacks:
        stack.cold_start = None
    payload = html_payload(results)
    assert not any(payload["sections"].values()) and payload["cells"] == [] and payload["headline"] == []
    html = render_html(results)
    assert 'data-chart="' not in html and "No load cells in this run." in html


def test_a_run_mixing_engines_ranks_and_heads_each_engine_apart():
    """py-steady measured with k6 beside go-fast with oha: each is first among its engine's cells, the
    headline has one row per engine and the cell table names each cell's engine."""
    results = sample_results()
    for c in results.cells:
        if c.stack == "py-steady":
            c.engine = "k6"
    payload = html_payload(results)
    rows = [h for h in payload["headline"] if h["family"] == "perf-test · 1 row" and h["level"].startswith("1 VU")]
    assert [(h["level"], [b["stack"] for b in h["best"]]) for h in rows] == [
        ("1 VU · k6", ["py-steady"]), ("1 VU · oha", ["go-fast"])]
    assert rows[0]["best"][0]["rank"] == rows[1]["best"][0]["rank"] == "1", "no tie across engines"
    table = payload["cells"][0]
    assert table["engines"] == ["k6", "oha"]
    assert "(k6)" in render_html(results) and "measured with k6 and oha" in render_html(results)
