"""The verdict as a picture: a forest plot per paired table of the HTML report, the headline table first.

Each stack of a table is one row, sorted by its paired estimate against the table's best stack
(`TableVerdict.to_best`, best first): the ratio is a point, its 95 % paired interval a horizontal bar, on a
log axis (a ratio of 0.5 is as far from 1 as 2 is). Stacks that cannot be separated
(`TableVerdict.groups()`: neighbours whose pair is not ordered) share a shaded band with a bracket on the
right. A stack's ❌ columns and its flags are written beside its name. The pair sentences stay under the
plot, in the page (templates/report.html.j2), for those who read.

Only paired tables (interleaved rounds) get a forest plot: without rounds there is no paired interval.
"""

from __future__ import annotations

import math
import re

from pgarena.analysis.ranking import group_key, headline_key, level_group_label
from pgarena.analysis.verdicts import TableVerdict
from pgarena.report import families
from pgarena.report.charts import CHART_WIDTH_PX, rounded
from pgarena.report.families import cell_marks, level_sort_key
from pgarena.report.html_verdicts import Verdicts
from pgarena.results.models import Cell, RunResults

FOREST_ROW_HEIGHT_PX = 26
"""Height of one stack's row: 20 stacks give a plot of about 650 px, labels one line each."""
FOREST_MARGIN_PX = {"t": 48, "b": 56, "r": 120}
"""Top (title), bottom (axis title) and right (the groups' labels beside their brackets) margins."""
LABEL_CHAR_PX = 7.5
"""Width of a label character at the plot's 12 px font, for the left margin; Plotly's automargin widens it
further where a label needs more (labels are never cut)."""
RATIO_TICKS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0)
"""Where the log axis is labelled (the ones inside the plotted range)."""
BAND_COLORS = ("rgba(36,88,166,0.10)", "rgba(230,140,20,0.13)")
"""Alternating fills of the inseparable groups' bands, so that two adjacent groups stay apart."""
EXACT_COLOR, INEXACT_COLOR, BRACKET_COLOR = "#2458a6", "#b36bb8", "#5f6368"


def _slug(verdict: TableVerdict) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", "-".join(str(p) for p in group_key(verdict.cells[0]) if p is not None))


def _family_title(cell: Cell) -> str:
    return families.Family(cell.workload, cell.parameter_name, cell.parameter, pool_size=cell.pool_dimension).title


def _title(cell: Cell, mixed_engines: bool) -> str:
    parts = [_family_title(cell), level_group_label(cell)]
    if cell.db_rtt_ms is not None:
        parts.append(f"database round trip {cell.db_rtt_ms:g} ms")
    if mixed_engines:
        parts.append(cell.engine)
    return " · ".join(parts)


def _plain_label(cell: Cell, verdict: TableVerdict) -> tuple[str, str]:
    """(tick label with markup, the same as plain text for its width): the stack, its ❌ columns, its flags."""
    wrong = verdict.wrong_columns.get(cell.stack, [])
    flags = [f for f in cell.flags if f != "columns-wrong"]
    if "noisy" in cell_marks(cell) and "noisy" not in flags:
        flags.append("noisy")
    if cell.stack in verdict.sequential:
        flags.append("sequential: no paired interval")
    plain, markup = cell.stack, f"<b>{cell.stack}</b>"
    if wrong:
        plain += f"  ❌ {', '.join(wrong)}"
        markup += f"  <span style=\"color:#b3261e\">❌ {', '.join(wrong)}</span>"
    if flags:
        plain += f"  ({', '.join(flags)})"
        markup += f"  <span style=\"color:#5f6368\">({', '.join(flags)})</span>"
    return markup, plain


def _ticks(low: float, high: float) -> list[float]:
    """Labelled ratios inside [low, high]: RATIO_TICKS over a wide range, evenly spaced steps (0.01, 0.02, ...)
    over a narrow one (a table of close stacks, e.g. 0.96–1.02)."""
    if high / low > 2:
        return [t for t in RATIO_TICKS if low <= t <= high]
    step = next(s for s in (0.005, 0.01, 0.02, 0.05, 0.1, 0.2) if (high - low) / s <= 6)
    first = math.ceil(low / step - 1e-9)
    return [round(i * step, 4) for i in range(first, math.floor(high / step + 1e-9) + 1)]


def forest_figure(verdict: TableVerdict, title: str, fid: str) -> dict | None:
    """The forest plot of one paired table (None for a table without paired ratios): one row per ranked
    stack sorted by its ratio to the best, the interval as a bar, inseparable groups banded and bracketed."""
    if not verdict.paired or verdict.best is None:
        return None
    position = {c.stack: i for i, c in enumerate(verdict.cells)}
    cells = [c for c in verdict.cells if c.stack == verdict.best or c.stack in verdict.to_best]
    ratio = {c.stack: 1.0 if c.stack == verdict.best else verdict.to_best[c.stack].ratio for c in cells}
    rows = sorted(cells, key=lambda c: (-ratio[c.stack], position[c.stack]))
    if len(rows) < 2:
        return None
    lows, highs, labels, plain, hover = [], [], [], [], []
    for cell in rows:
        found = verdict.to_best.get(cell.stack)
        interval = found.interval if found is not None else None
        lows.append(interval.low if interval else ratio[cell.stack])
        highs.append(interval.high if interval else ratio[cell.stack])
        markup, text = _plain_label(cell, verdict)
        labels.append(markup)
        plain.append(text)
        what = "best (the reference)" if cell.stack == verdict.best else f"{found.text()} of {verdict.best}"  # type: ignore[union-attr]
        hover.append(f"<b>{cell.stack}</b><br>{what}<br>rank {verdict.rank_exact.get(cell.stack, '–')} among exact "
                     f"answers, {verdict.rank_all.get(cell.stack, '–')} among all<br>"
                     f"{cell.summary.rps.median:,.0f} 2xx/s (median)")  # type: ignore[union-attr]
    xs = [ratio[c.stack] for c in rows]
    # a bound of 0 or ∞ (an interval past a float's range: `ratio_bounds`) runs to the axis' edge
    edge_low = min([v for v in lows if v > 0] + xs + [1.0]) / 1.06
    edge_high = max([v for v in highs if math.isfinite(v)] + xs + [1.0]) * 1.06
    lows, highs = [max(v, edge_low) for v in lows], [min(v, edge_high) for v in highs]
    inexact = [bool(verdict.wrong_columns.get(c.stack)) for c in rows]
    data = [{
        "type": "scatter", "mode": "markers", "name": "ratio to the best (paired 95 % interval)",
        "x": [rounded(x, 4) for x in xs], "y": list(range(len(rows))),
        "error_x": {"type": "data", "symmetric": False, "array": [rounded(h - x, 4) for h, x in zip(highs, xs)],
                    "arrayminus": [rounded(x - lo, 4) for lo, x in zip(lows, xs)], "color": "#444",
                    "thickness": 1.6, "width": 4},
        "marker": {"size": 10, "color": [INEXACT_COLOR if bad else EXACT_COLOR for bad in inexact],
                   "symbol": ["diamond" if c.stack == verdict.best else
                              "circle-open" if "noisy" in cell_marks(c) or c.stack in verdict.sequential else "circle"
                              for c in rows]},
        "customdata": [c.stack for c in rows], "hovertext": hover, "hoverinfo": "text",
    }]
    low, high = edge_low, edge_high
    shapes: list[dict] = [{"type": "line", "name": "best", "xref": "x", "yref": "paper", "x0": 1, "x1": 1,
                           "y0": 0, "y1": 1, "line": {"color": "#999", "dash": "dash", "width": 1}}]
    annotations = []
    row_of = {c.stack: i for i, c in enumerate(rows)}
    groups = [g for g in verdict.groups() if len(g) > 1 and all(s in row_of for s in g)]
    for number, group in enumerate(groups, 1):
        first, last = min(row_of[s] for s in group) - 0.42, max(row_of[s] for s in group) + 0.42
        shapes.append({"type": "rect", "name": f"group-{number}", "xref": "paper", "yref": "y", "x0": 0, "x1": 1,
                       "y0": first, "y1": last, "layer": "below", "line": {"width": 0},
                       "fillcolor": BAND_COLORS[(number - 1) % len(BAND_COLORS)]})
        shapes.append({"type": "path", "name": f"bracket-{number}", "xref": "paper", "yref": "y",
                       "path": f"M 1.006 {first} L 1.016 {first} L 1.016 {last} L 1.006 {last}",
                       "line": {"color": BRACKET_COLOR, "width": 1.5}})
        annotations.append({"xref": "paper", "yref": "y", "x": 1.022, "y": (first + last) / 2, "xanchor": "left",
                            "showarrow": False, "text": f"{len(group)} not<br>separated",
                            "font": {"size": 10, "color": BRACKET_COLOR}, "align": "left"})
    longest = max(len(p) for p in plain)
    layout = {
        "title": {"text": title}, "width": CHART_WIDTH_PX, "showlegend": False,
        "height": max(220, FOREST_MARGIN_PX["t"] + FOREST_MARGIN_PX["b"] + FOREST_ROW_HEIGHT_PX * len(rows)),
        "margin": {**FOREST_MARGIN_PX, "l": min(520, round(24 + LABEL_CHAR_PX * longest))},
        "xaxis": {"type": "log", "range": [rounded(math.log10(low), 4), rounded(math.log10(high), 4)],
                  "tickvals": _ticks(low, high), "ticktext": [f"{t:g}×" for t in _ticks(low, high)],
                  "title": {"text": f"2xx/s as a ratio to {verdict.best} (paired 95 % interval; log scale)"},
                  "zeroline": False},
        "yaxis": {"tickvals": list(range(len(rows))), "ticktext": labels, "range": [len(rows) - 0.5, -0.5],
                  "showgrid": False, "zeroline": False, "fixedrange": True, "automargin": True},
        "shapes": shapes, "annotations": annotations,
    }
    notes = ["Point: the stack's 2xx/s over the best stack's, paired round by round; bar: its 95 % interval "
             "(the best stack is the diamond at 1×). Shaded and bracketed: stacks whose neighbouring pairs are not "
             "ordered (they cannot be separated). Open marker: noisy, or measured sequentially (no paired interval); "
             "purple: ❌ columns (ranked among all stacks only)."]
    return {"id": f"forest-{fid}", "kind": "forest", "title": title, "data": data, "layout": layout, "notes": notes}


def forest_tables(results: RunResults, verdicts: Verdicts) -> tuple[list[dict], list[dict]]:
    """(each paired table's entry for the page: its figure id, title, method, groups and pair sentences; the
    figures), the run's headline table first, then the others in report order (workload, parameter, level)."""
    headline = headline_key(results.cells, results.config.get("workloads"))
    mixed = len({c.engine for c in results.cells}) > 1
    seen: dict[int, TableVerdict] = {}
    for family in families.families(results.cells):
        for cell in sorted(family.cells, key=lambda c: (level_sort_key(c), c.engine)):
            verdict = verdicts.of.get(id(cell))
            if verdict is not None and verdict.paired and verdict.cells:
                seen.setdefault(id(verdict), verdict)
    ordered = sorted(seen.values(), key=lambda v: v.cells[0].key[1:] != headline)  # stable: report order kept
    entries, figs = [], []
    for verdict in ordered:
        title = _title(verdict.cells[0], mixed)
        figure = forest_figure(verdict, title, _slug(verdict))
        if figure is None:
            continue
        figs.append(figure)
        first = verdict.cells[0]
        entries.append({"figure": figure["id"], "title": title, "headline": first.key[1:] == headline,
                        "family": _family_title(first),
                        "level": level_group_label(first) + (f" · {first.engine}" if mixed else ""),
                        "method": verdict.method(), "family_sentence": verdict.family_sentence(),
                        "stopping_sentence": verdict.stopping_sentence(),
                        "reach_sentence": verdict.reach_sentence(), "groups": verdict.groups(),
                        "sentences": verdict.sentences()})
    return entries, figs
