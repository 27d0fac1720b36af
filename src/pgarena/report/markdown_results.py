"""The Markdown report's results tables: one per workload parameter × load level × conditions, stacks in
rank order, with the figures, verdict columns (markdown_verdicts.py) and flags of every cell."""

from __future__ import annotations

from pgarena.analysis.ranking import BY_P99, NOT_RANKED, comparable_groups, efficiency_ranks, rank_basis
from pgarena.analysis.sharedrates import SHARED_SPEC_SUFFIX
from pgarena.analysis.verdicts import run_verdicts
from pgarena.contract.workloads import (
    GRAPHQL,
    GRAPHQL_LIMIT,
    GRAPHQL_NESTED,
    NESTED_LIMIT,
    NESTED_POSTS_LIMIT,
    NESTED_RECORDS,
    PERF_LARGE_PAYLOAD,
    PERF_MANY_PARAMS,
    PERF_NESTED,
    PERF_POST,
    PERF_TEST,
    TX,
    USERS,
    USERS_POSTS,
)
from pgarena.report import markdown_verdicts as mv
from pgarena.report.families import WORKLOAD_ORDER
from pgarena.report.markup import connection_count, cpu_cost, milliseconds, number, peak_memory, table
from pgarena.results.models import Cell, RunResults


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
    return f"{number(i.low)}–{number(i.high)} (±{i.rel_half_width:.1%}, n={len(cell.repetitions)})"


def results_tables(results: RunResults) -> str:
    """Every results table (one per comparable group of cells, in report order), each followed by its
    verdict text."""
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
                *mv.ranks(verdict, cell), cell.stack, mv.figure_with_columns(verdict, cell, f"{number(s.rps.median, 2)}/s"),
                *mv.verdict_columns(verdict, cell, results), _interval(cell),
                *([f"{number(s.offered_total or 0)}", f"{s.dropped_total:,}"] if is_open else []),
                milliseconds(s.latency_avg_ms.median, "latency_avg_ms" in s.latency_censored),
                milliseconds(s.latency_p99_ms.median, "latency_p99_ms" in s.latency_censored), number(s.requests_total),
                f"{s.failures_total:,} ({s.failure_rate:.1%})" if s.failures_total else "0",
                cpu_cost(s.stack_cpu_us_per_request, s.db_cpu_us_per_request), efficiency.get(id(cell), "–"),
                peak_memory(s), connection_count(cell.peak_connections),
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
