"""The HTML report opened in headless Chromium, as a reader would see it.

Debian's Chromium (/usr/bin/chromium, installed by scripts/setup.sh) is driven by playwright from PyPI
with `executable_path`: `playwright install` (which downloads its own browser builds) is never needed.
Every network request the page makes is refused and counted: the report must need none.

By default the report of the crafted run in tests/fixtures/report_run.py is rendered and checked. Point
PGARENA_REPORT_RUN_DIR at a run folder (e.g. results/<run-id>) to check that run's report.html instead:

    PGARENA_REPORT_RUN_DIR=results/<run-id> .venv/bin/python -m pytest tests/browser -q

A full-page screenshot is written to build/screenshots/ (gitignored; the path is printed).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import PROJECT_DIR

pytestmark = pytest.mark.browser

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-quic", "--disable-sync"]
SCREENSHOT_DIR = PROJECT_DIR / "build" / "screenshots"
RUN_DIR_VARIABLE = "PGARENA_REPORT_RUN_DIR"
CHART_TIMEOUT_MS = 60_000
FIXTURE_CHART_KINDS = {"throughput", "scaling-closed", "scaling-open", "slo", "latency", "cost", "memory", "scatter",
                       "cold-start", "forest"}


def _chromium() -> str | None:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


@dataclass
class LoadedReport:
    """The page after its charts rendered, with what went wrong on the way."""

    page: object
    path: Path
    name: str
    is_fixture: bool
    errors: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def report_file(tmp_path_factory) -> tuple[Path, str, bool]:
    """(report.html, screenshot name, whether it is the crafted fixture run)."""
    run_dir = os.environ.get(RUN_DIR_VARIABLE)
    if run_dir:
        path = Path(run_dir) / "report.html"
        assert path.is_file(), (f"{RUN_DIR_VARIABLE}={run_dir}: no report.html there; render it with "
                                f"`.venv/bin/pgarena report {run_dir}`")
        return path.resolve(), f"report-{Path(run_dir).resolve().name}", False
    from pgarena.report.html import render_html
    from tests.fixtures.report_run import sample_results

    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(render_html(sample_results()), encoding="utf-8")
    return path, "report", True


def playwright_and_chromium():
    """(playwright's sync API, the Chromium binary), or skip saying which is missing."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed: `make setup` installs the test extra")
    chromium = _chromium()
    if chromium is None:
        pytest.skip("Chromium is missing (no chromium on PATH, no /usr/bin/chromium): scripts/setup.sh installs "
                    "Debian's chromium package")
    return sync_api, chromium


@pytest.fixture(scope="module")
def loaded(report_file, tmp_path_factory):
    sync_api, chromium = playwright_and_chromium()
    path, name, is_fixture = report_file
    with sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=chromium, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1366, "height": 900})
        try:
            report = LoadedReport(page=None, path=path, name=name, is_fixture=is_fixture)

            def route(r):
                if r.request.url.startswith(("file:", "data:", "blob:", "about:")):
                    r.continue_()
                else:
                    report.blocked.append(r.request.url)
                    r.abort()

            context.route("**/*", route)
            page = context.new_page()
            page.on("console", lambda m: report.errors.append(f"console.{m.type}: {m.text}")
                    if m.type == "error" else None)
            page.on("pageerror", lambda e: report.errors.append(f"page error: {e}"))
            page.goto(path.as_uri(), wait_until="load")
            page.wait_for_function("document.body.getAttribute('data-charts') !== 'pending'",
                                   timeout=CHART_TIMEOUT_MS)
            report.page = page
            yield report
        finally:
            context.close()


def test_charts_rendered_without_errors(loaded):
    assert loaded.page.get_attribute("body", "data-charts") == "done", loaded.errors
    assert loaded.errors == []
    assert loaded.blocked == [], "the report must not need the network"


def test_every_chart_is_a_plotly_plot_with_data(loaded):
    charts = loaded.page.evaluate("""() => Array.from(document.querySelectorAll('[data-chart]')).map(el => ({
        id: el.id, kind: el.dataset.chart,
        plotly: el.classList.contains('js-plotly-plot'),
        traces: (el.data || []).length,
        points: (el.data || []).reduce((n, t) => n + (t.x || t.y || []).filter(v => v !== null).length, 0),
        svg: el.querySelectorAll('svg.main-svg').length,
        drawn: el.querySelectorAll('.trace, .point, path.js-line, .bars .point').length,
    }))""")
    embedded = loaded.page.evaluate("() => JSON.parse(document.getElementById('pgarena-figures').textContent).length")
    assert len(charts) == embedded
    assert charts, "the report has no chart"
    for chart in charts:
        assert chart["plotly"] and chart["svg"], f"{chart['id']} was not rendered by Plotly: {chart}"
        assert chart["traces"] > 0 and chart["points"] > 0 and chart["drawn"] > 0, f"{chart['id']} is empty: {chart}"
    if loaded.is_fixture:
        assert {c["kind"] for c in charts} == FIXTURE_CHART_KINDS
    else:
        assert "throughput" in {c["kind"] for c in charts}


def test_cells_table_sorts_on_header_click(loaded):
    page = loaded.page
    table_id = page.evaluate("() => (document.querySelector('table.cells-table') || {}).id || null")
    if table_id is None:
        pytest.skip("this run has no cells")
    table = f"#{table_id}"
    column = page.evaluate(f"""() => Array.from(document.querySelectorAll('{table} thead th'))
        .findIndex(th => th.textContent.startsWith('2xx/s'))""")
    header = page.locator(f"{table} thead th").nth(column)
    values = f"""c => Array.from(document.querySelectorAll('{table} tbody tr'))
        .map(r => r.cells[c].getAttribute('data-sort')).filter(v => v !== '').map(Number)"""
    header.click()
    ascending = page.evaluate(values, column)
    assert ascending and ascending == sorted(ascending)
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    descending = page.evaluate(values, column)
    assert descending == sorted(descending, reverse=True)
    assert header.get_attribute("aria-sort") == "descending"


def test_marks_and_reasons_are_visible(loaded):
    if not loaded.is_fixture:
        pytest.skip("checks the crafted run's known noisy, invalid and failed cells")
    page = loaded.page

    def ranks(mark: str) -> list[tuple[str, str]]:
        """(rank among exact answers, rank among all) of the rows with `mark`."""
        return [tuple(r) for r in page.eval_on_selector_all(
            f"table.cells-table tr.{mark}", "rows => rows.map(r => [r.cells[2].textContent, r.cells[3].textContent])")]

    for mark in ("invalid", "failed"):
        assert ranks(mark) and set(ranks(mark)) == {("–", "–")}, f"{mark} cells must be shown and never ranked"
    assert ("2", "2") in ranks("noisy"), "a noisy cell is ranked where its interval is clear"
    assert ("–", "3") in ranks("inexact") and all(exact == "–" for exact, _ in ranks("inexact")), \
        "❌ columns: ranked among all stacks only"
    assert ("–", "–") in ranks("inexact"), "node-wrong at 50 VUs, measured on its own after the rounds: not ranked"
    assert "❌ timestamp_val" in page.inner_text("table.cells-table tr.inexact")
    leaders = page.eval_on_selector_all("#headline-table tbody tr", "rows => rows.map(r => [r.cells[1].textContent, "
                                        "r.querySelectorAll('.leader').length])")
    assert all(n > 0 for level, n in leaders if "own peak" not in level), f"a headline row names no leader: {leaders}"
    headline = page.locator("section.verdict").first
    assert headline.get_attribute("data-headline") == "yes", "the headline table's forest plot comes first"
    assert "go-fast is 1.53× py-steady (1.49–1.56)" in headline.inner_text(), "the sentences under the plot"
    assert page.locator("#schedule-table").is_visible() and page.locator("#ceiling-table").is_visible()
    wrong = page.locator("table.matrix td.v-wrong").first
    assert wrong.inner_text() == "❌"
    assert wrong.get_attribute("title") == "2024-01-15T10:30:00.123Z lost microseconds of 10:30:00.123456"
    assert "pgarena run --stacks go-fast" in page.inner_text("#command")


def test_forest_plots_sort_by_estimate_and_bracket_inseparable_groups(loaded):
    """Issue 21 item 7: each paired table as a forest plot, rows by the paired estimate (best first), an
    inseparable group banded and bracketed, ❌ columns beside the stack's name."""
    plots = loaded.page.evaluate("""() => Array.from(document.querySelectorAll('[data-chart="forest"]')).map(el => ({
        id: el.id, ratios: el.data[0].x, ticks: el.layout.yaxis.ticktext,
        shapes: (el.layout.shapes || []).map(s => s.name || ''),
        drawnShapes: el.querySelectorAll('.shapelayer path').length,
        bars: el.querySelectorAll('.errorbar').length,
        labels: Array.from(el.querySelectorAll('.ytick text')).map(t => t.textContent),
    }))""")
    if not plots:
        pytest.skip("this run has no table measured in interleaved rounds")
    for plot in plots:
        assert plot["ratios"] == sorted(plot["ratios"], reverse=True), f"{plot['id']}: rows not sorted by estimate"
        assert plot["bars"] == len(plot["ratios"]) and len(plot["labels"]) == len(plot["ratios"]), plot
    bracketed = [p for p in plots if any(s.startswith("bracket-") for s in p["shapes"])]
    if loaded.is_fixture:
        assert [p["id"] for p in bracketed] == ["forest-perf-test-1-closed-1-oha"], "1 VU: go-fast ≈ py-steady"
        assert bracketed[0]["drawnShapes"] >= 3, "the band, the bracket and the line at 1× are drawn"
        assert any(label.startswith("node-wrong") and "❌ timestamp_val" in label for p in plots for label in p["labels"])
        assert not any(label.startswith("node-wrong") for label in plots[0]["labels"]), \
            "the headline (50 VUs): node-wrong measured on its own, no ratio to draw"


def test_screenshot(loaded, tmp_path, capsys):
    page = loaded.page
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    shots = [tmp_path / f"{loaded.name}.png", SCREENSHOT_DIR / f"{loaded.name}.png"]
    for shot in shots:
        page.screenshot(path=str(shot), full_page=True)
    page.emulate_media(media="print")
    printed = SCREENSHOT_DIR / f"{loaded.name}-print.png"
    page.screenshot(path=str(printed), full_page=True)
    page.emulate_media(media="screen")
    for shot in [*shots, printed]:
        assert shot.stat().st_size > 50_000, f"{shot} looks blank"
    with capsys.disabled():
        print(f"\n[browser] {loaded.path} → screenshots: {shots[0]} , {shots[1]} (print media: {printed})")
