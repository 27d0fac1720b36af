"""The Markdown report: seed-000-style tables per (workload parameter × load level), sorted by RPS, the
verification matrix, stacks and environment. Plain text that pastes into a blog post or a PR comment."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from pgarena.results import Cell, RunResults, StackInfo, WorkloadVerification
from pgarena.values import Verdict
from pgarena.workloads import (
    GRAPHQL,
    GRAPHQL_FIELDS,
    GRAPHQL_LIMIT,
    PERF_TEST,
    PERF_TEST_COLUMNS,
    STATIC,
    TX,
    USERS,
    USERS_COLUMNS,
)

WORKLOAD_ORDER = (PERF_TEST, USERS, GRAPHQL, STATIC, TX)


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], align: str | None = None) -> str:
    """A GitHub-flavoured Markdown table; `align` is one letter per column (l/r)."""
    align = align or "l" * len(headers)
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(rule) + " |"]
    for row in rows:
        lines.append("| " + " | ".join(str(cell).replace("|", "\\|").replace("\n", " ") for cell in row) + " |")
    return "\n".join(lines)


def _num(value: float, digits: int = 0) -> str:
    return f"{value:,.{digits}f}"


def _ms(value: float) -> str:
    return f"{value:.2f}ms" if value < 100 else f"{value:,.0f}ms"


def _cost(stack_us: float | None, db_us: float | None) -> str:
    def part(value: float | None) -> str:
        return "?" if value is None else f"{value:,.0f}"

    return f"{part(stack_us)} + {part(db_us)}"


def _mib(value: int | None) -> str:
    return "?" if value is None else f"{value / 2**20:,.0f} MiB"


def _cell_title(workload: str, parameter_name: str | None, parameter: int | None, vus: int) -> str:
    load = f"{vus} Virtual User{'s' if vus != 1 else ''}"
    if workload == PERF_TEST:
        return f"perf-test — {load}, {parameter} Record{'s' if parameter != 1 else ''}"
    if workload == USERS:
        return f"users — {load}, limit {parameter}"
    if workload == GRAPHQL:
        return f"graphql — {load}, users(limit: {GRAPHQL_LIMIT})"
    return f"{workload} — {load}"


def results_tables(results: RunResults) -> str:
    groups: dict[tuple, list[Cell]] = defaultdict(list)
    for cell in results.cells:
        groups[(cell.workload, cell.parameter, cell.vus)].append(cell)

    def order(key: tuple) -> tuple:
        workload, parameter, vus = key
        return (WORKLOAD_ORDER.index(workload) if workload in WORKLOAD_ORDER else 99, vus, parameter or 0)

    sections = []
    for key in sorted(groups, key=order):
        cells = groups[key]
        measured = sorted((c for c in cells if c.summary), key=lambda c: -c.summary.rps.median)  # type: ignore[union-attr]
        is_tx = cells[0].workload == TX
        rows = []
        for rank, cell in enumerate(measured, 1):
            s = cell.summary
            assert s is not None
            rows.append((
                rank, cell.stack, f"{_num(s.rps.median, 2)}/s", f"{_num(s.rps.min)}–{_num(s.rps.max)}",
                _ms(s.latency_avg_ms.median), _ms(s.latency_p99_ms.median), _num(s.requests_total),
                f"{s.failures_total:,} ({s.failure_rate:.1%})" if s.failures_total else "0",
                _cost(s.stack_cpu_us_per_request, s.db_cpu_us_per_request), _mib(s.stack_rss_peak_bytes),
                *([_invariants(cell)] if is_tx else []),
                ", ".join(cell.flags),
            ))
        for cell in cells:
            if not cell.summary:
                rows.append(("–", cell.stack, "failed", "", "", "", "", "", "", "", *([""] if is_tx else []),
                             cell.error or ""))
        first = cells[0]
        sections.append(f"### {_cell_title(first.workload, first.parameter_name, first.parameter, first.vus)}\n\n" + table(
            ["#", "Stack", "Requests/s (median)", "range", "Avg latency", "p99 latency", "Total requests",
             "Failures", "CPU µs/req (stack + db)", "Peak RSS", *(["TPC-B invariants"] if is_tx else []), "Flags"],
            rows, "rlrrrrrrrr" + ("l" if is_tx else "") + "l"))
    return "\n\n".join(sections) if sections else "_No load cells in this run._"


def _invariants(cell: Cell) -> str:
    inv = cell.tx_invariants
    if inv is None:
        return "not checked"
    if inv.holds:
        return f"✅ hold: {inv.history_rows_added:,} history rows = {inv.answered_200:,} answers of 200"
    return f"❌ {inv.problem}"


def graphql_section(results: RunResults) -> str:
    """REST `users?limit=20` and GraphQL `users(limit: 20)` side by side, per stack that serves both."""
    by_key = {(c.stack, c.workload, c.parameter, c.vus): c for c in results.cells if c.summary}
    rows = []
    for (stack, workload, _, vus), gql in sorted(by_key.items()):
        if workload != GRAPHQL:
            continue
        rest = by_key.get((stack, USERS, GRAPHQL_LIMIT, vus))
        if rest is None:
            continue
        g, r = gql.summary, rest.summary
        assert g is not None and r is not None
        rows.append((stack, vus, f"{_num(r.rps.median)}/s", f"{_num(g.rps.median)}/s",
                     f"{g.rps.median / r.rps.median:.2f}", _ms(r.latency_p99_ms.median), _ms(g.latency_p99_ms.median),
                     _cost(r.stack_cpu_us_per_request, None).split(" +")[0],
                     _cost(g.stack_cpu_us_per_request, None).split(" +")[0]))
    if not rows:
        return ""
    return ("Seed 002 projected REST-direct against GraphQL; here both are measured on the same process: "
            f"`GET /api/users?limit={GRAPHQL_LIMIT}` against `{{ users(limit: {GRAPHQL_LIMIT}) {{ id username fullName }} }}`.\n\n"
            + table(["Stack", "VUs", "REST req/s", "GraphQL req/s", "GraphQL / REST", "REST p99", "GraphQL p99",
                     "REST stack CPU µs/req", "GraphQL stack CPU µs/req"], rows, "lrrrrrrrr"))


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
                row.append("✅ ok" if not wrong else f"❌ {len(wrong)} wrong column(s)")
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


def _yes_no(value: bool | None) -> str:
    return "n/a" if value is None else ("yes" if value else "no")


def stacks_section(stacks: list[StackInfo]) -> str:
    rows = [(
        s.id, s.language, f"{s.framework} {s.framework_version}", f"{s.driver} {s.driver_version}", s.server,
        s.pooler, _yes_no(s.prepared_statements),
        "?" if s.lines_of_code is None else f"{s.lines_of_code.total:,}",
        "–" if s.warmup_seconds is None else f"{s.warmup_seconds:g} s",
        s.status if s.status == "ok" else f"{s.status}: {s.reason}",
    ) for s in stacks]
    text = table(["Stack", "Language", "Framework", "Driver", "Server", "Pooler", "Prepared statements",
                  "Lines of code", "First warm-up", "Status"], rows, "lllllllrrl")
    text += ("\n\nLines of code: the stack's own sources (`source_globs`), code lines only, counted by pygount. "
             "First warm-up: not measured, before the first cell of each workload (JIT runtimes declare a longer "
             "minimum); later cells get the profile's warm-up.")
    notes = [f"- **{s.id}**: {note}" for s in stacks for note in s.notes]
    failures = [f"<details><summary>{s.id}: last log lines</summary>\n\n```\n{s.log_tail}\n```\n</details>"
                for s in stacks if s.log_tail]
    return "\n\n".join([text, *(["Notes:\n\n" + "\n".join(notes)] if notes else []), *failures])


def stacks_catalogue(stacks: list) -> str:
    """The declared facts of every stack (from stack.toml files, not from a run): docs/stacks.md."""
    from pgarena.loc import count

    rows = []
    for stack in stacks:
        d = stack.definition
        lines = count(stack.directory, d.source_globs) if d.source_globs else None
        rows.append((f"`{d.id}`", d.language, f"{d.framework} {d.framework_version}", f"{d.driver} {d.driver_version}",
                     d.server, d.pooler, _yes_no(d.prepared_statements), ", ".join(d.workloads),
                     "?" if lines is None else f"{lines.total:,}",
                     "yes" if stack.available else stack.unavailable_reason))
    text = table(["Stack", "Language", "Framework", "Driver", "Server", "Pooler", "Prepared statements", "Workloads",
                  "Lines of code", "Available here"], rows, "llllllllrl")
    notes = [f"- **{s.id}**: {note}" for s in stacks for note in s.definition.notes]
    return text + "\n\nNotes from each stack.toml:\n\n" + "\n".join(notes)


def environment_section(results: RunResults) -> str:
    env, cfg = results.environment, results.config
    rows = [
        ("pgarena", f"{env.pgarena_version} ({env.pgarena_git_revision})"),
        ("CPU", f"{env.cpu_model} × {env.cpu_count}"),
        ("Memory", f"{env.memory_bytes / 2**30:.1f} GiB"),
        ("Kernel / OS", f"{env.kernel} / {env.os}"),
        ("CPU sets", f"generator {env.generator_cpus}, stack + PostgreSQL {env.server_cpus}"
                     + (" (shared: one-CPU machine)" if env.cpu_sets_shared else "")),
        ("PostgreSQL", env.postgres_version or "?"),
        *[(f"engine {name}", version) for name, version in env.engine_versions.items()],
        *[(f"`{cmd}`", out) for cmd, out in env.toolchains.items()],
        ("Profile", f"{cfg.get('profile')}: warm-up {cfg.get('warmup_s')} s, {cfg.get('repetitions')} × "
                    f"{cfg.get('duration_s')} s per cell, engine {cfg.get('engine')}"),
        ("Fairness knobs", f"pool size {cfg.get('pool_size')} connections per stack, {cfg.get('workers')} worker(s)"),
    ]
    if results.database:
        db = results.database
        rows.append(("Database", f"{db.mode}, settings profile {db.settings_profile or '(the server’s own)'}"))
        rows += [(f"`{k}`", v) for k, v in db.settings.items() if k in (
            "shared_buffers", "max_connections", "shared_preload_libraries", "synchronous_commit", "fsync", "jit")]
    return table(["", ""], rows) + f"\n\nCommand: `{results.command}`"


def render_markdown(results: RunResults) -> str:
    """The whole Markdown report of one run."""
    status = "" if results.status == "complete" else f" — **{results.status}**"
    parts = [
        f"# pgarena {results.kind} {results.run_id}{status}",
        f"Started {results.started_at:%Y-%m-%d %H:%M:%S} UTC. Each table: one workload parameter at one load "
        "level, stacks sorted by median requests/s over the repetitions (range = slowest–fastest repetition). "
        "Latency is request latency measured by the load generator. Flags: `failures>1%` invalid cell, `noisy` "
        "range wider than 20 % of the median, `generator-bound` the generator used >90 % of its CPUs, "
        "`columns-wrong` the stack's answer has ❌ columns, `queries-wrong` the database accounting found a cache or an "
        "N+1, `checks-failed>1%` sampled answers had the wrong status or row count, `invariants-broken` a tx cell lost "
        "or duplicated writes. CPU µs/req: CPU time of the stack's processes and of "
        "PostgreSQL per completed request; Peak RSS: the stack's process tree.",
    ]
    if results.error:
        parts.append(f"> Run error: {results.error}")
    graphql = graphql_section(results)
    parts += [
        "## Results", results_tables(results),
        *(["## GraphQL against REST on the same stack", graphql] if graphql else []),
        "## Verification", verification_section(results),
        "## Stacks", stacks_section(results.stacks),
        "## Environment", environment_section(results),
    ]
    return "\n\n".join(parts) + "\n"
