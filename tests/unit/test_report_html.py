"""The HTML report's payload against a golden file, and the page's structure (no browser needed).

Rewrite the golden file after an intended change with `pytest tests/unit/test_report_html.py --update-golden`
and review the diff.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

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


def test_noisy_cells_are_ranked_wrong_columns_ranked_among_all_and_invalid_ones_not():
    """Issue 11 items 4 and 5."""
    rows = {(c["stack"], c["family"], c["level"]): c
            for table in html_payload(sample_results())["cells"] for c in table["rows"]}
    noisy = rows[("py-steady", "perf-test · 1 row", "50 VUs")]
    inexact = rows[("node-wrong", "perf-test · 1 row", "1 VU")]
    invalid = rows[("py-steady", "tx", "50 VUs")]
    failed = rows[("node-wrong", "tx", "50 VUs")]
    assert noisy["marks"] == ["noisy"] and (noisy["rank"], noisy["rank_all"]) == ("2", "2"), \
        "noisy, but the paired interval puts it clearly below go-fast"
    assert inexact["marks"] == ["inexact"] and (inexact["rank"], inexact["rank_all"]) == ("–", "3")
    apart = rows[("node-wrong", "perf-test · 1 row", "50 VUs")]
    assert (apart["rank"], apart["rank_all"]) == ("–", "–"), "measured on its own after the rounds: not ranked"
    assert inexact["wrong_columns"] == ["timestamp_val"]
    assert "invalid" in invalid["marks"] and (invalid["rank"], invalid["rank_all"]) == ("–", "–")
    assert failed["marks"] == ["failed"] and failed["rank"] == "–" and "rps_median" not in failed
    assert rows[("go-fast", "perf-test · 1 row", "1 VU")]["rank"] == "1–2"  # overlapping intervals tie


def test_ratios_to_best_and_baseline_and_the_ceiling_share():
    rows = {(c["stack"], c["family"], c["level"]): c
            for table in html_payload(sample_results())["cells"] for c in table["rows"]}
    go, py = rows[("go-fast", "perf-test · 1 row", "50 VUs")], rows[("py-steady", "perf-test · 1 row", "50 VUs")]
    assert go["to_best"]["text"] == "best" and py["to_best"]["text"] == "0.66× (0.64–0.67)"
    assert go["to_baseline"]["text"] == "1.53× (1.49–1.56)" and py["to_baseline"]["text"] == "baseline"
    assert go["ceiling_text"] == "51 %" and go["ceiling_share"] == pytest.approx(4600 / 9000, abs=1e-4)
    node = rows[("node-wrong", "perf-test · 1 row", "50 VUs")]
    assert node["to_best"] is None, "measured on its own after the rounds: no ratio to a stack of the rounds"


def test_headline_names_a_leader_or_an_explicit_tie_in_every_ranked_cell():
    headline = html_payload(sample_results())["headline"]
    first = headline[0]
    assert (first["family"], first["level"]) == ("perf-test · 1 row", "1 VU")
    assert [b["stack"] for b in first["best"]] == ["go-fast", "py-steady"] and first["tie"]
    assert {b["rank"] for b in first["best"]} == {"1–2"}
    assert first["unranked"] == [], "node-wrong (❌ columns) is ranked among all stacks"
    assert first["sentences"] == ["go-fast and py-steady are equivalent within ±10 % (0.98–1.03)",
                                  "py-steady is 1.03× node-wrong (1.01–1.06) (node-wrong: ❌ timestamp_val)"]
    second = headline[1]
    assert [b["stack"] for b in second["best"]] == ["go-fast"] and not second["tie"] and second["paired"]
    assert second["sentences"] == ["go-fast is 1.53× py-steady (1.49–1.56)"]
    assert second["unranked"] == [{"stack": "node-wrong", "why": "measured on its own after the interleaved rounds, "
                                                                 "so not compared"}]
    for row in headline:
        if "own peak" in row["level"]:  # a share of each stack's own peak: never ranked
            continue
        assert row["best"], f"{row['family']} @ {row['level']}: no leader named"


def test_schedule_and_ceiling_are_in_the_payload_and_the_page():
    payload = html_payload(sample_results())
    schedule = payload["schedule"]
    assert (schedule["kind"], schedule["seed"]) == ("interleaved", 20261121)
    assert [p["name"] for p in schedule["phases"]] == ["headline", "closed", "open"]
    assert schedule["phases"][2]["sentence"].startswith("stopped at the round cap (3 rounds) with 1 pair(s) unsettled")
    assert schedule["fallbacks"] == [{"stack": "node-wrong", "reason": "it listens on the fixed port 3000"}]
    assert schedule["disturbances"] == [{"stack": "py-steady", "idle_cpu_fraction": 0.083}]
    assert [(r["workload"], r["connections"], r["tps"]) for r in payload["ceiling"]["rows"]] == [
        ("perf-test", 1, 2400.0), ("perf-test", 10, 9000.0), ("tx", 10, 2000.0)]
    html = render_html(sample_results())
    assert 'id="schedule-table"' in html and 'id="ceiling-table"' in html and "node-wrong: it listens on" in html
    assert "go-fast is 1.53× py-steady (1.49–1.56)" in html and "❌ timestamp_val" in html


def test_without_ceilings_or_schedule_the_report_says_so():
    results = sample_results().model_copy(update={"ceilings": [], "schedule": None,
                                                  "ceiling_unavailable": "pgbench not found"})
    payload = html_payload(results)
    assert payload["ceiling"] == {"rows": [], "note": "The database ceiling was not measured: pgbench not found."}
    assert not payload["schedule"]["recorded"] and "No schedule was recorded" in payload["schedule"]["note"]
    row = payload["cells"][0]["rows"][0]
    assert row["ceiling_text"] == "not measured" and row["ceiling_share"] is None


def test_report_baseline_override(tmp_path):
    from typer.testing import CliRunner

    from pgarena.cli import app
    from pgarena.report import with_baseline
    from pgarena.results.store import save

    results = with_baseline(sample_results(), "go-fast")
    rows = {(c["stack"], c["level"]): c for c in html_payload(results)["cells"][0]["rows"]}
    assert rows[("py-steady", "50 VUs")]["to_baseline"]["text"] == "0.66× (0.64–0.67)"
    save(sample_results(), tmp_path)
    runner = CliRunner()
    bad = runner.invoke(app, ["report", str(tmp_path), "--baseline", "nope"])
    assert bad.exit_code == 2 and "not a stack of run fixture-1" in bad.output
    good = runner.invoke(app, ["report", str(tmp_path), "--baseline", "go-fast"])
    assert good.exit_code == 0, good.output
    assert "| × go-fast (95 %) |" in (tmp_path / "report.md").read_text()


def test_charts_without_data_are_not_built():
    sections = html_payload(sample_results())["sections"]
    kinds = {f["kind"] for figs in sections.values() for f in figs}
    assert kinds == {"throughput", "scaling-closed", "scaling-open", "latency", "cost", "memory", "scatter", "slo",
                     "cold-start", "forest"}
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


def _conditions_run(**cell_updates_by_condition):
    """Two stacks at 50 VUs under two conditions whose order differs: 'a' first under the first, 'b' under the
    second (issue 22 item 2)."""
    from tests.unit.test_compare import make_cell, make_run
    from tests.unit.test_rest_graphql import ranked

    (first, second), = cell_updates_by_condition.values()
    cells = [ranked(make_cell("a", [1000, 1010, 990])).model_copy(update=first),
             ranked(make_cell("b", [500, 505, 495])).model_copy(update=first),
             ranked(make_cell("a", [200, 202, 198])).model_copy(update=second),
             ranked(make_cell("b", [400, 404, 396])).model_copy(update=second)]
    return make_run("r", cells, config={"pool_size": 10, "pool_sizes": [10, 50]})


@pytest.mark.parametrize("conditions, titles", [
    ({"db_rtt_ms": ({"db_rtt_ms": 0.0}, {"db_rtt_ms": 20.0})},
     ["perf-test · 10 rows · database 0 ms away", "perf-test · 10 rows · database 20 ms away"]),
    ({"pool": ({"pool_size": 10, "pool_size_varied": True}, {"pool_size": 50, "pool_size_varied": True})},
     ["perf-test · 10 rows · pool size 10", "perf-test · 10 rows · pool size 50"]),
])
def test_each_round_trip_and_pool_size_has_its_own_html_table_and_headline_row(conditions, titles):
    """Issue 22 item 2: with two --db-rtt values (or pool sizes) the HTML keeps each condition's verdict, as the
    Markdown does: one table and one headline row per condition, each with exactly one rank 1."""
    from pgarena.report.markdown import render_markdown

    run = _conditions_run(**conditions)
    payload = html_payload(run)
    assert [t["title"] for t in payload["cells"]] == titles
    for table, leader in zip(payload["cells"], ["a", "b"], strict=True):
        assert [(r["stack"], r["rank"]) for r in table["rows"] if r["rank"] == "1"] == [(leader, "1")]
    assert [(h["family"], h["level"], [b["stack"] for b in h["best"]]) for h in payload["headline"]] == [
        (titles[0], "50 VUs", ["a"]), (titles[1], "50 VUs", ["b"])]
    markdown = render_markdown(run)
    assert markdown.count("Rank 1: **a**.") == 1 and markdown.count("Rank 1: **b**.") == 1
    html = render_html(run)
    assert all(f'data-family="{title}"' in html for title in titles)


def test_tables_the_budget_left_unmeasured_are_named_in_the_page_header():
    results = sample_results()
    assert 'id="not-measured"' not in render_html(results) and html_payload(results)["schedule"]["not_measured"] is None
    results.schedule.phases[2].not_measured = ["perf-test rows1 @ 2000/s"]
    payload = html_payload(results)
    assert payload["schedule"]["not_measured"] == ("1 table(s) not measured: the time budget was spent before their "
                                                   "least rounds (perf-test rows1 @ 2000/s)")
    header = render_html(results).split("</header>")[0]
    assert '<p class="error" id="not-measured">1 table(s) not measured: the time budget' in header
