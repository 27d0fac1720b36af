"""The Markdown report of `pgarena calibrate` (analysis/calibration.py): passed or failed, how noisy this
machine is, every copy-vs-copy interval, and what difference it resolves in what time."""

from __future__ import annotations

import math

from pgarena.analysis.calibration import AACheck, PairReading
from pgarena.analysis.noise import NoiseBudget


def _sd(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _duration(seconds: float) -> str:
    """'45 s', '12 min', '2.5 h'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def verdict_line(check: AACheck) -> str:
    """The check's outcome in one sentence."""
    if check.passed:
        return (f"PASSED: no order was claimed among the {len(check.copies)} identical copies in "
                f"{len(check.tables)} table(s).")
    claims = [f"{t.label}: {p.a} / {p.b} = {p.ratio:.2f} ({p.low:.2f}–{p.high:.2f})"
              for t in check.tables for p in t.claims]
    return (f"FAILED: {len(claims)} order(s) claimed among identical copies — the verdict is not to be trusted "
            f"on this machine at its stated level: " + "; ".join(claims) + ".")


def sharpness_line(check: AACheck) -> str:
    """How wide the copy-vs-copy intervals are against the equivalence margin, in one sentence."""
    low, high = 1 / (1 + check.margin), 1 + check.margin
    bounds = f"±{check.margin * 100:g} % ({low:.2f}–{high:.2f})"
    pairs = sum(len(t.pairs) for t in check.tables)
    if check.sharp:
        return f"Sharp: every one of the {pairs} copy-vs-copy intervals lies within {bounds}."
    unread = [t.label for t in check.tables if not t.pairs]
    parts = []
    if check.wide:
        label, widest = max(check.wide, key=lambda w: w[1].high / w[1].low if w[1].low > 0 else math.inf)
        parts.append(f"{len(check.wide)} of {pairs} copy-vs-copy intervals reach beyond {bounds}, the widest "
                     f"{widest.a} / {widest.b} {widest.low:.2f}–{widest.high:.2f} ({label}, {widest.rounds} rounds)")
    if unread:
        parts.append(f"no pair was read in {', '.join(unread)} (copies left out of the ranking, below)")
    return "Not sharp: " + "; ".join(parts) + "."


def _reading(check: AACheck, pair: PairReading) -> str:
    """'❌ order claimed', 'no order, within ±10 %' or 'no order, wider than ±10 %'."""
    if pair.claimed:
        return "❌ order claimed"
    return f"no order, {'within' if pair.within else 'wider than'} ±{check.margin * 100:g} %"


def _budget_row(label: str, b: NoiseBudget) -> str:
    beta = "–" if b.beta is None else f"{b.beta:+.2f}"
    r = "–" if b.correlation is None else f"{b.correlation:+.2f}"
    return (f"| {label} | {b.windows} | {b.rounds} | {_sd(b.window_log_sd)} | {_sd(b.adjusted_window_log_sd)} | "
            f"{_sd(b.round_sd)} | {_sd(b.adjusted_round_sd)} | {beta} | {r} |")


def noise_lines(check: AACheck) -> list[str]:
    """The noise budget table: per table and pooled."""
    lines = ["| table | windows | rounds | window log-sd | after the probe | round sd | after the probe | β | r |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [_budget_row(t.label, t.budget) for t in check.tables]
    if check.pooled is not None:
        lines.append(_budget_row("**pooled**", check.pooled))
    return lines


def resolution_lines(check: AACheck) -> list[str]:
    """What difference the verdict resolves with how many rounds, and the time those rounds take."""
    if check.window_log_sd is None or not check.resolution:
        return ["Not enough windows to estimate the noise: run more rounds."]
    stacks = sorted({r.stacks for r in check.resolution})
    per_window = (f"{check.seconds_per_window:.2f} s of wall time per window, measured (re-warm, window, checks and "
                  "bookkeeping)" if check.slot_measured else
                  f"{check.seconds_per_window:g} s per window (window and re-warm; what happens between windows "
                  "was not measured in this run)")
    lines = [f"With a per-window log-sd of {check.window_log_sd:.3f} and {per_window}, the verdict separates two "
             "stacks of one table, measured in every round until the time runs out (the verdict's final look), once they "
             "differ by at least:", "",
             "| rounds | " + " | ".join(f"{s} stacks: ratio · time" for s in stacks) + " |",
             "|---:|" + "---:|" * len(stacks)]
    for rounds in sorted({r.rounds for r in check.resolution}):
        row = {r.stacks: r for r in check.resolution if r.rounds == rounds}
        lines.append(f"| {rounds} | " + " | ".join(
            f"{row[s].ratio:.2f}× · {_duration(row[s].seconds)}" for s in stacks) + " |")
    return lines


def calibration_markdown(check: AACheck, *, stack: str, run_dir: str, hostname: str,
                         not_measured: str | None = None) -> str:
    """The whole report; `not_measured`: the run's sentence on the tables its budget left out (None: none)."""
    lines = [f"# pgarena calibrate — {hostname}", "",
             f"{len(check.copies)} identical copies of `{stack}` ({', '.join(check.copies)}) measured as different "
             f"stacks in one interleaved run (`{run_dir}`). Any order claimed among them is false.", "",
             f"**{verdict_line(check)}**", "", sharpness_line(check), "",
             *([f"{not_measured}: no check of them here.", ""] if not_measured else []),
             "## How noisy this machine is", "",
             "ln(2xx/s) of every window fitted as stack + round + noise (docs/methodology.md, \"The noise budget\"); "
             "\"after the probe\": corrected by the reference probe's reading of the machine's speed in the window.",
             "", *noise_lines(check), "",
             "## Copy against copy", ""]
    for table in check.tables:
        lines += [f"### {table.label}", ""]
        if table.left_out:
            lines += [f"Left out of the ranking, so of this check: {', '.join(table.left_out)}.", ""]
        if not table.pairs:
            continue
        lines += ["| pair | ratio | interval | rounds | |", "|---|---:|---|---:|---|"]
        lines += [f"| {p.a} / {p.b} | {p.ratio:.3f} | {p.low:.3f}–{p.high:.3f} | {p.rounds} | {_reading(check, p)} |"
                  for p in table.pairs]
        lines.append("")
    lines += ["## What this machine can resolve", "", *resolution_lines(check), ""]
    return "\n".join(lines)
