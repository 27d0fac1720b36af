"""The HTML report: one self-contained file (Plotly's JavaScript inline, no network at view time) with the
headline, charts, sortable tables of every cell, verification, stacks, cost and the environment.

`html_payload` gathers everything the page shows from results.json only, as plain JSON-serialisable data
(deterministic: the golden test compares it); `render_html` puts it through the Jinja template
`templates/report.html.j2`. Tables are rendered by the template (they print and read without JavaScript);
charts are drawn in the page by `Plotly.newPlot` from the figure specs of figures.py embedded as JSON.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from functools import cache

import jinja2

from pgarena.analysis.ranking import UNRANKED, cost
from pgarena.analysis.verdicts import baseline_of
from pgarena.analysis.workcost import column_label, work_costs
from pgarena.contract import flags as F
from pgarena.contract.values import Verdict
from pgarena.report import figures, forest, generators, poolsize, resilience, restgraphql, wire
from pgarena.report import targets as remote
from pgarena.report.conditions import ceiling_note, ceiling_rows, ceiling_share, ceiling_text, schedule_summary
from pgarena.report.charts import rounded, stack_colors
from pgarena.report.families import (
    WORKLOAD_ORDER,
    Family,
    cell_marks,
    families,
    latency_medians,
    level_sort_key,
    rps_bounds,
)
from pgarena.report.html_verdicts import Verdicts, headline, ratio_payload
from pgarena.report.markdown_results import variants_label, window_accounting_label
from pgarena.report.network import placement_text, topology_text
from pgarena.results.models import Cell, RunResults, StackInfo

TEMPLATE = "report.html.j2"

FLAG_MEANINGS = {
    F.DEMONSTRATION: "a stack kept to show a mistake on purpose (stack.toml competes = false): shown, never ranked",
    F.FAILURES: "more than 1 % of requests failed (invalid, not ranked)",
    F.NOISY: "the RPS confidence interval ended wider than the target: more rounds would have helped (still "
             "ranked where its interval is clear of its neighbours)",
    F.DROPPED: "open model: more than 1 % of offered requests were not completed (invalid, not ranked)",
    F.CHECKS_FAILED: "the answers sampled under load show more than 1 % wrong (one-sided exact binomial test at "
                     "level 1 %; invalid, not ranked)",
    "invariants-broken": "a tx cell lost or duplicated writes (invalid, not ranked)",
    "columns-wrong": "the stack's answers have ❌ columns (ranked among all stacks only, not among the exact ones)",
    "content-type-wrong": "the right JSON without Content-Type: application/json (ranked among all stacks only)",
    F.ANSWER_MAPPED: "the right values in a shape the stack's stack.toml [answer] declares (an envelope, camelCase "
                     "keys), undone before judging (ranked among all stacks only)",
    F.DB_UNCHECKED: "the database could not be checked (pg_stat_statements unreadable, e.g. --database-url without "
                    "pg_read_all_stats): nothing shows the answers came from it (ranked among all stacks only)",
    F.PIPELINES_ACROSS_REQUESTS: "the wire observer saw statements of several requests in one flight to PostgreSQL "
                                 "(pipelining or batching across requests: ranked among all stacks only)",
    "queries-wrong": "the database accounting found a cache or an N+1 (invalid, not ranked)",
    F.VARIANTS_WRONG: "a request variant was answered wrongly before the load (invalid, not ranked)",
    F.GENERATOR_BOUND: "the load generator's CPUs were more than 90 % busy over the measured window (the generator, "
                       "pgarena's own samplers and Toxiproxy together), or the request rate reached 90 % of its "
                       "measured headroom: it measured the generator (not ranked)",
    F.ABOVE_CEILING: "2xx/s above the database ceiling measured under the cell's conditions: a measurement problem "
                     "(its DB ceiling share is marked ⚠), not a finding",
    F.DATABASE_BOUND: "PostgreSQL used more than 90 % of the server CPUs while the stack used under 50 %",
    F.TIMEOUTS: "some requests hit the HTTP timeout",
    F.POOL_EXCEEDED: "the stack held more database connections than the pool size (invalid, not ranked)",
    F.LISTENS_WIDE: "the stack listened on more than the loopback address it was given",
}
"""One line per flag for the legend; docs/methodology.md has the long form."""


def _level_value(cell: Cell) -> float:
    return cell.vus if cell.model == "closed" else (cell.arrival_rate or 0.0)


def cell_tables(results: RunResults, verdicts: Verdicts) -> list[dict]:
    """Per workload × parameter, one row per cell for its sortable table (by level, then median RPS)."""
    return [{"title": family.title, "slug": family.slug, "rows": cell_rows(family, verdicts, results),
             "engines": sorted({c.engine for c in family.cells})}
            for family in families(results.cells)]


def cell_rows(family: Family, verdicts: Verdicts, results: RunResults) -> list[dict]:
    """One row per cell of one workload × parameter: its two ranks, ratios, DB-ceiling share and figures."""
    rows = []
    for cell in sorted(family.cells, key=lambda c: (level_sort_key(c),
                                                      -(c.summary.rps.median if c.summary else -1), c.stack)):
        row = {"family": family.title, "workload": cell.workload, "level": cell.level_label,
               "level_value": rounded(_level_value(cell)), "model": cell.model, "stack": cell.stack,
               "rank": verdicts.rank(cell), "rank_all": verdicts.rank_all(cell),
               "efficiency_rank": verdicts.efficiency.get(id(cell), UNRANKED),
               "marks": cell_marks(cell), "flags": list(cell.flags), "error": cell.error,
               "repetitions": len(cell.repetitions), "engine": cell.engine, "variants": variants_label(cell),
               "window_accounting": cell.window_accounting.symbol if cell.window_accounting else "not measured",
               "window_accounting_detail": window_accounting_label(cell)}
        verdict = verdicts.of.get(id(cell))
        row.update({
            "wrong_columns": [] if verdict is None else verdict.wrong_columns.get(cell.stack, []),
            "to_best": None if verdict is None else ratio_payload(verdict, cell, verdict.best, verdict.to_best),
            "to_baseline": None if verdict is None or verdict.baseline_problem else ratio_payload(
                verdict, cell, verdict.baseline, verdict.to_baseline),
            "paired": bool(verdict and verdict.paired),
            "ceiling_share": rounded(ceiling_share(results, cell), 4), "ceiling_text": ceiling_text(results, cell)})
        s = cell.summary
        if s is not None:
            low, high, what = rps_bounds(cell)
            lat = latency_medians(cell) or {}
            inv = cell.tx_invariants
            row.update({
                "rps_median": rounded(s.rps.median), "rps_low": rounded(low), "rps_high": rounded(high), "interval": what,
                "rps_rel_half_width": rounded(s.rps_interval.rel_half_width, 4) if s.rps_interval else None,
                "stop_reason": s.stop_reason,
                "latency_avg_ms": rounded(s.latency_avg_ms.median, 3), "latency_p50_ms": rounded(lat.get("p50"), 3),
                "latency_p99_ms": rounded(s.latency_p99_ms.median, 3), "requests_total": s.requests_total,
                "latency_censored": list(s.latency_censored),
                "requests_per_second_all": rounded(s.requests_per_second_all.median)
                if s.requests_per_second_all else None,
                "failures_total": s.failures_total, "failure_rate": rounded(s.failure_rate, 4),
                "offered_total": s.offered_total, "dropped_total": s.dropped_total,
                "stack_cpu_us": rounded(s.stack_cpu_us_per_request, 1), "db_cpu_us": rounded(s.db_cpu_us_per_request, 1),
                "cpu_us": rounded(cost(cell), 1),
                "rss_mib": None if s.stack_rss_peak_bytes is None else rounded(s.stack_rss_peak_bytes / 2**20, 1),
                "pss_mib": None if s.stack_pss_peak_bytes is None else rounded(s.stack_pss_peak_bytes / 2**20, 1),
                "peak_connections": cell.peak_connections,
                "generator_cpu_fraction": rounded(s.generator_cpu_fraction, 3),
                "tx_invariants": None if inv is None else {"holds": inv.holds, "problem": inv.problem},
            })
        rows.append(row)
    return rows


def flags_present(results: RunResults) -> list[dict]:
    counts = Counter(flag for cell in results.cells for flag in cell.flags)
    failed = sum(1 for cell in results.cells if "failed" in cell_marks(cell))
    rows = [{"flag": flag, "meaning": FLAG_MEANINGS.get(flag, ""), "cells": n,
             "not_ranked": flag in F.INVALID or flag == F.DEMONSTRATION}
            for flag, n in sorted(counts.items())]
    if failed:
        rows.append({"flag": "failed", "meaning": "the cell produced no measurement", "cells": failed, "not_ranked": True})
    return rows


def slo_tables(results: RunResults) -> list[dict]:
    """Per SLO search: the answer and the seed-001-style sweep table (one row per level, by level)."""
    out = []
    for index, search in enumerate(results.slo_searches, 1):
        order = {id(p): i for i, p in enumerate(search.curve, 1)}
        out.append({
            "title": figures.slo_title(search), "figure": f"slo-{index}-{search.stack}" if search.curve else None,
            "stack": search.stack, "model": search.model, "unit": "req/s" if search.model == "open" else "VUs",
            "answer_level": rounded(search.answer_level), "answer_rps": rounded(search.answer_rps),
            "bracket_low": rounded(search.bracket_low), "bracket_high": rounded(search.bracket_high),
            "stop_reason": search.stop_reason, "error": search.error, "window_seconds": search.window_seconds,
            "rows": [{"step": order[id(p)], "level": rounded(p.level), "rps": rounded(p.rps),
                      **{f"{k}_ms": rounded(getattr(p.latency, f"{k}_ms"), 3) for k in ("avg", "p50", "p90", "p95", "p99", "max")},
                      "censored": list(p.latency.censored), "timeouts": p.timeouts,
                      "error_rate": rounded(p.error_rate, 5), "dropped": p.dropped, "passed": p.passed,
                      "answer": p.level == search.answer_level}
                     for p in sorted(search.curve, key=lambda p: p.level)],
        })
    return out


def _status_title(results: RunResults, stack: str, workload: str) -> dict:
    v = results.verification(stack, workload)
    if v is None:
        return {"symbol": "–", "text": "not verified", "title": ""}
    if not v.ok:
        failed = [c for c in v.checks if not c.ok]
        return {"symbol": "❌", "text": failed[0].name if failed else "failed",
                "title": "; ".join(f"{c.name}: {c.detail}" for c in failed)}
    if v.content_type_wrong:
        failed = [c for c in v.checks if not c.ok]
        mapped = f"; answer mapped from {v.answer_mapping}" if v.answer_mapping else ""
        return {"symbol": "❌", "text": "no JSON content type (loaded, content-type-wrong"
                + (", answer-mapped)" if v.answer_mapping else ")"),
                "title": "; ".join(f"{c.name}: {c.detail}" for c in failed) + mapped}
    wrong = [c for c in v.columns if c.verdict is Verdict.WRONG]
    if v.answer_mapping:
        return {"symbol": "❌", "text": "answer mapped (loaded, answer-mapped)"
                + (f", {len(wrong)} wrong column(s)" if wrong else ""),
                "title": f"the stack's stack.toml [answer] declares {v.answer_mapping}: pgarena undid it, then "
                         "judged the values" + "".join(f"; {c.column}: {c.reason}" for c in wrong)}
    if wrong:
        return {"symbol": "❌", "text": f"{len(wrong)} wrong column(s)",
                "title": "; ".join(f"{c.column}: {c.reason}" for c in wrong)}
    equivalent = [c for c in v.columns if c.verdict is Verdict.EQUIVALENT]
    if equivalent:
        return {"symbol": "⚠️", "text": f"ok, {len(equivalent)} column(s) in another encoding",
                "title": "; ".join(f"{c.column}: {c.reason}" for c in equivalent)}
    return {"symbol": "✅", "text": "ok", "title": f"{len(v.checks)} checks passed"}


def verification(results: RunResults) -> dict:
    """The stack × workload overview, the column matrices, robustness, tx invariants and accounting."""
    vs = results.verifications
    stacks = list(dict.fromkeys(v.stack for v in vs))
    workloads = [w for w in WORKLOAD_ORDER if any(v.workload == w for v in vs)]
    workloads += sorted({v.workload for v in vs} - set(workloads))
    overview = [{"stack": stack, "cells": [_status_title(results, stack, w) for w in workloads],
                 "robustness": f"{sum(c.ok for v in vs if v.stack == stack for c in v.bad_input)}/"
                               f"{sum(len(v.bad_input) for v in vs if v.stack == stack)}"} for stack in stacks]
    matrices = []
    for workload in workloads:
        relevant = [v for v in vs if v.workload == workload and v.columns]
        if not relevant:
            continue
        columns = list(dict.fromkeys((c.column, c.pg_type) for v in relevant for c in v.columns))
        rows = []
        for v in relevant:
            by_name = {c.column: c for c in v.columns}
            rows.append({"stack": v.stack, "cells": [
                {"symbol": by_name[name].verdict.symbol, "verdict": by_name[name].verdict.value,
                 "title": by_name[name].reason or by_name[name].verdict.value} if name in by_name
                else {"symbol": "–", "verdict": "", "title": "not compared"} for name, _ in columns]})
        reasons = [{"stack": v.stack, "column": c.column, "symbol": c.verdict.symbol, "reason": c.reason}
                   for v in relevant for c in v.columns if c.verdict is not Verdict.EXACT]
        matrices.append({"workload": workload, "columns": [{"name": n, "pg_type": t} for n, t in columns],
                         "rows": rows, "reasons": reasons})
    robustness = [{"stack": v.stack, "workload": v.workload, "ok": sum(c.ok for c in v.bad_input),
                   "total": len(v.bad_input),
                   "failures": [{"description": c.description, "path": c.path, "status": c.status, "detail": c.detail}
                                for c in v.bad_input if not c.ok]} for v in vs if v.bad_input]
    tx = [{"stack": v.stack, "where": "verification requests", **v.tx_invariants.model_dump()}
          for v in vs if v.tx_invariants is not None]
    tx += [{"stack": c.stack, "where": f"cell at {c.level_label}", **c.tx_invariants.model_dump()}
           for c in results.cells if c.tx_invariants is not None]
    accounting = []
    for v in vs:
        a = v.accounting
        if a is None:
            if v.accounting_unavailable:
                accounting.append({"stack": v.stack, "workload": v.workload, "unavailable": v.accounting_unavailable})
            continue
        accounting.append({"stack": v.stack, "workload": v.workload, "unavailable": None, "requests": a.requests,
                           "statements": rounded(a.workload_statements_per_request, 3),
                           "expected": a.expected_statements_per_request, "rows": rounded(a.rows_per_request, 3),
                           "other": rounded(a.other_statements_per_request, 3),
                           "allowed_other": a.allowed_other_statements_per_request,
                           "top_other": dict(a.top_other_statements), "symbol": a.verdict.symbol, "reason": a.reason})
    return {"workloads": workloads, "overview": overview, "matrices": matrices, "robustness": robustness,
            "tx": tx, "accounting": accounting}


def _stack_row(s: StackInfo, config: dict) -> dict:
    cs = s.cold_start
    return {
        "id": s.id, "title": s.title, "language": s.language, "framework": f"{s.framework} {s.framework_version}",
        "driver": f"{s.driver} {s.driver_version}", "server": s.server, "pooler": s.pooler,
        "pool_size": ", ".join(map(str, config["pool_sizes"])) if config.get("pool_sizes") else config.get("pool_size"),
        "workers": config.get("workers"),
        "prepared_statements": s.prepared_statements, "workloads": s.workloads, "status": s.status,
        "reason": s.reason, "log_tail": s.log_tail, "notes": s.notes,
        "lines_of_code": None if s.lines_of_code is None else s.lines_of_code.total,
        "loc_by_language": None if s.lines_of_code is None else dict(s.lines_of_code.by_language),
        "build_seconds": rounded(s.build_seconds, 3), "startup_seconds": rounded(s.startup_seconds, 3),
        "warmup_seconds": s.warmup_seconds, "warmup_steady": s.warmup_steady,
        "listen_addresses": s.listen_addresses, "peak_connections": s.peak_connections, "flags": s.flags,
        "target_url": s.target_url,
        "cold_start": None if cs is None else {
            "healthy_seconds": rounded(cs.healthy_seconds, 3), "first_correct_seconds": rounded(cs.first_correct_seconds, 3),
            "request": cs.request, "first_ms": rounded(cs.first_requests_ms[0], 3) if cs.first_requests_ms else None,
            "median_ms": rounded(statistics.median(cs.first_requests_ms), 3) if cs.first_requests_ms else None,
            "count": len(cs.first_requests_ms), "failed": cs.failed},
    }


def headroom(results: RunResults) -> dict:
    """The generator's own ceiling beside the fastest cell, or why it was not measured."""
    h = results.generator_headroom
    if h is None:
        return {"measured": False, "unavailable": results.environment.headroom_unavailable or "not measured in this run"}
    scope = generators.headroom_scope(results)
    def sent(cell: Cell) -> float:  # every request per second: the generator sent them all
        s = cell.summary
        return s.requests_per_second_all.median if s.requests_per_second_all else s.rps.median  # type: ignore[union-attr]

    fastest = max((c for c in results.cells if c.summary is not None), key=sent, default=None)
    out = {"measured": True, "rps": rounded(h.rps), "latency_p99_ms": rounded(h.latency_p99_ms, 3), "connections": h.connections,
           "duration_seconds": rounded(h.duration_seconds, 3), "generator_cpu_fraction": rounded(h.generator_cpu_fraction, 3),
           "endpoint": h.endpoint, "fastest_cell": None, "scope": scope}
    if fastest is not None and h.rps > 0:
        rps = sent(fastest)
        out["fastest_cell"] = {"stack": fastest.stack, "family": Family(
                                   fastest.workload, fastest.parameter_name, fastest.parameter,
                                   pool_size=fastest.pool_dimension, db_rtt_ms=fastest.db_rtt_ms).title,
                               "level": fastest.level_label, "rps": rounded(rps), "share": rounded(rps / h.rps, 4)}
    return out


def environment_line(results: RunResults) -> str:
    env = results.environment
    parts = [f"{env.cpu_model} × {env.cpu_count}", f"{env.memory_bytes / 2**30:.0f} GiB", f"Linux {env.kernel}",
             f"PostgreSQL {env.postgres_version or '?'}", *env.engine_versions.values(),
             remote.cpu_sets_text(results) or f"generator CPUs {env.generator_cpus}, stack + PostgreSQL CPUs "
             f"{env.server_cpus}" + (" (shared)" if env.cpu_sets_shared else ""),
             f"CPU accounting: {env.cpu_accounting or 'psutil'}"]
    if results.topology is not None:
        parts.append(f"roles in network namespaces ({results.topology.subnet})")
    return " · ".join(parts)


def _text(value: object) -> str:
    if value is None:
        return "–"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def environment(results: RunResults) -> dict:
    """Every environment field, the full configuration and the database, as (name, value) rows."""
    env = results.environment.model_dump()
    engines, toolchains = env.pop("engine_versions"), env.pop("toolchains")
    env.pop("targets", None)  # rows of their own below: their hosts are not this machine
    rows = [[k, f"{v / 2**30:.1f} GiB ({v:,} bytes)" if k == "memory_bytes" else _text(v)] for k, v in env.items()]
    rows += [[f"engine {k}", v] for k, v in engines.items()] + [[f"toolchain: {k}", v] for k, v in toolchains.items()]
    rows.append(["roles", placement_text(results)])
    if results.network is not None:
        rows.append(["network", topology_text(results).removeprefix("Network: ")])
    rows += [list(row) for row in remote.environment_rows(results)]
    db = results.database
    return {
        "rows": rows,
        "config": [[k, _text(v)] for k, v in results.config.items()],
        "database": None if db is None else {"mode": db.mode, "version": db.version, "url": db.url,
                                             "settings_profile": db.settings_profile,
                                             "cpu_affinity": db.cpu_affinity_note or (
                                                 None if db.cpu_affinity is None else _text(db.cpu_affinity)),
                                             "settings": [[k, v] for k, v in db.settings.items()]},
    }


def work_cost_table(results: RunResults) -> dict:
    """Each stack's scenarios as shares of its own perf-minimal (analysis/workcost.py), for the Cost section."""
    columns, rows = work_costs(results)
    return {"columns": [column_label(*c) for c in columns],
            "rows": [{"stack": r.stack, "vus": r.vus, "engine": r.engine, "minimal_rps": rounded(r.minimal_rps, 1),
                      "shares": [rounded(r.shares.get(c), 3) for c in columns]} for r in rows]}


def html_payload(results: RunResults) -> dict:
    """Everything the page shows, from results.json only: JSON-serialisable and deterministic."""
    verdicts = Verdicts(results)
    ranks, eff = verdicts.hover_ranks(results.cells), verdicts.efficiency
    colors = stack_colors(results)
    sections: dict[str, list[dict]] = {"throughput": [], "scaling": [], "slo": [], "latency": [], "cost": [],
                                       "stacks": []}
    for family in families(results.cells):
        for name, figs in figures.family_figures(family, colors, ranks, eff).items():
            sections[name] += figs
    sections["slo"] = [f for i, s in enumerate(results.slo_searches, 1) if (f := figures.slo_figure(i, s))]
    sections["stacks"] = [f for f in [figures.cold_start_figure(results, colors)] if f]
    sections["resilience"] = resilience.figures(results)
    sections["pool"] = poolsize.figures(results, colors)
    forest_entries, sections["forest"] = forest.forest_tables(results, verdicts)
    cell_sources = Counter(c.summary.cpu_accounting for c in results.cells if c.summary is not None)
    return {
        "title": f"pgarena {results.kind} {results.run_id}",
        "run": {"run_id": results.run_id, "kind": results.kind, "status": results.status,
                "schema_version": results.schema_version, "started_at": results.started_at.isoformat(),
                "finished_at": results.finished_at.isoformat() if results.finished_at else None,
                "duration_seconds": rounded((results.finished_at - results.started_at).total_seconds(), 1)
                if results.finished_at else None,
                "error": results.error, "command": results.command},
        "environment_line": environment_line(results),
        "targets_warning": remote.warning(results),
        "flags": flags_present(results),
        "headline": headline(results, verdicts),
        "forest": forest_entries,
        "cells": cell_tables(results, verdicts),
        "baseline": baseline_of(results),
        "schedule": schedule_summary(results),
        "ceiling": {"rows": ceiling_rows(results), "note": ceiling_note(results)},
        "sections": sections,
        "work_costs": work_cost_table(results),
        "rest_graphql": restgraphql.payload(results),
        "resilience": resilience.payload(results),
        "generators": generators.payload(results),
        "pool_size": poolsize.payload(results),
        "slo": slo_tables(results),
        "verification": verification(results),
        "wire": wire.payload(results),
        "stacks": [_stack_row(s, results.config) for s in results.stacks],
        "headroom": headroom(results),
        "cpu_accounting": {"environment": results.environment.cpu_accounting,
                           "cells": dict(sorted(cell_sources.items()))},
        "environment": environment(results),
        "stack_colors": colors,
    }


def _fmt(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.2f} ms" if value < 100 else f"{value:,.0f} ms"


def _script_json(value: object) -> str:
    """JSON safe inside a <script> element: '<' is escaped so no '</script>' can end it early."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("pgarena.report", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters.update(num=_fmt, ms=_ms, pct=lambda v, d=1: "–" if v is None else f"{v:.{d}%}",
                       measured=lambda v, d=0: remote.NOT_MEASURED if v is None else _fmt(v, d))
    return env


@cache
def plotly_js() -> str:
    """The plotly.js bundle shipped with the `plotly` package (inlined: the report needs no network)."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def render_html(results: RunResults) -> str:
    """The whole HTML report of one run (self-contained)."""
    payload = html_payload(results)
    figures_json = _script_json([{"id": f["id"], "data": f["data"], "layout": f["layout"]}
                                 for figs in payload["sections"].values() for f in figs])
    return _environment().get_template(TEMPLATE).render(
        p=payload, figures_json=figures_json, plotly_js=plotly_js(), flag_meanings=FLAG_MEANINGS)
