"""docs/stacks.md: the declared facts of every stack, from its stack.toml and its source (not from a run)."""

from __future__ import annotations

from pgarena.report.markup import table, yes_no
from pgarena.stack.loc import count


def stacks_catalogue(stacks: list) -> str:
    """The declared facts of every stack (from stack.toml files, not from a run): docs/stacks.md."""
    rows = []
    for stack in stacks:
        d = stack.definition
        lines = count(stack.directory, d.source_globs) if d.source_globs else None
        rows.append((f"`{d.id}`", d.language, f"{d.framework} {d.framework_version}", f"{d.driver} {d.driver_version}",
                     d.server, d.pooler, yes_no(d.prepared_statements), ", ".join(d.workloads) + (
                         "" if d.answer is None else f" (row answers in a declared shape: {d.answer.shape.describe()}, "
                                                     "flagged answer-mapped)"),
                     "?" if lines is None else f"{lines.total:,}",
                     ("yes" if stack.available else stack.unavailable_reason)
                     + ("" if d.min_postgres is None else f" (needs PostgreSQL {d.min_postgres} or newer)")))
    text = table(["Stack", "Language", "Framework", "Driver", "Server", "Pooler", "Prepared statements", "Workloads",
                  "Lines of code", "Available here"], rows, "llllllllrl")
    notes = [f"- **{s.id}**: {note}" for s in stacks for note in s.definition.notes]
    return text + "\n\nNotes from each stack.toml:\n\n" + "\n".join(notes)
