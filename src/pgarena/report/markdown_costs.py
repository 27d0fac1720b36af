"""The Markdown report's sections on what stacks cost and sustain: CPU per request at the top load, what
each kind of work costs relative to perf-minimal, the max sustainable rate under the SLO, and cold start."""

from __future__ import annotations

from collections import defaultdict

from pgarena.analysis.ranking import efficiency_ranks
from pgarena.analysis.workcost import column_label, work_costs
from pgarena.report.families import WORKLOAD_ORDER
from pgarena.report.markup import measured_number, milliseconds, number, peak_memory, table
from pgarena.report.targets import NOT_MEASURED
from pgarena.results.models import Cell, RunResults, StackInfo


def work_cost_section(results: RunResults) -> str:
    """Each stack's throughput on every scenario as a share of its own perf-minimal (analysis/workcost.py)."""
    columns, rows = work_costs(results)
    if not rows:
        return ""
    body = [(r.stack, f"{r.vus}", r.engine, number(r.minimal_rps),
             *(f"{r.shares[c]:.2f}×" if c in r.shares else "–" for c in columns)) for r in rows]
    text = ("Each stack's median 2xx/s on a scenario divided by its own perf-minimal 2xx/s at the same load "
            "level (same generator): how much of its smallest round trip's throughput each kind of work leaves "
            "it. A figure about the stack alone (ratios of medians; they describe, they do not rank).")
    return text + "\n\n" + table(["Stack", "VUs", "Engine", "perf-minimal 2xx/s",
                                   *(column_label(*c) for c in columns)], body, "lrlr" + "r" * len(columns))


def cost_section(results: RunResults) -> str:
    """CPU µs per request (stack, PostgreSQL) and peak memory at each workload parameter's highest
    closed-model load, ranked by efficiency with ties — the steadier twin of the throughput ranking."""
    groups: dict[tuple, list[Cell]] = defaultdict(list)
    for cell in results.cells:
        if cell.model == "closed" and cell.summary is not None:
            # engines never share a rank, nor do pool sizes or round trips (a run with several)
            groups[(cell.workload, cell.parameter, cell.engine, cell.pool_dimension, cell.db_rtt_ms)].append(cell)
    rows = []
    mixed = len({key[2] for key in groups}) > 1
    for (workload, parameter, engine, pool, rtt), cells in sorted(groups.items(), key=lambda kv: (
            WORKLOAD_ORDER.index(kv[0][0]) if kv[0][0] in WORKLOAD_ORDER else 99, kv[0][1] or 0, kv[0][2],
            kv[0][3] or 0, kv[0][4] or 0)):
        top = max(c.vus for c in cells)
        at_top = [c for c in cells if c.vus == top]
        ranked = efficiency_ranks(at_top)
        listed = {id(c) for c, _ in ranked}
        # NOTE: a cell without both CPU figures (a remote target's) is listed too, its figures "not measured"
        for cell, rank in [*ranked, *((c, "–") for c in at_top if id(c) not in listed)]:
            s = cell.summary
            assert s is not None
            interval = s.cpu_us_per_request_interval
            measured = s.stack_cpu_us_per_request is not None and s.db_cpu_us_per_request is not None
            rows.append((
                f"{workload}{'' if parameter is None else f' {cell.parameter_name}={parameter}'} @ {top} VUs"
                + (f" ({engine})" if mixed else "") + ("" if pool is None else f", pool size {pool}")
                + ("" if rtt is None else f", database {rtt:g} ms away"),
                rank, cell.stack, measured_number(s.stack_cpu_us_per_request),
                measured_number(s.db_cpu_us_per_request),
                number(s.stack_cpu_us_per_request + s.db_cpu_us_per_request) if measured else NOT_MEASURED,  # type: ignore[operator]
                "–" if interval is None else f"{number(interval.low)}–{number(interval.high)}",
                peak_memory(s), f"{number(s.rps.median)}/s"))
    if not rows:
        return ""
    source = results.environment.cpu_accounting or "psutil sampling"
    return (f"CPU time per answered request at the highest closed-model load of each workload parameter "
            f"({source}). Lower is better; ranks tie where the 95 % intervals over the repetitions overlap.\n\n"
            + table(["Cell", "#", "Stack", "Stack µs/req", "PostgreSQL µs/req", "Total µs/req", "95 % interval",
                     "Peak PSS", "Requests/s"], rows, "lrlrrrrrr"))


def slo_section(results: RunResults) -> str:
    """Seed 001's sweep, searched: the max sustainable rate per stack under the SLO, then each curve."""
    searches = results.slo_searches
    if not searches:
        return ""
    first = searches[0]
    summary_rows = []
    for found in sorted(searches, key=lambda f: (f.workload, f.parameter or 0, -(f.answer_rps or 0))):
        high = "not reached" if found.bracket_high is None else number(found.bracket_high)
        summary_rows.append((
            found.stack, f"{found.workload}{'' if found.parameter is None else f' {found.parameter_name}={found.parameter}'}",
            "none" if found.answer_level is None else f"{number(found.answer_level)}/s",
            "–" if found.answer_rps is None else f"{number(found.answer_rps)}/s",
            f"{number(found.bracket_low)} – {high}", f"{len(found.curve)} ({found.stop_reason})",
            found.error or ""))
    parts = [
        f"SLO: p99 ≤ {first.slo_p99_ms:g} ms, failed + dropped requests ≤ {first.slo_max_error_rate:.0%} and no "
        "request timed out, "
        f"open model ({first.window_seconds:g} s per step). The answer is the highest offered rate that met it; the "
        "limit lies between it and the lowest rate that failed (the bracket). Each step is one window, so "
        "noise near the knee can move the answer by about the bracket's width.",
        table(["Stack", "Workload", "Max sustainable rate", "Achieved", "Limit bracket (req/s)", "Steps", "Error"],
              summary_rows, "llrrrll"),
    ]
    for found in searches:
        rows = [(number(p.level), f"{number(p.rps / 1000, 1)}",
                 *(milliseconds(getattr(p.latency, name), name in p.latency.censored)
                   for name in ("avg_ms", "p90_ms", "p95_ms", "p99_ms", "max_ms")),
                 f"{p.error_rate:.1%}" + (f" ({p.timeouts:,} timed out)" if p.timeouts else ""),
                 "✅" if p.passed else "❌")
                for p in sorted(found.curve, key=lambda p: p.level)]
        title = f"{found.stack} · {found.workload}" + ("" if found.parameter is None else f" {found.parameter_name}={found.parameter}")
        parts.append(f"#### {title}\n\n" + table(
            ["Offered req/s", "2xx/s [K]", "avg", "p90", "p95", "p99", "max", "failed + dropped", "SLO"], rows,
            "rrrrrrrrl"))
    return "\n\n".join(parts)


def cold_start_section(stacks: list[StackInfo]) -> str:
    """Each stack's cold start (health, first correct answer, first requests' latency); '' when none has one."""
    rows = []
    for s in stacks:
        cs = s.cold_start
        if cs is None and s.target_url is not None and s.status == "ok":  # pgarena did not start it
            rows.append((s.id, *[NOT_MEASURED] * 6, "– (a remote target)"))
            continue
        if cs is None:
            continue
        later = sorted(cs.first_requests_ms[1:]) or cs.first_requests_ms
        rows.append((s.id, f"{cs.healthy_seconds:.2f} s",
                     "none correct" if cs.first_correct_seconds is None else f"{cs.first_correct_seconds:.2f} s",
                     milliseconds(cs.first_requests_ms[0]), milliseconds(later[len(later) // 2]), milliseconds(max(cs.first_requests_ms)),
                     f"{cs.failed}/{len(cs.first_requests_ms)}",
                     f"`{cs.request if len(cs.request) <= 48 else cs.request[:47] + '…'}`"))
    if not rows:
        return ""
    return ("Process start → first answer of the health path, and → first correct workload answer; then the "
            "latency of the first sequential requests (before any warm-up).\n\n"
            + table(["Stack", "Healthy after", "First correct answer after", "1st request", "Median of the next",
                     "Slowest", "Wrong answers", "Request"], rows, "lrrrrrrl"))
