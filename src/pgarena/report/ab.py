"""The A/B summary in Markdown, short enough for a pull-request comment (issue 24).

The verdict sentence, one row per table (the medians, head/base with its interval, the outcome) and where
the full report is. Rendered from the gate (analysis/abgate.py), which reads results.json only.
"""

from __future__ import annotations

from pgarena.analysis.abgate import ABGate
from pgarena.analysis.verdicts import percent

ICONS = {"regression": "❌ regression", "no regression": "✅ no regression", "undecided": "❔ undecided"}


def _rps(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def ab_markdown(gate: ABGate, *, title: str, report_link: str | None = None) -> str:
    """The summary: `title` as its heading, the gate's sentence, its table, and `report_link` (a path or URL of
    report.html) when given."""
    lines = [f"### {title}", "", gate.sentence(), "",
             f"| Table | {gate.base} 2xx/s | {gate.head} 2xx/s | head / base (interval) | Outcome |",
             "|---|---:|---:|---|---|"]
    for t in gate.tables:
        ratio = ("–" if t.interval is None else
                 f"{t.interval.ratio:.3f}× ({t.interval.low:.3f}–{t.interval.high:.3f}, {t.interval.rounds} rounds"
                 + (f" in {t.interval.blocks} blocks" if t.interval.blocks else "") + ")")
        outcome = ICONS[t.outcome] + (f": {t.reason}" if t.reason else "")
        lines.append(f"| {t.label} | {_rps(t.base_median_rps)} | {_rps(t.head_median_rps)} | {ratio} | {outcome} |")
    blocks = any(t.interval is not None and t.interval.blocks for t in gate.tables)
    unit = "per block of rounds, both sides restarted between blocks" if blocks else "per round"
    clear_alpha, regression_alpha = gate.rule.alphas
    floor = f"{1 - gate.margin:.2f}"
    upper = percent(1 - regression_alpha) + (f": {percent(clear_alpha)} split over the {gate.rule.tables} tables"
                                            if gate.rule.tables > 1 else "")
    lines += ["", f"A regression means head/base below {floor}; paired {unit}, anytime-valid. A table is cleared "
                  f"when its lower bound (one-sided, {percent(1 - clear_alpha)}) is above {floor} — the run only when "
                  f"every table is — and is a regression when its upper bound (one-sided, {upper}) is below it; either "
                  f"verdict is wrong in at most {percent(clear_alpha)} of runs (docs/methodology.md, \"A/B of two "
                  f"versions\")."]
    if report_link:
        lines += ["", f"Full report: [{report_link}]({report_link})"]
    return "\n".join(lines) + "\n"
