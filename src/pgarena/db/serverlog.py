"""What the managed database's log says about one role: the errors behind a stack that fails every request.

NOTE: the managed cluster's `log_line_prefix` is `%m [%p] %q%u@%d ` (cluster.py SETTINGS_PROFILE), so a
session's lines carry `role@database`; a stack that answers 500 because `function public.perf_test(unknown, …)
does not exist` shows that line 1,111 times, and the start's failure names it once with its count.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

SHOWN_ERRORS = 3
"""Distinct error messages shown for a failed start (the most frequent first)."""
SHOWN_ERROR_CHARS = 300
_LINE_RE = re.compile(r"^\S+ \S+ \S+ \[\d+\] (?P<role>[^@\s]*)@(?P<db>\S*) (?P<level>ERROR|FATAL|PANIC):\s+(?P<msg>.*)$")


def role_errors(log_path: Path | None, role: str, *, limit: int = SHOWN_ERRORS) -> list[str]:
    """The distinct ERROR/FATAL messages of sessions of `role` in the server log, most frequent first, each as
    `ERROR: message (N times)` cut to SHOWN_ERROR_CHARS; [] when the log is absent or has none."""
    if log_path is None:
        return []
    try:
        text = log_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    counts: Counter[str] = Counter()
    for line in text.splitlines():
        match = _LINE_RE.match(line)
        if match and match["role"] == role:
            counts[f"{match['level']}: {match['msg']}"] += 1
    shown = []
    for message, count in counts.most_common(limit):
        cut = message if len(message) <= SHOWN_ERROR_CHARS else message[:SHOWN_ERROR_CHARS] + "…"
        shown.append(f"{cut} ({count:,} time{'s' if count != 1 else ''})")
    return shown
