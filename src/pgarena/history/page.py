"""`pgarena history`'s page: one chart per series, versions on the x axis, the interval as a band.

In report.html's house style (its fonts, colours and inlined plotly.js: no network at view time); the
template is report/templates/history.html.j2. Change points (history/changes.py) are dashed lines on the
chart and sentences under it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import jinja2

from pgarena.history.changes import DEFAULT_MAX_PVALUE, DEFAULT_MIN_STEP, ChangePoint, OtavaMissing, change_points
from pgarena.history.points import Point
from pgarena.history.store import series
from pgarena.report.html import _script_json, plotly_js

TEMPLATE = "history.html.j2"
BAND_COLOUR = "rgba(36, 88, 166, 0.18)"
LINE_COLOUR = "#2458a6"
STEP_COLOURS = {True: "#9aa0a6", False: "#cf222e"}
"""Change-point lines: grey for a change of the environment, red for a change of the stack."""


def _id(*parts: str) -> str:
    return "s-" + re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")


def _figure(element: str, points: Sequence[Point], changes: Sequence[ChangePoint]) -> dict:
    """The plotly figure of one series: the band (interval), the medians, a dashed line per change point."""
    x = [f"{i + 1}. {p.version}" for i, p in enumerate(points)]
    low = [p.rps_low if p.rps_low is not None else p.rps_median for p in points]
    high = [p.rps_high if p.rps_high is not None else p.rps_median for p in points]
    data = [
        {"type": "scatter", "x": x, "y": high, "mode": "lines", "line": {"width": 0}, "hoverinfo": "skip"},
        {"type": "scatter", "x": x, "y": low, "mode": "lines", "line": {"width": 0}, "fill": "tonexty",
         "fillcolor": BAND_COLOUR, "name": "95 % interval", "hoverinfo": "skip"},
        {"type": "scatter", "x": x, "y": [p.rps_median for p in points], "mode": "lines+markers",
         "line": {"color": LINE_COLOUR}, "name": "median 2xx/s",
         "text": [f"run {p.run_id}<br>{p.version}<br>{p.rps_median:,.0f} 2xx/s" for p in points],
         "hoverinfo": "text"},
    ]
    shapes = [{"type": "line", "xref": "x", "yref": "paper", "x0": c.index - 0.5, "x1": c.index - 0.5, "y0": 0,
               "y1": 1, "line": {"dash": "dash", "color": STEP_COLOURS[c.environment]}} for c in changes]
    return {"id": element, "data": data, "layout": {
        "xaxis": {"type": "category", "title": {"text": "run · version"}, "tickangle": -30},
        "yaxis": {"title": {"text": "2xx/s"}, "rangemode": "tozero"}, "shapes": shapes}}


def render_history(points: Sequence[Point], *, store: str, stack: str | None = None,
                   max_pvalue: float = DEFAULT_MAX_PVALUE, min_step: float = DEFAULT_MIN_STEP) -> str:
    """The history page of `points` (one stack's, or all) read from `store` (named on the page)."""
    rows, figures, missing = [], [], None
    for (stack_id, cell, machine), members in series(points).items():
        changes: list[ChangePoint] = []
        if missing is None:
            try:
                changes = change_points(members, max_pvalue, min_step)
            except OtavaMissing as exc:
                missing = str(exc)
        element = _id(stack_id, cell, machine)
        figures.append(_figure(f"{element}-chart", members, changes))
        rows.append({"id": element, "stack": stack_id, "cell": cell, "machine": machine, "points": len(members),
                     "latest_version": members[-1].version, "latest_rps": f"{members[-1].rps_median:,.0f}",
                     "changes": [{"index": c.index, "text": c.text(), "environment": c.environment}
                                 for c in changes]})
    env = jinja2.Environment(loader=jinja2.PackageLoader("pgarena.report", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    page = {"stack": stack, "store": store, "series": rows, "runs": len({p.run_id for p in points}),
            "otava_missing": missing,
            "method": f"a split kept at p ≤ {max_pvalue:g} and a step of at least {100 * min_step:g} %; a step where the "
                      "same runs' database ceiling or generator headroom also stepped is marked a change of the "
                      "environment (grey), one of the stack red."}
    return env.get_template(TEMPLATE).render(h=page, figures_json=_script_json(figures), plotly_js=plotly_js())
