"""`pgarena history`'s page opened in headless Chromium: every series a rendered chart with its band, the change
point drawn, and no network request (the page is self-contained like report.html)."""

from __future__ import annotations

import pytest

from tests.browser.test_report_in_chromium import CHART_TIMEOUT_MS, CHROMIUM_ARGS, playwright_and_chromium

pytestmark = pytest.mark.browser


def test_history_page_renders_every_series_with_its_band_and_step(tmp_path):
    pytest.importorskip("otava.analysis", reason="Apache Otava is not installed: pip install --no-deps apache-otava==0.8.0")
    sync_api, chromium = playwright_and_chromium()
    from pgarena.history.page import render_history
    from pgarena.history.points import Point
    from tests.unit.test_history import STEP, STEP_AT, _series  # noqa: F401 — STEP: the stepped series

    flat = [Point(**{**p.__dict__, "cell": "static @ 50 VUs (oha)"}) for p in _series(None)]
    path = tmp_path / "history.html"
    path.write_text(render_history(_series(STEP) + flat, store="history.sqlite"), encoding="utf-8")
    errors: list[str] = []
    blocked: list[str] = []
    with sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(str(tmp_path / "profile"), executable_path=chromium,
                                                        headless=True, args=CHROMIUM_ARGS,
                                                        viewport={"width": 1366, "height": 900})
        try:
            context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:", "about:"))
                          else (blocked.append(r.request.url), r.abort()))
            page = context.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(path.as_uri(), wait_until="load")
            page.wait_for_function("document.body.getAttribute('data-charts') !== 'pending'", timeout=CHART_TIMEOUT_MS)
            assert page.get_attribute("body", "data-charts") == "done", errors
            charts = page.evaluate("""() => Array.from(document.querySelectorAll('.chart')).map(el => ({
                plotly: el.classList.contains('js-plotly-plot'), svg: el.querySelectorAll('svg.main-svg').length,
                traces: (el.data || []).length, fills: el.querySelectorAll('path.js-fill').length,
                shapes: el.querySelectorAll('.shapelayer path').length}))""")
            assert len(charts) == 2
            assert all(c["plotly"] and c["svg"] and c["traces"] == 3 and c["fills"] >= 1 for c in charts), charts
            assert sorted(c["shapes"] for c in charts) == [0, 1], "one change point, drawn on the stepped series only"
            text = page.inner_text("main")
            assert f"Change point before run {STEP_AT + 1}" in text and "No change point." in text
            assert errors == [] and blocked == []
        finally:
            context.close()
