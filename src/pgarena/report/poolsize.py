"""The report's pool-size parts (--pool-size 10,50): each stack's throughput at every pool size, the ratio
of the largest to the smallest with its interval (analysis/poolsize.py), at each database round trip where
the run has several, and each start of each stack. Markdown text, the HTML payload and its charts."""

from __future__ import annotations

from collections import defaultdict

from pgarena.analysis.poolsize import PoolPoint, PoolRow, pool_rows
from pgarena.contract.flags import POOL_EXCEEDED
from pgarena.report.charts import CHART_HEIGHT_PX, CHART_WIDTH_PX, legend_entry
from pgarena.report.markup import table
from pgarena.results.models import RunResults, StackInfo

INTRO = (
    "Each stack was started once per pool size (PGARENA_POOL_SIZE, and the per-worker shares derived from it), "
    "checked again after each restart, warmed and measured at that pool size. Each figure: the median 2xx/s with "
    "the 95 % interval of the mean over its windows, then the most database connections the stack was seen "
    "holding during the cell (`peak`, pg_stat_activity polled every 0.2 s: a lower bound). A figure is shown "
    "only where the stack stayed within its pool; one that held more did not run at that pool size "
    "(`pool-exceeded`) and gets what it held instead. The last column divides the largest pool size's figure "
    "by the smallest's, with a 95 % interval (Welch's t-interval on the log of each window's 2xx/s: the two "
    "were measured at different times), centred on the ratio of the windows' geometric means — with noisy "
    "windows it can differ from the ratio of the two medians shown. It describes one stack, it does not rank; "
    "the results tables rank the stacks within each pool size.")


def rtt_title(rtt: float | None) -> str:
    """'database 2 ms away' or 'stacks connected to PostgreSQL directly'."""
    return "stacks connected to PostgreSQL directly" if rtt is None else f"database {rtt:g} ms away"


def point_text(point: PoolPoint | None) -> str:
    """'5,012 (4,950–5,080), peak 10'; what the stack held where it exceeded its pool; why else no figure."""
    if point is None:
        return "not measured"
    if point.problem == POOL_EXCEEDED:
        return f"– (held {point.peak_connections}: {POOL_EXCEEDED})"
    if point.problem is not None:
        return f"– ({point.problem})"
    assert point.rps is not None
    interval = "" if point.low is None or point.high is None else f" ({point.low:,.0f}–{point.high:,.0f})"
    held = "peak not observed" if point.peak_connections is None else f"peak {point.peak_connections}"
    return f"{point.rps:,.0f}{interval}, {held}"


def ratio_text(row: PoolRow) -> str:
    if row.ratio is None:
        return "–"
    ratio, low, high = row.ratio
    return f"{ratio:.2f}× ({low:.2f}–{high:.2f})"


def _label(row: PoolRow) -> str:
    return row.workload + (f" {row.parameter}" if row.parameter is not None else "")


def _by_rtt(rows: list[PoolRow]) -> dict[float | None, list[PoolRow]]:
    groups: dict[float | None, list[PoolRow]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: r.db_rtt_ms if r.db_rtt_ms is not None else -1.0):
        groups[row.db_rtt_ms].append(row)
    return groups


def _starts_line(stack: StackInfo) -> str:
    parts = []
    for start in stack.pool_starts:  # a start verified fully (the first, or the first after a resume) has no checks
        healthy = "never healthy" if start.startup_seconds is None else f"healthy after {start.startup_seconds:.2f} s"
        checked = ", then " + ", ".join(f"{w} {'✅' if ok else '❌'}" for w, ok in start.verified.items()) \
            if start.verified else ""
        held = "connections not observed" if start.peak_connections is None else \
            f"held at most {start.peak_connections}"
        problem = f" — {start.problem}" if start.problem else ""
        parts.append(f"pool {start.pool_size}: {'restarted' if start.verified else 'started'}, {healthy}{checked}, "
                     f"{held}{problem}")
    return f"- **{stack.id}**: " + "; ".join(parts)


def section(results: RunResults) -> str:
    """The Markdown section (empty when no series was measured at two pool sizes)."""
    pools, rows = pool_rows(results)
    if not rows:
        return ""
    smallest, largest = min(pools), max(pools)
    headers = ["Stack", "Workload", "VUs", *(f"pool size {p}" for p in pools), f"pool {largest} / pool {smallest}"]
    groups = _by_rtt(rows)
    parts = [INTRO]
    for rtt, group in groups.items():
        body = [(r.stack, _label(r), f"{r.vus} ({r.engine})", *(point_text(r.points.get(p)) for p in pools),
                 ratio_text(r)) for r in group]
        text = table(headers, body, "lll" + "r" * (len(pools) + 1))
        parts.append(text if len(groups) == 1 and rtt is None else f"### Throughput by pool size, {rtt_title(rtt)}"
                     f"\n\n{text}")
    starts = [_starts_line(s) for s in results.stacks if s.pool_starts]
    if starts:
        parts.append("Each start of each stack (a restart is checked with its health path and one request per "
                     "workload, judged value by value; every cell then checks its own requests before its load):"
                     "\n\n" + "\n".join(starts))
    return "\n\n".join(parts)


def payload(results: RunResults) -> dict:
    """The HTML report's pool-size section as plain data (empty groups: not a pool-size run)."""
    pools, rows = pool_rows(results)
    if not rows:
        return {"pools": [], "groups": [], "starts": [], "intro": INTRO.replace("`", "")}
    groups = []
    for rtt, group in _by_rtt(rows).items():
        groups.append({"title": None if rtt is None and len(_by_rtt(rows)) == 1 else rtt_title(rtt), "rows": [{
            "stack": r.stack, "workload": _label(r), "vus": r.vus, "engine": r.engine,
            "points": [{"text": point_text(r.points.get(p)),
                        "rps": None if r.points.get(p) is None else _rounded(r.points[p].rps),
                        "problem": None if r.points.get(p) is None else r.points[p].problem} for p in pools],
            "ratio": ratio_text(r)} for r in group]})
    return {"pools": pools, "groups": groups, "intro": INTRO.replace("`", ""),
            "starts": [_starts_line(s).removeprefix("- ").replace("**", "") for s in results.stacks if s.pool_starts]}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def figures(results: RunResults, colors: dict[str, str]) -> list[dict]:
    """One chart per workload × parameter × level × engine × round trip: 2xx/s against the pool size, one
    line per stack, whiskers the 95 % interval; a point without a figure (pool-exceeded, invalid) is left out
    and named under the chart."""
    pools, rows = pool_rows(results)
    series: dict[tuple, list[PoolRow]] = defaultdict(list)
    for row in rows:
        series[(row.workload, row.parameter, row.vus, row.engine, row.db_rtt_ms)].append(row)
    out = []
    for index, ((workload, parameter, vus, engine, rtt), group) in enumerate(series.items(), 1):
        data, notes = [], []
        for row in sorted(group, key=lambda r: list(colors).index(r.stack) if r.stack in colors else 99):
            color = colors.get(row.stack, "#333")
            shown = [p for p in row.points.values() if p.rps is not None]
            notes += [f"{row.stack} at pool size {p.pool_size}: {point_text(p)}" for p in row.points.values()
                      if p.rps is None]
            data.append(legend_entry(row.stack, color, pools[0], "lines+markers"))
            data.append({
                "type": "scatter", "mode": "lines+markers", "name": row.stack, "legendgroup": row.stack,
                "showlegend": False, "x": [p.pool_size for p in shown], "y": [_rounded(p.rps) for p in shown],
                "line": {"color": color}, "marker": {"size": 8},
                "error_y": {"type": "data", "symmetric": False,
                            "array": [_rounded(max(0.0, (p.high or p.rps) - p.rps)) for p in shown],  # type: ignore[operator]
                            "arrayminus": [_rounded(max(0.0, p.rps - (p.low or p.rps))) for p in shown],  # type: ignore[operator]
                            "color": color, "thickness": 1.2, "width": 3},
                "hovertext": [f"<b>{row.stack}</b> · pool size {p.pool_size}<br>{point_text(p)} 2xx/s"
                              for p in shown], "hoverinfo": "text"})
        label = workload + (f" {parameter}" if parameter is not None else "")
        title = f"Throughput by pool size — {label}, {vus} VUs ({engine})" + (
            "" if rtt is None else f", {rtt_title(rtt)}")
        notes.append("Points: median 2xx/s; whiskers: the 95 % interval of the mean; only where the stack held "
                     "at most its pool size.")
        out.append({"id": f"pool-size-{index}", "kind": "pool-size", "title": title, "data": data, "notes": notes,
                    "layout": {"title": {"text": title}, "width": CHART_WIDTH_PX, "height": CHART_HEIGHT_PX,
                               "showlegend": True,
                               "xaxis": {"title": {"text": "pool size (PGARENA_POOL_SIZE)"}, "tickvals": pools,
                                         "type": "log" if max(pools) / min(pools) >= 10 else "linear"},
                               "yaxis": {"title": {"text": "2xx answers/s (median)"}, "rangemode": "tozero"}}})
    return out
