"""Plotly figure specifications of the HTML report, as plain JSON-serialisable dicts.

Each figure is `{"id", "kind", "title", "data", "layout", "notes"}`: `data` and `layout` are handed to
`Plotly.newPlot` by the page's script unchanged (plus a shared base layout), `kind` becomes the chart
div's `data-chart` attribute, `notes` are captions printed under the chart (e.g. cells that failed and
so have no bar). Figures are built from results.json only; a figure with no data is not built at all.
What every chart shares (sizes, colours, axes) is in charts.py; how cells are grouped, in families.py.

Sizes are fixed (width × height in CSS pixels) so the page prints the same as it shows. Cells that must
not be ranked stay visible and are marked: invalid cells (flags.INVALID) with a crossed bar or an ×; noisy
cells (ranked where their interval is clear) with a hatched bar or an open marker; cells with ❌ columns
(ranked among all stacks only) with a dotted bar.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

from pgarena.analysis.ranking import level_group_label
from pgarena.report.charts import (
    FAIL_COLOR,
    PASS_COLOR,
    REFERENCE_COLOR,
    ROW_HEIGHT_PX,
    figure,
    legend_entry,
    log_axis,
    rounded,
)
from pgarena.report.families import Family, cell_marks, latency_medians, level_sort_key, parameter_label, rps_bounds
from pgarena.results.models import Cell, RunResults, SloSearchResult

def _mark_suffix(cell: Cell) -> str:
    marks = cell_marks(cell)
    return f" ({', '.join(marks)})" if marks else ""


def _hover(cell: Cell, rank: str | None = None) -> str:
    s = cell.summary
    assert s is not None
    low, high, what = rps_bounds(cell)
    lines = [f"<b>{cell.stack}</b> · {cell.level_label}",
             f"{s.rps.median:,.0f} 2xx/s (median; {what} {low:,.0f}–{high:,.0f})",
             f"p99 {'≥ ' if 'latency_p99_ms' in s.latency_censored else ''}{s.latency_p99_ms.median:,.2f} ms"]
    if rank is not None:
        lines.append(f"rank {rank}")
    if cell.flags:
        lines.append("flags: " + ", ".join(cell.flags))
    return "<br>".join(lines)


def throughput_figure(family: Family, colors: dict[str, str], ranks: dict[int, str]) -> dict | None:
    """Grouped bars: x = load level, one bar per stack (median RPS) with its interval as error bars."""
    measured = [c for c in family.cells if c.summary is not None]
    if not measured:
        return None
    levels = [level_group_label(c) for c in family.levels()]
    by_stack: dict[str, dict[str, Cell]] = defaultdict(dict)
    for cell in measured:
        by_stack[cell.stack].setdefault(level_group_label(cell), cell)
    data = []
    for stack in sorted(by_stack, key=list(colors).index):
        cells = [by_stack[stack].get(level) for level in levels]
        y, plus, minus, shapes, hover = [], [], [], [], []
        for cell in cells:
            if cell is None:
                for column, empty in ((y, None), (plus, 0), (minus, 0), (shapes, ""), (hover, "")):
                    column.append(empty)
                continue
            median = cell.summary.rps.median  # type: ignore[union-attr]
            low, high, _ = rps_bounds(cell)
            marks = cell_marks(cell)
            y.append(rounded(median))
            plus.append(rounded(max(high - median, 0.0)))
            minus.append(rounded(max(median - low, 0.0)))
            shapes.append("x" if "invalid" in marks else "." if "inexact" in marks else "/" if "noisy" in marks else "")
            hover.append(_hover(cell, ranks.get(id(cell))))
        data.append(legend_entry(stack, colors[stack], levels[0]))
        data.append({
            "type": "bar", "name": stack, "legendgroup": stack, "showlegend": False, "x": levels, "y": y,
            "marker": {"color": colors[stack], "pattern": {"shape": shapes, "solidity": 0.4}},
            "error_y": {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus,
                        "color": "#333", "thickness": 1.2, "width": 3},
            "hovertext": hover, "hoverinfo": "text",
        })
    notes = [f"{c.stack} at {c.level_label}: failed — {c.error or 'no measurement'}"
             for c in family.cells if c.summary is None]
    notes.append("Bars: median requests/s; whiskers: the confidence interval of the mean (the repetitions' "
                 "range where there is none). Crossed: invalid (not ranked); dotted: ❌ columns (ranked among all "
                 "stacks only); hatched: noisy (ranked where its interval is clear).")
    return figure("throughput", family.slug, f"Throughput — {family.title}", data, {
        "barmode": "group", "bargap": round(max(0.18, 1 - 0.12 * len(levels) * len(by_stack)), 2),
        "xaxis": {"type": "category", "title": {"text": "load level"}},
        "yaxis": {"title": {"text": "2xx answers/s"}, "rangemode": "tozero"},
    }, notes)


def _scaling_figure(family: Family, colors: dict[str, str], model: str) -> dict | None:
    """RPS and p99 against VUs (closed) or arrival rate (open), one line per stack."""
    cells = sorted((c for c in family.cells if c.model == model and c.summary is not None), key=level_sort_key)
    if len({c.level_label for c in cells}) < 2:
        return None  # one level shows no scaling
    by_stack: dict[str, list[Cell]] = defaultdict(list)
    for cell in cells:
        by_stack[cell.stack].append(cell)
    x_of = (lambda c: c.vus) if model == "closed" else (lambda c: rounded(c.arrival_rate))
    data: list[dict] = []
    for stack in sorted(by_stack, key=list(colors).index):
        points = by_stack[stack]
        symbols = ["x" if "invalid" in cell_marks(c) else "circle-open" if "noisy" in cell_marks(c) else "circle"
                   for c in points]
        common = {"type": "scatter", "mode": "lines+markers", "x": [x_of(c) for c in points],
                  "line": {"color": colors[stack]}, "legendgroup": stack,
                  "marker": {"symbol": symbols, "size": 8}, "hovertext": [_hover(c) for c in points],
                  "hoverinfo": "text"}
        data.append(legend_entry(stack, colors[stack], x_of(points[0]), "lines+markers"))
        data.append({**common, "name": stack, "showlegend": False,
                     "y": [rounded(c.summary.rps.median) for c in points]})  # type: ignore[union-attr]
        data.append({**common, "name": stack, "showlegend": False, "xaxis": "x2", "yaxis": "y2",
                     "y": [rounded(c.summary.latency_p99_ms.median, 3) for c in points]})  # type: ignore[union-attr]
    xs = [x_of(c) for c in cells]
    axis_type = "log" if min(xs) > 0 and max(xs) / min(xs) >= 10 else "linear"
    x_axis = {"title": {"text": "VUs (concurrent connections)" if model == "closed"
                        else "offered arrival rate (requests/s)"}, "type": axis_type}
    if model == "closed":
        x_axis["tickvals"] = sorted(set(xs))
    if model == "open":
        line = [min(xs), max(xs)]
        data.append({"type": "scatter", "mode": "lines", "name": "achieved = offered", "x": line, "y": line,
                     "line": {"color": REFERENCE_COLOR, "dash": "dash"}, "hoverinfo": "skip"})
    title = ("Scaling with VUs" if model == "closed" else "Scaling with arrival rate") + f" — {family.title}"
    return figure(f"scaling-{model}", family.slug, title, data, {
        "grid": {"rows": 1, "columns": 2, "pattern": "independent"},
        "xaxis": x_axis, "xaxis2": x_axis,
        "yaxis": {"title": {"text": "2xx answers/s (median)"}, "rangemode": "tozero"},
        "yaxis2": {"title": {"text": "p99 latency (ms, median)"},
                   **log_axis(c.summary.latency_p99_ms.median for c in cells)},  # type: ignore[union-attr]
    }, ["Open marker: noisy; ×: invalid."])


def scaling_closed_figure(family: Family, colors: dict[str, str]) -> dict | None:
    """RPS and p99 against VUs (None with fewer than two closed-model levels)."""
    return _scaling_figure(family, colors, "closed")


def scaling_open_figure(family: Family, colors: dict[str, str]) -> dict | None:
    """RPS and p99 against the offered arrival rate (None with fewer than two open-model levels)."""
    return _scaling_figure(family, colors, "open")


def _rows(family: Family, keep: Callable[[Cell], bool]) -> list[Cell]:
    """Measured cells of a family that `keep`, by level then stack (the rows of a horizontal chart)."""
    return sorted((c for c in family.cells if c.summary is not None and keep(c)),
                  key=lambda c: (level_sort_key(c), c.stack))


def _row_label(cell: Cell) -> str:
    return f"{cell.stack} · {cell.level_label}{_mark_suffix(cell)}"


def _horizontal(kind: str, family: Family, title: str, rows: list[Cell], data: list[dict], x_axis: dict,
                notes: Sequence[str] = (), **layout: object) -> dict:
    """One row per stack × level, labelled on the left, first row on top."""
    longest = max(len(_row_label(c)) for c in rows)
    return figure(kind, family.slug, title, data, {
        "height": max(200, 120 + ROW_HEIGHT_PX * len(rows)),
        "margin": {"l": min(420, 24 + 7 * longest)},
        "yaxis": {"type": "category", "autorange": "reversed", "automargin": True},
        "xaxis": x_axis, "legend": {"traceorder": "normal"},
        **layout,
    }, notes)


def latency_figure(family: Family) -> dict | None:
    """p50 / p90 / p99 / max per stack × level (medians over the repetitions), on a log axis."""
    rows = _rows(family, lambda c: bool(c.repetitions))
    if not rows:
        return None
    labels = [_row_label(c) for c in rows]
    lat = [latency_medians(c) for c in rows]
    symbols = {"p50": "circle", "p90": "diamond", "p99": "square", "max": "triangle-right"}
    colors = {"p50": "#1f77b4", "p90": "#2ca02c", "p99": "#ff7f0e", "max": "#d62728"}
    data = [{"type": "scatter", "mode": "markers", "name": name, "y": labels,
             "x": [rounded(m[name], 3) for m in lat],  # type: ignore[index]
             "marker": {"symbol": symbols[name], "color": colors[name], "size": 9},
             "hovertemplate": f"%{{y}}<br>{name} %{{x:.2f}} ms<extra></extra>"} for name in symbols]
    notes = [f"{_row_label(c)}: p99 and max are lower bounds (requests without an answer counted at the timeout)"
             for c in rows if c.summary is not None and "latency_p99_ms" in c.summary.latency_censored]
    return _horizontal("latency", family, f"Latency percentiles — {family.title}", rows, data,
                       {"title": {"text": "request latency (ms, median over repetitions; log scale)"},
                        **log_axis(v for m in lat for v in m.values())}, notes)  # type: ignore[union-attr]


def cost_figure(family: Family, eff_ranks: dict[int, str]) -> dict | None:
    """CPU µs per request, stack and PostgreSQL stacked, per stack × level."""
    rows = _rows(family, lambda c: c.summary.stack_cpu_us_per_request is not None  # type: ignore[union-attr]
                 or c.summary.db_cpu_us_per_request is not None)  # type: ignore[union-attr]
    if not rows:
        return None
    labels = [_row_label(c) for c in rows]
    hover = [f"efficiency rank {eff_ranks.get(id(c), '–')}" for c in rows]
    data = [{"type": "bar", "orientation": "h", "name": name, "y": labels, "marker": {"color": color},
             "x": [rounded(getattr(c.summary, attr), 1) for c in rows], "customdata": hover,
             "hovertemplate": f"%{{y}}<br>{name}: %{{x:,.0f}} µs/request<br>%{{customdata}}<extra></extra>"}
            for name, attr, color in (("stack CPU", "stack_cpu_us_per_request", "#4c78a8"),
                                      ("PostgreSQL CPU", "db_cpu_us_per_request", "#f58518"))]
    return _horizontal("cost", family, f"CPU per request — {family.title}", rows, data,
                       {"title": {"text": "CPU µs per request (stack + PostgreSQL)"}}, barmode="stack")


def memory_figure(family: Family, colors: dict[str, str]) -> dict | None:
    """Peak PSS of the stack's process tree per stack × level (summed RSS for results that have no PSS)."""
    def memory(c: Cell) -> int | None:
        s = c.summary
        assert s is not None
        return s.stack_pss_peak_bytes if s.stack_pss_peak_bytes is not None else s.stack_rss_peak_bytes

    rows = _rows(family, lambda c: memory(c) is not None)
    if not rows:
        return None
    pss = all(c.summary.stack_pss_peak_bytes is not None for c in rows)  # type: ignore[union-attr]
    what = "PSS" if pss else "PSS or summed RSS"
    data = [{"type": "bar", "orientation": "h", "name": f"peak {what}", "y": [_row_label(c) for c in rows],
             "x": [rounded(memory(c) / 2**20, 1) for c in rows],  # type: ignore[operator]
             "marker": {"color": [colors[c.stack] for c in rows]},
             "hovertemplate": "%{y}<br>%{x:,.1f} MiB<extra></extra>"}]
    return _horizontal("memory", family, f"Peak memory — {family.title}", rows, data,
                       {"title": {"text": f"peak {what} of the stack's processes (MiB)"}, "rangemode": "tozero"},
                       showlegend=False)


def scatter_figure(family: Family, colors: dict[str, str]) -> dict | None:
    """Requests/s against CPU µs per request: up and to the left is better."""
    rows = _rows(family, lambda c: c.summary.stack_cpu_us_per_request is not None  # type: ignore[union-attr]
                 and c.summary.db_cpu_us_per_request is not None)  # type: ignore[union-attr]
    if not rows:
        return None
    by_stack: dict[str, list[Cell]] = defaultdict(list)
    for cell in rows:
        by_stack[cell.stack].append(cell)
    data = []
    for stack in sorted(by_stack, key=list(colors).index):
        points = by_stack[stack]
        data.append(legend_entry(stack, colors[stack], None))
        data.append({
            "type": "scatter", "mode": "markers", "name": stack, "legendgroup": stack, "showlegend": False,
            "x": [rounded(c.summary.stack_cpu_us_per_request + c.summary.db_cpu_us_per_request, 1)  # type: ignore[union-attr,operator]
                  for c in points],
            "y": [rounded(c.summary.rps.median) for c in points],  # type: ignore[union-attr]
            "marker": {"color": colors[stack], "size": 10,
                       "symbol": ["x" if "invalid" in cell_marks(c) else "circle-open" if "noisy" in cell_marks(c)
                                  else "circle" for c in points]},
            "hovertext": [_hover(c) for c in points], "hoverinfo": "text",
        })
    return figure("scatter", family.slug, f"Throughput against CPU cost — {family.title}", data, {
        "xaxis": {"title": {"text": "CPU µs per request (stack + PostgreSQL)"}, "rangemode": "tozero"},
        "yaxis": {"title": {"text": "2xx answers/s (median)"}, "rangemode": "tozero"},
    }, ["One point per load level. Open marker: noisy; ×: invalid."])


def slo_title(search: SloSearchResult) -> str:
    """The SLO chart's title: stack, workload, model, the SLO's p99 and error rate."""
    label = parameter_label(search.workload, search.parameter_name, search.parameter)
    what = f"{search.workload} · {label}" if label else search.workload
    return (f"{search.stack} · {what} ({search.model} model) — SLO p99 ≤ {search.slo_p99_ms:g} ms, "
            f"errors ≤ {search.slo_max_error_rate:.1%}")


def slo_figure(index: int, search: SloSearchResult) -> dict | None:
    """Offered level against achieved RPS and against p99, the SLO line, the answer and its bracket."""
    if not search.curve:
        return None
    points = sorted(search.curve, key=lambda p: p.level)
    order = {id(p): i for i, p in enumerate(search.curve, 1)}
    xs = [rounded(p.level) for p in points]
    colors = [PASS_COLOR if p.passed else FAIL_COLOR for p in points]
    hover = [f"step {order[id(p)]}: level {p.level:,.0f}<br>{p.rps:,.0f} 2xx/s, p99 {p.latency.p99_ms:,.2f} ms<br>"
             f"errors {p.error_rate:.2%}, dropped {p.dropped:,}<br>{'passed' if p.passed else 'failed'}"
             for p in points]
    common = {"type": "scatter", "mode": "lines+markers", "x": xs, "hovertext": hover, "hoverinfo": "text",
              "line": {"color": "#555"}, "marker": {"color": colors, "size": 9}}
    data: list[dict] = [
        {**common, "name": "achieved 2xx/s", "y": [rounded(p.rps) for p in points]},
        {**common, "name": "p99 latency", "xaxis": "x2", "yaxis": "y2",
         "y": [rounded(p.latency.p99_ms, 3) for p in points], "line": {"color": "#888", "dash": "dot"}},
        {"type": "scatter", "mode": "lines", "name": f"SLO p99 {search.slo_p99_ms:g} ms", "xaxis": "x2", "yaxis": "y2",
         "x": [xs[0], xs[-1]], "y": [search.slo_p99_ms] * 2, "line": {"color": FAIL_COLOR, "dash": "dash"},
         "hoverinfo": "skip"},
    ]
    if search.model == "open":
        data.append({"type": "scatter", "mode": "lines", "name": "achieved = offered", "x": [xs[0], xs[-1]],
                     "y": [xs[0], xs[-1]], "line": {"color": REFERENCE_COLOR, "dash": "dash"}, "hoverinfo": "skip"})
    shapes = []
    if search.answer_level is not None:
        answer = next(p for p in search.curve if p.level == search.answer_level)
        star = {"type": "scatter", "mode": "markers", "marker": {"symbol": "star", "size": 18, "color": "#f2b701",
                                                                   "line": {"color": "#333", "width": 1}},
                "x": [rounded(answer.level)], "hoverinfo": "text",
                "hovertext": [f"answer: {answer.level:,.0f} → {answer.rps:,.0f} req/s"]}
        data.append({**star, "name": "answer (highest passing level)", "y": [rounded(answer.rps)]})
        data.append({**star, "name": "answer", "showlegend": False, "xaxis": "x2", "yaxis": "y2",
                     "y": [rounded(answer.latency.p99_ms, 3)]})
        if search.bracket_high is not None:
            for x, y in (("x", "y"), ("x2", "y2")):
                shapes.append({"type": "rect", "xref": x, "yref": f"{y} domain", "x0": rounded(search.bracket_low),
                               "x1": rounded(search.bracket_high), "y0": 0, "y1": 1, "layer": "below",
                               "fillcolor": "rgba(242,183,1,0.15)", "line": {"width": 0}})
    x_title = "offered arrival rate (requests/s)" if search.model == "open" else "VUs"
    return figure("slo", f"{index}-{search.stack}", slo_title(search), data, {
        "grid": {"rows": 1, "columns": 2, "pattern": "independent"},
        "xaxis": {"title": {"text": x_title}}, "xaxis2": {"title": {"text": x_title}},
        "yaxis": {"title": {"text": "achieved 2xx answers/s"}, "rangemode": "tozero"},
        "yaxis2": {"title": {"text": "p99 latency (ms)"},
                   **log_axis([*(p.latency.p99_ms for p in points), search.slo_p99_ms])},
        "shapes": shapes,
    }, ["Green: the level met the SLO; red: it did not. Star: the answer; shaded: the bracket "
        "[last pass, first fail] the limit lies in."])


def cold_start_figure(results: RunResults, colors: dict[str, str]) -> dict | None:
    """Latency of each stack's first sequential requests after its process started."""
    stacks = [s for s in results.stacks if s.cold_start is not None and s.cold_start.first_requests_ms]
    if not stacks:
        return None
    data = [{"type": "scatter", "mode": "lines+markers", "name": s.id,
             "x": list(range(1, len(s.cold_start.first_requests_ms) + 1)),  # type: ignore[union-attr]
             "y": [rounded(v, 3) for v in s.cold_start.first_requests_ms],  # type: ignore[union-attr]
             "line": {"color": colors[s.id]},
             "hovertemplate": f"{s.id}<br>request %{{x}}: %{{y:.2f}} ms<extra></extra>"} for s in stacks]
    return figure("cold-start", "stacks", "Cold start — the first sequential requests", data, {
        "height": 360,
        "xaxis": {"title": {"text": "request number after start"}},
        "yaxis": {"title": {"text": "latency (ms, log scale)"},
                  **log_axis(v for s in stacks for v in s.cold_start.first_requests_ms)},  # type: ignore[union-attr]
    })


def family_figures(family: Family, colors: dict[str, str], ranks: dict[int, str],
                   eff_ranks: dict[int, str]) -> dict[str, list[dict]]:
    """Every figure of one workload × parameter, by report section."""
    sections = {
        "throughput": [throughput_figure(family, colors, ranks)],
        "scaling": [scaling_closed_figure(family, colors), scaling_open_figure(family, colors)],
        "latency": [latency_figure(family)],
        "cost": [cost_figure(family, eff_ranks), memory_figure(family, colors), scatter_figure(family, colors)],
    }
    return {name: [f for f in figs if f is not None] for name, figs in sections.items()}
