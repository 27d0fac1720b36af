"""The Markdown report's Verification section: each stack × workload's verdict, the column matrices, bad
input answered wrongly and the database accounting (docs/verification.md)."""

from __future__ import annotations

from pgarena.contract.values import Verdict
from pgarena.contract.workloads import (
    COLUMNS,
    GRAPHQL,
    GRAPHQL_FIELDS,
    NESTED_LISTS,
    PERF_TEST,
    PERF_TEST_COLUMNS,
    SCENARIOS,
    USERS,
    USERS_COLUMNS,
)
from pgarena.report.families import WORKLOAD_ORDER
from pgarena.report.markup import table
from pgarena.results.models import RunResults, WorkloadVerification


def accounting_section(results: RunResults) -> str:
    """The database accounting table of every verification (pg_stat_statements around a burst), with the
    reasons of every verdict that is not ✅; '' when none was measured."""
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
    """The Verification section: stack × workload verdicts and robustness, each workload's column matrix,
    bad input answered wrongly and the database accounting."""
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
