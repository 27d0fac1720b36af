"""The Markdown report: seed-000-style tables per (workload parameter × load level), sorted by RPS, the
verification matrix, stacks and environment. Plain text that pastes into a blog post or a PR comment."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from pgarena.results import Cell, RunResults, StackInfo, WorkloadVerification
from pgarena.values import Verdict
from pgarena.workloads import PERF_TEST, PERF_TEST_COLUMNS, STATIC, USERS, USERS_COLUMNS

WORKLOAD_ORDER = (PERF_TEST, USERS, STATIC)


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
        rows = []
        for rank, cell in enumerate(measured, 1):
            s = cell.summary
            assert s is not None
            rows.append((
                rank, cell.stack, f"{_num(s.rps.median, 2)}/s", f"{_num(s.rps.min)}–{_num(s.rps.max)}",
                _ms(s.latency_avg_ms.median), _ms(s.latency_p99_ms.median), _num(s.requests_total),
                f"{s.failures_total:,} ({s.failure_rate:.1%})" if s.failures_total else "0",
                _cost(s.stack_cpu_us_per_request, s.db_cpu_us_per_request), _mib(s.stack_rss_peak_bytes),
                ", ".join(cell.flags),
            ))
        for cell in cells:
            if not cell.summary:
                rows.append(("–", cell.stack, "failed", "", "", "", "", "", "", "", cell.error or ""))
        first = cells[0]
        sections.append(f"### {_cell_title(first.workload, first.parameter_name, first.parameter, first.vus)}\n\n" + table(
            ["#", "Stack", "Requests/s (median)", "range", "Avg latency", "p99 latency", "Total requests",
             "Failures", "CPU µs/req (stack + db)", "Peak RSS", "Flags"], rows, "rlrrrrrrrrl"))
    return "\n\n".join(sections) if sections else "_No load cells in this run._"


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
        table(["Stack", *workloads, "Bad input answered 400"], rows),
        _column_matrix(results.verifications, PERF_TEST_COLUMNS, PERF_TEST),
        _column_matrix(results.verifications, USERS_COLUMNS, USERS),
    ]
    return "\n\n".join(p for p in parts if p)


def _yes_no(value: bool | None) -> str:
    return "n/a" if value is None else ("yes" if value else "no")


def stacks_section(stacks: list[StackInfo]) -> str:
    rows = [(
        s.id, s.language, f"{s.framework} {s.framework_version}", f"{s.driver} {s.driver_version}", s.server,
        s.pooler, _yes_no(s.prepared_statements),
        s.status if s.status == "ok" else f"{s.status}: {s.reason}",
    ) for s in stacks]
    text = table(["Stack", "Language", "Framework", "Driver", "Server", "Pooler", "Prepared statements", "Status"],
                 rows)
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
        "`columns-wrong` the stack's answer has ❌ columns. CPU µs/req: CPU time of the stack's processes and of "
        "PostgreSQL per completed request; Peak RSS: the stack's process tree.",
    ]
    if results.error:
        parts.append(f"> Run error: {results.error}")
    parts += [
        "## Results", results_tables(results),
        "## Verification", verification_section(results),
        "## Stacks", stacks_section(results.stacks),
        "## Environment", environment_section(results),
    ]
    return "\n\n".join(parts) + "\n"
