"""Markdown building blocks shared by the Markdown exporters (report, compare)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], align: str | None = None) -> str:
    """A GitHub-flavoured Markdown table; `align` is one letter per column (l/r)."""
    align = align or "l" * len(headers)
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(rule) + " |"]
    for row in rows:
        lines.append("| " + " | ".join(str(cell).replace("|", "\\|").replace("\n", " ") for cell in row) + " |")
    return "\n".join(lines)
