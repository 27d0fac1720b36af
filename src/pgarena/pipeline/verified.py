"""What a stack's verification means for the rest of the run: the log line it leaves, the ❌ columns its
cells do not judge again under load, and the flags its cells inherit. Used by a stack's bring-up
(lifecycle.py, targets.py) and by every schedule's cells (cells.py, interleaved.py, resilience.py)."""

from __future__ import annotations

from pgarena.contract.flags import ANSWER_MAPPED, CONTENT_TYPE, CONTENT_TYPE_WRONG, PIPELINES_ACROSS_REQUESTS
from pgarena.contract.values import Verdict
from pgarena.pipeline.context import RunContext
from pgarena.results.models import Cell, WorkloadVerification


def verification_line(v: WorkloadVerification) -> str:
    """The run log's line for one stack × workload verification: 'FAILED (check: detail)', or 'ok, ' with
    its column verdicts, bad-input score and database accounting."""
    if not v.ok:
        failed = next((c for c in v.checks if not c.ok), None)
        return f"FAILED ({failed.name}: {failed.detail})" if failed else "FAILED"
    counts = {s: sum(1 for c in v.columns if c.verdict.symbol == s) for s in ("✅", "⚠️", "❌")}
    columns = f"columns {counts['✅']}✅ {counts['⚠️']}⚠️ {counts['❌']}❌, " if v.columns else ""
    bad = f"bad input {sum(c.ok for c in v.bad_input)}/{len(v.bad_input)}" if v.bad_input else "no bad-input cases"
    if v.accounting:
        a = v.accounting
        db = f", database {a.workload_statements_per_request:g} statements/request {a.verdict.symbol}"
        db += f" ({a.reason})" if a.reason else ""
    else:
        db = f", no database accounting ({v.accounting_unavailable})" if v.accounting_unavailable else ""
    content = ("content type wrong (loaded, flagged content-type-wrong), "
               if v.content_type_wrong else "")
    mapped = f"answer mapped from {v.answer_mapping} (loaded, flagged answer-mapped), " if v.answer_mapping else ""
    return f"ok, {content}{mapped}{columns}{bad}{db}"


def known_wrong_columns(ctx: RunContext, cell: Cell) -> tuple[str, ...]:
    """The ❌ columns verification found for the cell's stack and workload (not judged again under load)."""
    verification = ctx.results.verification(cell.stack, cell.workload)
    if verification is None:
        return ()
    return (*verification.wrong_columns, *([CONTENT_TYPE] if verification.content_type_wrong else []))


def mark_invalid_answers(ctx: RunContext, cell: Cell) -> None:
    """Flags the cell inherits from its stack's verification: ❌ columns, a wrong content type, answers mapped
    from a declared other shape, wrong database accounting, pipelining across requests (the wire observer)."""
    verification = ctx.results.verification(cell.stack, cell.workload)
    if verification and verification.wrong_columns:
        cell.flags.append("columns-wrong")
    if verification and verification.content_type_wrong:
        cell.flags.append(CONTENT_TYPE_WRONG)
    if verification and verification.answer_mapping:
        cell.flags.append(ANSWER_MAPPED)
    if verification and verification.accounting and verification.accounting.verdict is Verdict.WRONG:
        cell.flags.append("queries-wrong")
    if verification and verification.wire and verification.wire.across_requests:
        cell.flags.append(PIPELINES_ACROSS_REQUESTS)
