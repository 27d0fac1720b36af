"""The Markdown report: seed-000-style tables per (workload parameter × load level), sorted by RPS, the
verification matrix, stacks and environment. Plain text that pastes into a blog post or a PR comment."""

from __future__ import annotations

from collections import defaultdict

from pgarena.analysis.ranking import BY_P99, NOT_RANKED, comparable_groups, efficiency_ranks, rank_basis
from pgarena.analysis.sharedrates import SHARED_SPEC_SUFFIX
from pgarena.analysis.verdicts import run_verdicts
from pgarena.analysis.workcost import column_label, work_costs
from pgarena.contract.flags import GENERATOR_BOUND_CPU_FRACTION
from pgarena.contract.values import Verdict
from pgarena.contract.workloads import (
    COLUMNS,
    GRAPHQL,
    GRAPHQL_FIELDS,
    GRAPHQL_LIMIT,
    GRAPHQL_NESTED,
    NESTED_LIMIT,
    NESTED_LISTS,
    NESTED_POSTS_LIMIT,
    NESTED_RECORDS,
    PERF_LARGE_PAYLOAD,
    PERF_MANY_PARAMS,
    PERF_NESTED,
    PERF_POST,
    PERF_TEST,
    PERF_TEST_COLUMNS,
    SCENARIOS,
    STATIC,
    TX,
    USERS,
    USERS_COLUMNS,
    USERS_POSTS,
)
from pgarena.report import generators, network, poolsize, resilience, restgraphql, wire
from pgarena.report import markdown_verdicts as mv
from pgarena.report import targets as remote
from pgarena.report.markup import table
from pgarena.report.targets import NOT_MEASURED
from pgarena.results.models import Cell, RunResults, StackInfo, WorkloadVerification

WORKLOAD_ORDER = (PERF_TEST, *SCENARIOS, USERS, GRAPHQL, USERS_POSTS, GRAPHQL_NESTED, STATIC, TX)


def _num(value: float, digits: int = 0) -> str:
    return f"{value:,.{digits}f}"


def _ms(value: float, lower_bound: bool = False) -> str:
    """'1.23ms', '1,234ms'; '≥ 250ms' for a lower bound (it counts requests without an answer at the timeout)."""
    text = f"{value:.2f}ms" if value < 100 else f"{value:,.0f}ms"
    return f"≥ {text}" if lower_bound else text


def _cost(stack_us: float | None, db_us: float | None) -> str:
    """'102 + 122' (stack + PostgreSQL CPU µs per request); a figure pgarena could not measure is 'not measured'."""
    if stack_us is None and db_us is None:
        return NOT_MEASURED

    def part(value: float | None) -> str:
        return NOT_MEASURED if value is None else f"{value:,.0f}"

    return f"{part(stack_us)} + {part(db_us)}"


def _mib(value: int | None) -> str:
    return NOT_MEASURED if value is None else f"{value / 2**20:,.0f} MiB"


def _cell_title(cell: Cell) -> str:
    if cell.model == "open" and (cell.arrival_rate_spec or "").endswith("%"):
        share = cell.arrival_rate_spec.removesuffix("%")  # type: ignore[union-attr]
        load = f"open model, {share} % of each stack's own peak, ≤ {cell.vus} in flight"
    elif cell.model == "open":
        spec = cell.arrival_rate_spec or ""
        origin = f" ({spec.replace('%', ' %', 1)})" if spec.endswith(SHARED_SPEC_SUFFIX) else ""
        load = f"open model, {cell.arrival_rate or 0:,.0f} req/s offered to every stack{origin}, ≤ {cell.vus} in flight"
    else:
        load = f"{cell.vus} Virtual User{'s' if cell.vus != 1 else ''}"
    if cell.db_rtt_ms is not None:
        load += f", database {cell.db_rtt_ms:g} ms away"
    if cell.pool_dimension is not None:
        load += f", pool size {cell.pool_dimension} configured"
    workload, parameter = cell.workload, cell.parameter
    if workload == PERF_TEST:
        return f"perf-test — {load}, {parameter} Record{'s' if parameter != 1 else ''}"
    if workload == USERS:
        return f"users — {load}, limit {parameter}"
    if workload == GRAPHQL:
        return f"graphql — {load}, users(limit: {GRAPHQL_LIMIT})"
    if workload == GRAPHQL_NESTED:
        return f"graphql-nested — {load}, users(limit: {NESTED_LIMIT}) posts(limit: {NESTED_POSTS_LIMIT})"
    if workload == USERS_POSTS:
        return f"users-posts — {load}, limit {NESTED_LIMIT}, {NESTED_POSTS_LIMIT} posts each"
    if workload == PERF_POST:
        return f"perf-post — {load}, {parameter} record{'s' if parameter != 1 else ''} per request"
    if workload == PERF_NESTED:
        return f"perf-nested — {load}, {NESTED_RECORDS} records at depth {parameter}"
    if workload == PERF_LARGE_PAYLOAD:
        return f"perf-large-payload — {load}, {parameter} KiB"
    if workload == PERF_MANY_PARAMS:
        return f"perf-many-params — {load}, 20 query parameters"
    return f"{workload} — {load}"


def _interval(cell: Cell) -> str:
    s = cell.summary
    assert s is not None
    if s.rps_interval is None:
        return "n/a (1 repetition)"
    i = s.rps_interval
    return f"{_num(i.low)}–{_num(i.high)} (±{i.rel_half_width:.1%}, n={len(cell.repetitions)})"


def results_tables(results: RunResults) -> str:
    groups = comparable_groups(results.cells)

    def order(key: tuple) -> tuple:
        workload, parameter, model = key[:3]
        first = groups[key][0]
        level = first.vus if model == "closed" else (first.arrival_rate or 0)
        return (WORKLOAD_ORDER.index(workload) if workload in WORKLOAD_ORDER else 99, first.pool_dimension or 0,
                first.db_rtt_ms or 0, model, level, parameter or 0, first.engine)

    verdicts = run_verdicts(results)
    sections = []
    for key in sorted(groups, key=order):
        cells = groups[key]
        is_tx = cells[0].workload == TX
        is_open = cells[0].model == "open"
        basis = rank_basis(cells)
        verdict = verdicts[key]
        efficiency = {id(c): label for c, label in efficiency_ranks(cells)}
        rows = []
        for cell in verdict.cells:
            s = cell.summary
            assert s is not None
            rows.append((
                *mv.ranks(verdict, cell), cell.stack, mv.figure_with_columns(verdict, cell, f"{_num(s.rps.median, 2)}/s"),
                *mv.verdict_columns(verdict, cell, results), _interval(cell),
                *([f"{_num(s.offered_total or 0)}", f"{s.dropped_total:,}"] if is_open else []),
                _ms(s.latency_avg_ms.median, "latency_avg_ms" in s.latency_censored),
                _ms(s.latency_p99_ms.median, "latency_p99_ms" in s.latency_censored), _num(s.requests_total),
                f"{s.failures_total:,} ({s.failure_rate:.1%})" if s.failures_total else "0",
                _cost(s.stack_cpu_us_per_request, s.db_cpu_us_per_request), efficiency.get(id(cell), "–"),
                _memory(s), _connections(cell.peak_connections),
                *([_invariants(cell)] if is_tx else []),
                variants_label(cell), window_accounting_label(cell),
                ", ".join(cell.flags),
            ))
        extra = len(mv.verdict_headers(verdict))
        width = 16 + extra + (2 if is_open else 0)
        for cell in cells:
            if not cell.summary:
                rows.append(("–", "–", cell.stack, "failed", *[""] * (width - 4), *([""] if is_tx else []),
                             cell.error or ""))
        note = {BY_P99: "Every stack was offered the same rate, so 2xx/s is about the offered rate: `#` ranks "
                        "p99 latency (lower first; ties where the 95 % intervals overlap).\n\n",
                NOT_RANKED: "Each stack was offered a share of its own closed-model peak, so the loads differ: "
                            "not ranked. Compare stacks at a shared rate instead.\n\n"}.get(basis, "")
        sections.append(f"### {_cell_title(cells[0])} · measured with {cells[0].engine}\n\n{note}" + table(
            ["# exact", "# all", "Stack", "2xx/s (median)", *mv.verdict_headers(verdict), "95 % interval of the mean",
             *(["Offered", "Dropped"] if is_open else []), "Avg latency", "p99 latency", "Total requests",
             "Failures", "CPU µs/req (stack + db)", "Efficiency #", "Peak PSS", "Peak connections",
             *(["TPC-B invariants"] if is_tx else []), "Variants", "Window accounting", "Flags"],
            rows, "rrlr" + "r" * extra + "r" + ("rr" if is_open else "") + "rrrrrrrr" + ("l" if is_tx else "") + "rll")
            + "\n\n" + mv.verdict_text(verdict))
    bases = {rank_basis(cells) for cells in groups.values()}
    if NOT_RANKED in bases and BY_P99 not in bases:
        sections.append("_No open-model level was shared by every stack, so no table compares them at equal offered "
                        "load: give absolute rates (`--rates 1000,90%`) for that._")
    return "\n\n".join(sections) if sections else "_No load cells in this run._"


def work_cost_section(results: RunResults) -> str:
    """Each stack's throughput on every scenario as a share of its own perf-minimal (analysis/workcost.py)."""
    columns, rows = work_costs(results)
    if not rows:
        return ""
    body = [(r.stack, f"{r.vus}", r.engine, _num(r.minimal_rps),
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
                rank, cell.stack, _figure(s.stack_cpu_us_per_request), _figure(s.db_cpu_us_per_request),
                _num(s.stack_cpu_us_per_request + s.db_cpu_us_per_request) if measured else NOT_MEASURED,  # type: ignore[operator]
                "–" if interval is None else f"{_num(interval.low)}–{_num(interval.high)}",
                _memory(s), f"{_num(s.rps.median)}/s"))
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
        high = "not reached" if found.bracket_high is None else _num(found.bracket_high)
        summary_rows.append((
            found.stack, f"{found.workload}{'' if found.parameter is None else f' {found.parameter_name}={found.parameter}'}",
            "none" if found.answer_level is None else f"{_num(found.answer_level)}/s",
            "–" if found.answer_rps is None else f"{_num(found.answer_rps)}/s",
            f"{_num(found.bracket_low)} – {high}", f"{len(found.curve)} ({found.stop_reason})",
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
        rows = [(_num(p.level), f"{_num(p.rps / 1000, 1)}",
                 *(_ms(getattr(p.latency, name), name in p.latency.censored)
                   for name in ("avg_ms", "p90_ms", "p95_ms", "p99_ms", "max_ms")),
                 f"{p.error_rate:.1%}" + (f" ({p.timeouts:,} timed out)" if p.timeouts else ""),
                 "✅" if p.passed else "❌")
                for p in sorted(found.curve, key=lambda p: p.level)]
        title = f"{found.stack} · {found.workload}" + ("" if found.parameter is None else f" {found.parameter_name}={found.parameter}")
        parts.append(f"#### {title}\n\n" + table(
            ["Offered req/s", "2xx/s [K]", "avg", "p90", "p95", "p99", "max", "failed + dropped", "SLO"], rows,
            "rrrrrrrrl"))
    return "\n\n".join(parts)


def _figure(value: float | None) -> str:
    return NOT_MEASURED if value is None else _num(value)


def cold_start_section(stacks: list[StackInfo]) -> str:
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
                     _ms(cs.first_requests_ms[0]), _ms(later[len(later) // 2]), _ms(max(cs.first_requests_ms)),
                     f"{cs.failed}/{len(cs.first_requests_ms)}",
                     f"`{cs.request if len(cs.request) <= 48 else cs.request[:47] + '…'}`"))
    if not rows:
        return ""
    return ("Process start → first answer of the health path, and → first correct workload answer; then the "
            "latency of the first sequential requests (before any warm-up).\n\n"
            + table(["Stack", "Healthy after", "First correct answer after", "1st request", "Median of the next",
                     "Slowest", "Wrong answers", "Request"], rows, "lrrrrrrl"))


def variants_label(cell: Cell) -> str:
    """How many distinct requests the cell's load drew from ('–': not recorded)."""
    if cell.variants is None:
        return "–"
    wrong = f" ({cell.variants_failed} ❌ before load)" if cell.variants_failed else ""
    return f"{cell.variants:,}{wrong}"


def window_accounting_label(cell: Cell) -> str:
    """✅ / ❌ of the per-window database accounting, or why it was not measured."""
    if cell.window_accounting is not None:
        return cell.window_accounting.symbol + (f" {cell.window_accounting_reason}" if cell.window_accounting_reason
                                                 else "")
    return f"not measured ({cell.window_accounting_unavailable})" if cell.window_accounting_unavailable \
        else "not measured"


def _invariants(cell: Cell) -> str:
    inv = cell.tx_invariants
    if inv is None:
        return "not checked"
    if inv.holds:
        return f"✅ hold: {inv.history_rows_added:,} history rows = {inv.answered_200:,} answers of 200"
    return f"❌ {inv.problem}"


def accounting_section(results: RunResults) -> str:
    rows, reasons = [], []
    for v in results.verifications:
        a = v.accounting
        if a is None:
            if v.accounting_unavailable:
                rows.append((v.stack, v.workload, "–", "–", "–", f"not measured: {v.accounting_unavailable}"))
            continue
        rows.append((v.stack, v.workload, f"{a.workload_statements_per_request:g} (expected {a.expected_statements_per_request})",
                     f"{a.rows_per_request:g}",
                     f"{a.other_statements_per_request:g} (allowed {a.allowed_other_statements_per_request})",
                     a.verdict.symbol))
        if a.reason:
            reasons.append(f"- {v.stack} · {v.workload} {a.verdict.symbol} {a.reason}")
    if not rows:
        return ""
    text = ("From `pg_stat_statements` around a burst of identical requests: statements that name the "
            "workload's tables or function, the rows they returned or changed, and every other statement "
            "(transaction control, resets, session settings). ❌ fewer statements than requests (a cache) or "
            "more than needed (N+1); ⚠️ extra statements per request.\n\n"
            + table(["Stack", "Workload", "Statements / request", "Rows / request", "Other statements / request",
                     "Verdict"], rows, "llrrrl"))
    return text + ("\n\n" + "\n".join(reasons) if reasons else "")


def _column_matrix(verifications: list[WorkloadVerification], columns: dict[str, str], workload: str) -> str:
    relevant = [v for v in verifications if v.workload == workload and v.columns]
    if not relevant:
        return ""
    headers = ["Stack", *[f"{name} ({pg_type.lstrip('_')}{'[]' if pg_type.startswith('_') else ''})"
                          for name, pg_type in columns.items()]]
    rows, reasons = [], []
    for v in relevant:
        by_name = {c.column: c for c in v.columns}
        rows.append([v.stack, *[by_name[n].verdict.symbol if n in by_name else "–" for n in columns]])
        for c in v.columns:
            if c.verdict is not Verdict.EXACT:
                reasons.append(f"- {v.stack} · `{c.column}` {c.verdict.symbol} {c.reason}")
    text = f"### {workload} columns\n\n" + table(headers, rows)
    if reasons:
        text += "\n\n" + "\n".join(reasons)
    return text


def verification_section(results: RunResults) -> str:
    if not results.verifications:
        return "_No stack was verified in this run._"
    stacks = list(dict.fromkeys(v.stack for v in results.verifications))
    workloads = [w for w in WORKLOAD_ORDER if any(v.workload == w for v in results.verifications)]
    rows = []
    for stack in stacks:
        row = [stack]
        bad_ok = bad_total = 0
        for workload in workloads:
            v = results.verification(stack, workload)
            if v is None:
                row.append("–")
                continue
            if v.ok:
                wrong = v.wrong_columns
                marks = ([f"{len(wrong)} wrong column(s)"] if wrong else []) + (
                    ["no JSON content type (loaded, `content-type-wrong`)"] if v.content_type_wrong else []) + (
                    [f"answer mapped from {v.answer_mapping} (loaded, `answer-mapped`)"] if v.answer_mapping else [])
                row.append("❌ " + ", ".join(marks) if marks else "✅ ok")
            else:
                failed = next((c for c in v.checks if not c.ok), None)
                row.append(f"❌ {failed.name}: {failed.detail}" if failed else "❌")
            bad_ok += sum(c.ok for c in v.bad_input)
            bad_total += len(v.bad_input)
        row.append(f"{bad_ok}/{bad_total}")
        rows.append(row)
    parts = [
        "Legend: ✅ exact (the canonical JSON encoding PostgreSQL's `to_json` gives), ⚠️ the same value in "
        "another encoding, ❌ wrong (e.g. JSON as an escaped string, an array as `{1,2,3}` text, a lost or "
        "rounded value). Rules: docs/verification.md.",
        table(["Stack", *workloads, "Robustness (bad input answered right)"], rows),
        _column_matrix(results.verifications, PERF_TEST_COLUMNS, PERF_TEST),
        _column_matrix(results.verifications, USERS_COLUMNS, USERS),
        _column_matrix(results.verifications, {f: t for f, (_, t) in GRAPHQL_FIELDS.items()}, GRAPHQL),
        *(_column_matrix(results.verifications, COLUMNS[w], w) for w in (*SCENARIOS, *NESTED_LISTS)),
        _robustness_failures(results),
        "### Database accounting\n\n" + accounting_section(results) if accounting_section(results) else "",
    ]
    return "\n\n".join(p for p in parts if p)


def _robustness_failures(results: RunResults) -> str:
    lines = [f"- {v.stack} · {v.workload} · {case.description}: {case.detail}"
             for v in results.verifications for case in v.bad_input if not case.ok]
    if not lines:
        return ""
    shown = lines[:40]
    more = f"\n- … and {len(lines) - len(shown)} more (results.json)" if len(lines) > len(shown) else ""
    return "### Bad input answered wrongly\n\n" + "\n".join(shown) + more


def _memory(summary) -> str:
    """Peak PSS of the stack's processes; older results have only summed RSS, marked as such."""
    if summary.stack_pss_peak_bytes is not None:
        return _mib(summary.stack_pss_peak_bytes)
    if summary.stack_rss_peak_bytes is not None:
        return _mib(summary.stack_rss_peak_bytes) + " (RSS)"
    return _mib(None)


def _connections(peak: int | None) -> str:
    return NOT_MEASURED if peak is None else str(peak)


def _warmup(s: StackInfo) -> str:
    if s.warmup_seconds is None:
        return "–"
    return f"{s.warmup_seconds:.1f} s" + ("" if s.warmup_steady is not False else " (cap hit)")


def _listening(s: StackInfo) -> str:
    if s.target_url is not None:
        return f"{s.target_url} (remote target)"
    if not s.listen_addresses:
        return "–"
    return ", ".join(s.listen_addresses) + (" ⚠️" if "listens-wide" in s.flags else "")


def yes_no(value: bool | None) -> str:
    return "n/a" if value is None else ("yes" if value else "no")


def stacks_section(stacks: list[StackInfo]) -> str:
    rows = [(
        s.id, s.language, f"{s.framework} {s.framework_version}".strip(), f"{s.driver} {s.driver_version}".strip(),
        s.server, s.pooler, yes_no(s.prepared_statements),
        NOT_MEASURED if s.lines_of_code is None else f"{s.lines_of_code.total:,}",
        _warmup(s), _listening(s), _connections(s.peak_connections), ", ".join(s.flags),
        s.status if s.status == "ok" else f"{s.status}: {s.reason}",
    ) for s in stacks]
    text = table(["Stack", "Language", "Framework", "Driver", "Server", "Pooler", "Prepared statements",
                  "Lines of code", "Longest warm-up", "Listens on", "Peak connections", "Flags", "Status"], rows,
                 "lllllllrrlrll")
    text += ("\n\nLines of code: the stack's own sources (`source_globs`), code lines only, counted by pygount. "
             "Longest warm-up: each cell warms, not measured, until its throughput over one-second windows is "
             "steady (or the cap is hit); this is the longest of the stack's cells. Listens on: the TCP addresses "
             "its processes listened on (⚠️ `listens-wide`: not only the loopback address it was given). Peak "
             "connections: most database connections it held at once (pg_stat_activity, polled every 0.2 s).")
    notes = [f"- **{s.id}**: {note}" for s in stacks for note in s.notes]
    failures = [f"<details><summary>{s.id}: last log lines</summary>\n\n```\n{s.log_tail}\n```\n</details>"
                for s in stacks if s.log_tail]
    return "\n\n".join([text, *(["Notes:\n\n" + "\n".join(notes)] if notes else []), *failures])




def environment_section(results: RunResults) -> str:
    env, cfg = results.environment, results.config
    rows = [
        ("pgarena", f"{env.pgarena_version} ({env.pgarena_git_revision})"),
        ("CPU", f"{env.cpu_model} × {env.cpu_count}"),
        ("Memory", f"{env.memory_bytes / 2**30:.1f} GiB"),
        ("Kernel / OS", f"{env.kernel} / {env.os}"),
        ("CPU sets", remote.cpu_sets_text(results) or f"generator {env.generator_cpus}, stack + PostgreSQL "
                     f"{env.server_cpus}" + (" (shared: one-CPU machine)" if env.cpu_sets_shared else "")),
        *remote.environment_rows(results),
        ("PostgreSQL", env.postgres_version or "?"),
        *[(f"engine {name}", version) for name, version in env.engine_versions.items()],
        *[(f"`{cmd}`", out) for cmd, out in env.toolchains.items()],
        ("Profile", f"{cfg.get('profile')}: warm-up {_warmup_rule(cfg)}, {_repetitions(cfg)} × "
                    f"{cfg.get('duration_seconds')} s windows per cell, engine {cfg.get('engine')}"),
        ("CPU accounting", env.cpu_accounting or "psutil sampling"),
        ("Generator headroom", _headroom(results)),
        ("Fairness knobs", f"{_pool_sizes(cfg)} connections per stack, {cfg.get('workers')} worker(s)"
         + (" — given to no remote target: its deployment sets them (the connections PostgreSQL saw are under "
            "Stacks)" if results.environment.targets else "")),
        ("Roles", network.placement_text(results)),
        ("Network", remote.network_text(results) or network.topology_text(results).removeprefix("Network: ")
         or "stacks connect to PostgreSQL directly"),
        *([("pgarena CPUs", f"{env.pgarena_cpus} (its own process and sampler threads)")] if env.pgarena_cpus else []),
        *([("Stack order", f"shuffled, seed {cfg.get('seed')}: {', '.join(results.stack_order)}")]
          if cfg.get("seed") is not None and results.stack_order else []),
    ]
    if results.database:
        db = results.database
        rows.append(("Database", f"{db.mode}, settings profile {db.settings_profile or '(the server’s own)'}"))
        if db.cpu_affinity is not None or db.cpu_affinity_note:
            rows.append(("PostgreSQL CPUs", db.cpu_affinity_note or f"{db.cpu_affinity} (the postmaster's affinity)"))
        rows += [(f"`{k}`", v) for k, v in db.settings.items() if k in (
            "shared_buffers", "max_connections", "shared_preload_libraries", "synchronous_commit", "fsync", "jit")]
    return table(["", ""], rows) + f"\n\nCommand: `{results.command}`"


def _pool_sizes(cfg: dict) -> str:
    """'pool size 10', or with several: 'pool sizes 10, 50 (a load dimension: each stack started once at each)'."""
    sizes = cfg.get("pool_sizes") or []
    if len(sizes) < 2:
        return f"pool size {cfg.get('pool_size')}"
    return f"pool sizes {', '.join(map(str, sizes))} (a load dimension: each stack started once at each)"


def _warmup_rule(cfg: dict) -> str:
    if cfg.get("warmup_cap_seconds") is None:  # results from before steady warm-ups
        return f"{cfg.get('warmup_seconds')} s"
    return f"until steady, at least {cfg.get('warmup_seconds')} s, at most {cfg.get('warmup_cap_seconds')} s"


def _repetitions(cfg: dict) -> str:
    low, high = cfg.get("repetitions"), cfg.get("max_repetitions", cfg.get("repetitions"))
    if low == high:
        return f"{low}"
    return (f"{low}–{high} (until the 95 % RPS interval is within ±{cfg.get('target_rel_half_width', 0):.0%} "
            f"or {cfg.get('cell_budget_seconds', cfg.get('cell_budget_s'))} s measured)")


def _headroom(results: RunResults) -> str:
    h = results.generator_headroom
    if h is None:
        return f"not measured ({results.environment.headroom_unavailable or 'disabled'})"
    cpu = "" if h.generator_cpu_fraction is None else f", generator CPU {h.generator_cpu_fraction:.0%}"
    text = (f"{_num(h.rps)} req/s{f' with {h.engine}' if h.engine else ''}, p99 {_ms(h.latency_p99_ms)} at "
            f"{h.connections} connections against a trivial endpoint ({h.endpoint}{cpu})")
    if h.generator_cpu_fraction is not None and h.generator_cpu_fraction <= GENERATOR_BOUND_CPU_FRACTION:
        text += "; the generator was not saturated, so its ceiling is higher still"
    scope = generators.headroom_scope(results)
    return text if scope is None else f"{text}; {scope}"


def render_markdown(results: RunResults) -> str:
    """The whole Markdown report of one run."""
    status = "" if results.status == "complete" else f" — **{results.status}**"
    parts = [
        f"# pgarena {results.kind} {results.run_id}{status}",
        f"Started {results.started_at:%Y-%m-%d %H:%M:%S} UTC. Each table: one workload parameter at one load "
        "level, stacks sorted by median 2xx answers per second (answered work: failed requests are not "
        "throughput; they are in `Failures`). Two ranks side by side: `# exact` among the stacks whose answers "
        "are exact, `# all` among every stack that answered validly — a stack with ❌ columns (`columns-wrong`, "
        "named next to its figure) has only the second. Where the stacks were measured in interleaved rounds, "
        "ranks and the ratios `× best` (and `× <baseline>`) come from each round's ratios with a 95 % interval "
        "(\"a is 1.52× b (1.41–1.64)\"; \"indistinguishable\" where the interval holds 1); otherwise ranks come "
        "from each cell's own 95 % interval of the mean and the ratios are of medians. `2–3`: the intervals "
        "cannot order these. A `noisy` cell (interval wider than the target: more rounds would have helped) is "
        "still ranked wherever its interval is clear of its neighbours. Invalid cells get `–` in both ranks. "
        "`DB ceiling`: the cell's 2xx/s as a share of what pgbench got from the database alone running the "
        "workload's statements under the cell's conditions (its round trip, min(VUs, pool size) connections); "
        "above 100 % (⚠) is a measurement problem. Open-model tables at a rate shared by every stack rank p99 latency instead; "
        "those at a share of each stack's own peak are not ranked. `Efficiency #` ranks CPU µs per request "
        "(stack + PostgreSQL, lower is better) by independent intervals. Latency is request latency measured by "
        "the load generator; in the open model it counts from each request's scheduled start (oha) and "
        "requests the generator could not start or finish on schedule are `Dropped`. A request without an "
        "answer (timeout, connection error) counts at the HTTP timeout; a latency it reaches is a lower bound, "
        "printed `≥`. Invalid (never ranked): `failures>1%` / `dropped>1%` / `checks-failed>1%` (the answers "
        "sampled under load: the one-sided exact binomial test rejects \"≤ 1 % wrong\" at level 1 %) / "
        "`invariants-broken` / `queries-wrong` (a cache or an N+1) / `variants-wrong` (a request variant "
        "answered wrongly) / `pool-exceeded` (more connections than the pool size) / `generator-bound` (the generator's CPUs "
        "were >90 % busy over the measured window — the generator, pgarena's own samplers and Toxiproxy together — or the cell's request rate reached 90 % of the generator's "
        "measured headroom — it measured the generator, not the stack). Other flags: `columns-wrong` ranked "
        "among all stacks only, and so are `content-type-wrong` (the right JSON without `Content-Type: "
        "application/json`) and `answer-mapped` (the right values in a shape the stack's stack.toml `[answer]` "
        "declares — an envelope, camelCase keys — undone before judging) and `db-unchecked` (the database could "
        "not be checked — pg_stat_statements unreadable, e.g. `--database-url` without pg_read_all_stats — so "
        "nothing shows the answers came from it) and `pipelines-across-requests` (the wire observer saw statements of "
        "several requests in one flight to PostgreSQL: pipelining or batching across requests); `demonstration` a stack kept to show a "
        "mistake on purpose (stack.toml `competes = false`), shown but never ranked; `noisy`; `database-bound` PostgreSQL used >90 % of the server CPUs while the "
        "stack used <50 %; `timeouts` some requests hit the HTTP timeout. `Variants`: distinct requests the load "
        "drew from; `Window accounting`: did pg_stat_statements see the workload's statements for every "
        "measured window's answers (✅) or not (❌ a cache or an N+1). Method: docs/methodology.md.",
    ]
    if results.error:
        parts.append(f"> Run error: {results.error}")
    if remote.warning(results):
        parts.append(f"> **{remote.warning(results)}**")
    graphql = restgraphql.section(results)
    slo, cold, cost = slo_section(results), cold_start_section(results.stacks), cost_section(results)
    work = work_cost_section(results)
    parts += [
        "## Results", results_tables(results),
        "## Schedule", mv.schedule_section(results),
        *(["## Generators", generators.section(results)] if generators.section(results) else []),
        "## Database ceiling", mv.ceiling_section(results),
        *(["## Cost per request", cost] if cost else []),
        *(["## What each kind of work costs (relative to the stack's own perf-minimal)", work] if work else []),
        *(["## Max sustainable throughput under the SLO", slo] if slo else []),
        *(["## REST against GraphQL on the same stack", graphql] if graphql else []),
        *(["## Throughput by database round trip", network.rtt_section(results)] if network.rtt_section(results) else []),
        *(["## Throughput by pool size", poolsize.section(results)] if poolsize.section(results) else []),
        *(["## Resilience: faults under load", resilience.section(results)] if results.resilience else []),
        *(["## Cold start", cold] if cold else []),
        "## Verification", verification_section(results),
        *(["## On the wire", wire.section(results)] if wire.section(results) else []),
        "## Stacks", stacks_section(results.stacks),
        "## Environment", environment_section(results),
    ]
    return "\n\n".join(parts) + "\n"
