"""The report's resilience section (issue 14): per fault, the stacks ranked by recovery time, and a timeline
per stack × workload × fault (2xx answers and failed requests in 100 ms bins, the fault shaded)."""

from __future__ import annotations

from collections import defaultdict

from pgarena.analysis.recovery import NOT_RANKED, RANKED_STATUSES, RecoveryTime, rank_by_recovery
from pgarena.report.markup import table
from pgarena.results.models import FaultResult, RunResults

INTRO = (
    "Under steady open-model load at half of each stack's own closed-model peak (k6, whose per-request output "
    "records failures too), each fault was injected 7 s into a 20 s window; the stacks were not restarted. "
    "**Failed**: non-2xx answers, requests without an answer and requests never sent (the open model's dropped "
    "iterations: due while every connection waited on a hung stack) from the fault until recovery. "
    "**First 2xx**: from "
    "the fault's end to the first correct answer. **Recovered**: from the fault's end until the 2xx rate over a "
    "second is back within 10 % of the rate before the fault, and stays there for a second more; *never* is a "
    "finding. **Answers again**: after the window the stack, not restarted, answered correctly. Resolution: "
    "one 100 ms bin; stacks closer than that tie. Each rank rests on one fault window per stack: a single "
    "observation, not repeated, so an order of a few bins may not hold in another run. "
    "Definitions: src/pgarena/analysis/recovery.py.")
ONE_WINDOW_NOTE = "Ranks rest on one fault window per stack (not repeated)."
"""Said under every resilience table: the order is one observation per stack (issue 22)."""


def _recovery_time(r: FaultResult) -> RecoveryTime | None:
    """What the ranking reads of a stored fault result; None when it takes no rank."""
    if r.status not in RANKED_STATUSES:
        return None
    return RecoveryTime(status=r.status, recovered_after_s=r.recovered_after_s, bin_s=r.bin_seconds)


def ranked_rows(results: RunResults) -> list[tuple[str, str, list[tuple[str, FaultResult]]]]:
    """(workload, fault, [(rank, result)] in rank order) for every fault of the run."""
    groups: dict[tuple[str, str], list[FaultResult]] = defaultdict(list)
    for r in results.resilience:
        groups[(r.workload, r.fault)].append(r)
    out = []
    for (workload, fault), items in groups.items():
        rankable = [(r, time) for r in items if (time := _recovery_time(r)) is not None]
        ranked = [(x.rank, x.key) for x in rank_by_recovery(rankable)]
        rest = [(NOT_RANKED, r) for r in items if _recovery_time(r) is None]
        out.append((workload, fault, ranked + rest))
    return out


def _s(value: float | None, never: str = "–") -> str:
    return never if value is None else f"{value:.1f} s"


def _row(rank: str, r: FaultResult) -> tuple[str, ...]:
    dropped = r.errors_by_kind.get("dropped", 0)
    failed = ("not measured" if r.failed_requests is None else
              f"{r.failed_requests:,}" + (f" ({dropped:,} never sent)" if dropped else ""))
    recovered = ("**never**" if r.status == "never-recovered" else
                 _s(r.recovered_after_s) if r.status == "recovered" else f"– ({r.status}{': ' + r.reason if r.reason else ''})")
    tx = "–" if r.tx_invariants is None else ("✅ hold" if r.tx_invariants.holds else f"❌ {r.tx_invariants.problem}")
    again = "–" if r.recovered_without_restart is None else ("yes" if r.recovered_without_restart else "**no**")
    rate = "–" if r.rate_rps is None else f"{r.rate_rps:,.0f}"
    return (rank, r.stack, rate, failed, _s(r.first_ok_after_s, "none"), recovered, again, tx)


def section(results: RunResults) -> str:
    groups = ranked_rows(results)
    if not groups:
        return ""
    parts = [INTRO]
    for workload, fault, rows in groups:
        description = rows[0][1].description
        parts.append(f"### {fault} on {workload} — {description}\n\n" + table(
            ["#", "Stack", "Load req/s", "Failed", "First 2xx", "Recovered", "Answers again", "TPC-B invariants"],
            [_row(rank, r) for rank, r in rows], "llrrrrll") + f"\n\n{ONE_WINDOW_NOTE}")
    return "\n\n".join(parts)


def figures(results: RunResults) -> list[dict]:
    """One timeline chart per stack × workload × fault that has one (Plotly figure dicts, like figures.py)."""
    out = []
    for r in results.resilience:
        if not r.timeline_ok:
            continue
        x = [round(i * r.bin_seconds, 2) for i in range(len(r.timeline_ok))]
        rate = 1 / r.bin_seconds
        data = [{"type": "scatter", "mode": "lines", "name": "2xx/s", "x": x,
                 "y": [v * rate for v in r.timeline_ok], "line": {"color": "#2a7"},
                 "hovertemplate": "%{x:.1f} s: %{y:,.0f} 2xx/s<extra></extra>"}]
        if r.timeline_failed:
            data.append({"type": "bar", "name": "failed/s", "x": x, "y": [v * rate for v in r.timeline_failed],
                         "marker": {"color": "#d33"}, "hovertemplate": "%{x:.1f} s: %{y:,.0f} failed/s<extra></extra>"})
        shapes = [{"type": "rect", "xref": "x", "yref": "paper", "x0": r.fault_start_s, "x1": max(
            (r.fault_end_s or 0), (r.fault_start_s or 0) + r.bin_seconds), "y0": 0, "y1": 1,
                   "fillcolor": "#888", "opacity": 0.2, "line": {"width": 0}}]
        slug = f"{r.stack}-{r.workload}-{r.fault}"
        out.append({"id": f"resilience-{slug}", "kind": "resilience",
                    "title": f"{r.stack} · {r.fault} on {r.workload}", "data": data, "notes": [],
                    "layout": {"title": {"text": f"{r.stack} · {r.fault} on {r.workload}"}, "width": 760,
                               "height": 300, "showlegend": True, "shapes": shapes,
                               "xaxis": {"title": {"text": "seconds into the window (fault shaded)"}},
                               "yaxis": {"title": {"text": "per second (100 ms bins)"}}}})
    return out


def payload(results: RunResults) -> dict:
    """The section for the HTML page: the same tables as rows of cells."""
    return {"intro": INTRO.replace("**", ""),
            "columns": ["#", "Stack", "Load req/s", "Failed", "First 2xx", "Recovered", "Answers again",
                        "TPC-B invariants"],
            "note": ONE_WINDOW_NOTE,
            "groups": [{"title": f"{fault} on {workload} — {rows[0][1].description}",
                        "rows": [[c.replace("**", "") for c in _row(rank, r)] for rank, r in rows]}
                       for workload, fault, rows in ranked_rows(results)]}
