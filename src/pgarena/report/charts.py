"""What every chart of the HTML report shares: its fixed size (CSS pixels), the colours, a log axis, the
rounding of figures in the payload and the figure dict itself (figures.py builds the charts from these)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from pgarena.results.models import RunResults

CHART_WIDTH_PX = 960
"""Every chart's width: fits an A4 landscape page (the print stylesheet) and a laptop screen."""
CHART_HEIGHT_PX = 420
ROW_HEIGHT_PX = 18
"""Horizontal charts (one row per stack × level) grow by this much per row."""

PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
    "#17becf", "#393b79", "#ad494a", "#637939", "#8c6d31", "#7b4173", "#3182bd", "#e6550d", "#31a354",
    "#756bb1", "#636363", "#843c39", "#5254a3", "#b5cf6b", "#e7ba52",
)
"""Distinct colours, one per stack in results order (wraps after 24 stacks)."""

PASS_COLOR, FAIL_COLOR, REFERENCE_COLOR = "#2ca02c", "#d62728", "#9a9a9a"


def rounded(value: float | None, digits: int = 2) -> float | None:
    """Rounded for the payload (keeps it small and stable); None stays None."""
    return None if value is None else round(float(value), digits)


def log_axis(values: Iterable[float | None]) -> dict:
    """A log axis labelled at 1-2-5 steps spanning `values` (plain numbers, not Plotly's abbreviated digits)."""
    present = [v for v in values if v is not None and v > 0]
    if not present:
        return {"type": "log"}
    low, high = min(present), max(present)
    ticks, exponent = [], math.floor(math.log10(low)) - 1
    while not ticks or ticks[-1] < high:
        for step in (1, 2, 5):
            tick = step * 10.0**exponent
            if tick >= low / 2.5 and (not ticks or ticks[-1] < high):
                ticks.append(tick)
        exponent += 1
    return {"type": "log", "tickvals": [rounded(t, 6) for t in ticks],
            "ticktext": [f"{t:,.0f}" if t >= 1 else f"{t:g}" for t in ticks]}


def stack_colors(results: RunResults) -> dict[str, str]:
    """A colour per stack: declared stacks in results order, then any other stack seen, by name."""
    ids = list(dict.fromkeys(s.id for s in results.stacks))
    ids += sorted({c.stack for c in results.cells} - set(ids))
    ids += sorted({s.stack for s in results.slo_searches} - set(ids))
    return {stack: PALETTE[i % len(PALETTE)] for i, stack in enumerate(ids)}


def figure(kind: str, fid: str, title: str, data: list[dict], layout: dict, notes: Sequence[str] = ()) -> dict:
    """A figure dict (the module docstring of figures.py): id `kind-fid`, the title, `layout` over the fixed
    chart size with a legend."""
    layout = {"title": {"text": title}, "width": CHART_WIDTH_PX, "height": CHART_HEIGHT_PX, "showlegend": True, **layout}
    return {"id": f"{kind}-{fid}", "kind": kind, "title": title, "data": data, "layout": layout, "notes": list(notes)}


def legend_entry(stack: str, color: str, x: object, mode: str = "markers") -> dict:
    """A plain legend entry for a stack whose own trace mixes marks (its first point would set the legend's
    look): an empty scatter trace in the stack's legend group, so clicking it still hides the stack."""
    return {"type": "scatter", "mode": mode, "name": stack, "legendgroup": stack, "x": [x], "y": [None],
            "marker": {"color": color, "symbol": "square" if mode == "markers" else "circle", "size": 10},
            "line": {"color": color}, "hoverinfo": "skip"}
