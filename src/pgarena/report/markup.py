"""Markdown building blocks shared by the Markdown exporters (report, compare): the table, and how a table
cell writes a figure (counts, milliseconds, MiB, CPU µs, 'not measured' for a figure pgarena could not
measure)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pgarena.report.targets import NOT_MEASURED
from pgarena.results.models import CellSummary


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], align: str | None = None) -> str:
    """A GitHub-flavoured Markdown table; `align` is one letter per column (l/r)."""
    align = align or "l" * len(headers)
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(rule) + " |"]
    for row in rows:
        lines.append("| " + " | ".join(str(cell).replace("|", "\\|").replace("\n", " ") for cell in row) + " |")
    return "\n".join(lines)


def number(value: float, digits: int = 0) -> str:
    """'12,345' (thousands separated), with `digits` decimals."""
    return f"{value:,.{digits}f}"


def milliseconds(value: float, lower_bound: bool = False) -> str:
    """'1.23ms', '1,234ms'; '≥ 250ms' for a lower bound (it counts requests without an answer at the timeout)."""
    text = f"{value:.2f}ms" if value < 100 else f"{value:,.0f}ms"
    return f"≥ {text}" if lower_bound else text


def mebibytes(value: int | None) -> str:
    """Bytes as '12 MiB'; None is 'not measured'."""
    return NOT_MEASURED if value is None else f"{value / 2**20:,.0f} MiB"


def measured_number(value: float | None) -> str:
    """`number` of a figure that may not have been measured (None: 'not measured', never 0)."""
    return NOT_MEASURED if value is None else number(value)


def cpu_cost(stack_us: float | None, db_us: float | None) -> str:
    """'102 + 122' (stack + PostgreSQL CPU µs per request); a figure pgarena could not measure is 'not measured'."""
    if stack_us is None and db_us is None:
        return NOT_MEASURED

    def part(value: float | None) -> str:
        return NOT_MEASURED if value is None else f"{value:,.0f}"

    return f"{part(stack_us)} + {part(db_us)}"


def peak_memory(summary: CellSummary) -> str:
    """Peak PSS of the stack's processes; older results have only summed RSS, marked as such."""
    if summary.stack_pss_peak_bytes is not None:
        return mebibytes(summary.stack_pss_peak_bytes)
    if summary.stack_rss_peak_bytes is not None:
        return mebibytes(summary.stack_rss_peak_bytes) + " (RSS)"
    return mebibytes(None)


def connection_count(peak: int | None) -> str:
    """Most database connections held at once; None is 'not measured'."""
    return NOT_MEASURED if peak is None else str(peak)


def yes_no(value: bool | None) -> str:
    """'yes', 'no', or 'n/a' where the fact is not declared."""
    return "n/a" if value is None else ("yes" if value else "no")
