"""Two runs side by side, rendered: Markdown, a self-contained HTML page and the terminal table.

The comparison itself (figures, Welch tests, environment differences, rank agreement) is
`analysis.compare`; this module only presents it.
"""

from __future__ import annotations

from pathlib import Path

from pgarena.analysis.compare import COLUMNS, Comparison
from pgarena.results.atomic import write_text_atomic

TEMPLATE_DIR = Path(__file__).parent / "templates"


def method_text(comparison: Comparison) -> str:
    """The significance method in one paragraph, with this comparison's α and minimum change."""
    return (f"Per cell, run A is the baseline. Figures are medians over the repetitions with the 95 % "
            f"confidence interval of the mean in brackets; Δ is the change of the mean. A change is "
            f"significant when Welch's t-test on the per-repetition values rejects equal means at "
            f"α = {comparison.alpha:g} (|t| > t* at the Welch–Satterthwaite df, rounded down); with fewer "
            f"than 2 repetitions on a side, when the two sides' intervals/ranges do not overlap. A significant "
            f"change of at least {comparison.min_change:.1%} is a regression or improvement (RPS: lower is "
            f"worse; p99: higher is worse); anything else is within noise. CPU µs/req is stack + PostgreSQL, "
            f"for information.")


def _n(value: float | None, digits: int = 0) -> str:
    return "?" if value is None else f"{value:,.{digits}f}"


def _with_interval(median: float, low: float | None, high: float | None, digits: int) -> str:
    if low is None or high is None:
        return _n(median, digits)
    return f"{_n(median, digits)} [{_n(low, digits)}–{_n(high, digits)}]"


def _pct(change: float | None) -> str:
    return "?" if change is None else f"{change:+.1%}"


def table_rows(comparison: Comparison) -> list[dict[str, str]]:
    """One dict per common cell, keyed like COLUMNS, values as printed."""
    rows = []
    for c in comparison.cells:
        r, p = c.rps, c.p99_ms
        rows.append({
            "cell": c.label,
            "rps_a": _with_interval(r.median_a, r.low_a, r.high_a, 0),
            "rps_b": _with_interval(r.median_b, r.low_b, r.high_b, 0),
            "rps_change": _pct(r.change), "rps_verdict": r.verdict, "rps_test": r.method,
            "p99_a": _with_interval(p.median_a, p.low_a, p.high_a, 2 if p.median_a < 100 else 0),
            "p99_b": _with_interval(p.median_b, p.low_b, p.high_b, 2 if p.median_b < 100 else 0),
            "p99_change": _pct(p.change), "p99_verdict": p.verdict,
            "cpu_a": _n(c.cpu_us_a), "cpu_b": _n(c.cpu_us_b), "cpu_change": _pct(c.cpu_change),
            "notes": c.notes,
        })
    return rows


def summary_text(comparison: Comparison) -> str:
    """'12 common cells: 1 regression, 2 improvements, 9 within noise; 1 only in A, 0 only in B.'"""
    return (f"{len(comparison.cells)} common cells: {comparison.count('regression')} regression(s), "
            f"{comparison.count('improvement')} improvement(s), {comparison.count('within noise')} within noise "
            f"(RPS); {len(comparison.only_a)} only in A, {len(comparison.only_b)} only in B"
            + (f", {len(comparison.not_comparable)} not comparable (different load generators)"
               if comparison.not_comparable else "") + ". "
            + ("" if comparison.drift is None else
               f"Median RPS change over all common cells (run-to-run drift): {comparison.drift:.1%}. ")
            + comparison.ranking.summary())


def warning_lines(comparison: Comparison) -> list[str]:
    """The differences that matter, one line each ('' when there are none)."""
    return [f"{d.what}: A {d.a} · B {d.b}" for d in comparison.differences]


def noise_warning(comparison: Comparison) -> str | None:
    """A warning when a run used a short-window profile: its within-run intervals miss run-to-run drift."""
    if SHORT_WINDOW_PROFILE not in comparison.profiles:
        return None
    return (f"profile '{SHORT_WINDOW_PROFILE}': 2-second windows do not capture run-to-run drift (two identical "
            "quick runs of 4 stacks a minute apart differed by a median 11 % per cell, and 10 of 48 cells came out "
            "'significant'); gate on 'standard' or 'full' runs")


SHORT_WINDOW_PROFILE = "quick"


def render_markdown(comparison: Comparison) -> str:
    """The comparison as GitHub-flavoured Markdown (a PR comment or a CI artifact)."""
    from pgarena.report.markup import table

    parts = [f"# pgarena compare: A `{comparison.run_a}` → B `{comparison.run_b}`"]
    if comparison.differences:
        parts.append("> [!WARNING]\n> **WARNING: the environments differ in what matters — a change below may "
                     "come from the machine or the setup, not from the code.**\n>\n"
                     + "\n".join(f"> - {_md_code(d.what)}: A {_md_code(d.a)} · B {_md_code(d.b)}"
                                 for d in comparison.differences))
    if noise_warning(comparison):
        parts.append(f"> **Note:** {noise_warning(comparison)}")
    parts.append(summary_text(comparison))
    parts.append(f"_Method:_ {method_text(comparison)}")
    rows = table_rows(comparison)
    if rows:
        parts.append(table([h for _, h, _ in COLUMNS], ([row[k] for k, _, _ in COLUMNS] for row in rows),
                           "".join(a for _, _, a in COLUMNS)))
    else:
        parts.append("_No cell was measured in both runs._")
    if comparison.ranking.disagreements:
        parts.append("## Ranking disagreements\n\n" + "\n".join(f"- {d}" for d in comparison.ranking.disagreements))
    for title, missing in (("Only in A", comparison.only_a), ("Only in B", comparison.only_b),
                           ("Not comparable (different load generators)", comparison.not_comparable)):
        if missing:
            parts.append(f"## {title}\n\n" + "\n".join(f"- {label} ({note})" for label, note in missing))
    if comparison.info:
        parts.append("## Other differences (information only)\n\n"
                     + "\n".join(f"- {d.what}: A {_md_code(d.a)} · B {_md_code(d.b)}" for d in comparison.info))
    return "\n\n".join(parts) + "\n"


def _md_code(text: str) -> str:
    return "`" + text.replace("`", "'") + "`"


def render_html(comparison: Comparison) -> str:
    """The comparison as one self-contained HTML page (templates/compare.html.j2; no external assets)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATE_DIR), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env.get_template("compare.html.j2").render(
        c=comparison, columns=COLUMNS, rows=table_rows(comparison), summary=summary_text(comparison),
        method=method_text(comparison))


def output_paths(comparison: Comparison, out_dir: Path) -> tuple[Path, Path]:
    """compare-<run A id>.md and .html in `out_dir`."""
    stem = f"compare-{comparison.run_a}"
    return out_dir / f"{stem}.md", out_dir / f"{stem}.html"


def write_outputs(comparison: Comparison, out_dir: Path) -> list[Path]:
    """Write the Markdown and HTML comparison into `out_dir` (created if needed); return the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    md, html = output_paths(comparison, out_dir)
    write_text_atomic(md, render_markdown(comparison))
    write_text_atomic(html, render_html(comparison))
    return [md, html]


def terminal_lines(comparison: Comparison) -> list[str]:
    """One plain line per common cell (for pipes and CI logs)."""
    return [f"{row['cell']}: RPS {row['rps_a']} → {row['rps_b']} ({row['rps_change']}) {row['rps_verdict']} "
            f"[{row['rps_test']}]; p99 ms {row['p99_a']} → {row['p99_b']} ({row['p99_change']}) "
            f"{row['p99_verdict']}; CPU µs/req {row['cpu_a']} → {row['cpu_b']} ({row['cpu_change']})"
            + (f"; {row['notes']}" if row["notes"] else "")
            for row in table_rows(comparison)]


VERDICT_STYLE = {"regression": "bold red", "improvement": "green", "within noise": "dim"}


TERMINAL_TABLE_MIN_WIDTH = 150
"""Narrower terminals get `terminal_lines` instead of the table (the table would cut numbers)."""


def terminal_table(comparison: Comparison):
    """A Rich table of the common cells for a terminal at least TERMINAL_TABLE_MIN_WIDTH wide: RPS intervals
    on a second line, flags under the cell; p99 intervals and the test statistic are in the files and in
    `terminal_lines`."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    columns = [("cell", "Cell"), ("rps_a", "RPS A"), ("rps_b", "RPS B"), ("rps_change", "Δ RPS"),
               ("rps_verdict", "RPS verdict"), ("p99_a", "p99 A ms"), ("p99_b", "p99 B ms"), ("p99_change", "Δ p99"),
               ("p99_verdict", "p99 verdict"), ("cpu", "CPU µs/req")]
    grid = Table(title=f"A {comparison.run_a} → B {comparison.run_b}", box=box.SIMPLE_HEAD, pad_edge=False)
    for key, header in columns:
        grid.add_column(header, justify="left" if key == "cell" or key.endswith("_verdict") else "right",
                        no_wrap=key != "cell", min_width=18 if key == "cell" else None, overflow="fold")
    for row in table_rows(comparison):
        row["cpu"] = f"{row['cpu_a']} → {row['cpu_b']}\n({row['cpu_change']})"
        row["p99_a"], row["p99_b"] = row["p99_a"].split(" [")[0], row["p99_b"].split(" [")[0]
        cells = [Text(row[k].replace(" [", "\n["), style=VERDICT_STYLE[row[k]] if k.endswith("_verdict") else "")
                 for k, _ in columns]
        if row["notes"]:
            cells[0].append("\n" + row["notes"], style="yellow")
        grid.add_row(*cells)
    return grid
