"""Markdown for what a run establishes and under which conditions: each table's verdict columns and
sentences (report/verdicts.py), the schedule and the database ceiling (report/conditions.py)."""

from __future__ import annotations

from pgarena.analysis.ranking import BY_RPS, UNRANKED
from pgarena.analysis.verdicts import TableVerdict
from pgarena.report.conditions import ceiling_note, ceiling_rows, ceiling_text, schedule_summary
from pgarena.report.markup import table
from pgarena.results.models import Cell, RunResults


def verdict_headers(verdict: TableVerdict) -> list[str]:
    """The verdict columns of a results table: ratio to the best (and to the baseline) where it ranks 2xx/s,
    and the ceiling share."""
    if verdict.basis != BY_RPS:
        return ["DB ceiling"]
    return ["× best (95 %)" if verdict.paired else "× best", *(
        [f"× {verdict.baseline}" + (" (95 %)" if verdict.paired else "")] if verdict.baseline else []),
        "DB ceiling"]


def verdict_columns(verdict: TableVerdict, cell: Cell, results: RunResults) -> list[str]:
    """This cell's verdict columns (see `verdict_headers`)."""
    if verdict.basis != BY_RPS:
        return [ceiling_text(results, cell)]

    def ratio(reference: str | None, ratios: dict) -> str:
        if reference is None:
            return "–"
        if cell.stack == reference:
            return "best" if ratios is verdict.to_best else "baseline"
        found = ratios.get(cell.stack)
        return "–" if found is None else found.text()

    return [ratio(verdict.best, verdict.to_best),
            *([ratio(verdict.baseline if not verdict.baseline_problem else None, verdict.to_baseline)]
              if verdict.baseline else []),
            ceiling_text(results, cell)]


def figure_with_columns(verdict: TableVerdict, cell: Cell, figure: str) -> str:
    """'1,450.00/s ❌ timestamp_val': the figure with the cell's ❌ columns named beside it."""
    wrong = verdict.wrong_columns.get(cell.stack)
    return f"{figure} ❌ {', '.join(wrong)}" if wrong else figure


def ranks(verdict: TableVerdict, cell: Cell) -> list[str]:
    """[rank among exact stacks, rank among all]."""
    return [verdict.rank_exact.get(cell.stack, UNRANKED), verdict.rank_all.get(cell.stack, UNRANKED)]


def verdict_text(verdict: TableVerdict) -> str:
    """The lines under a table: how it was ranked, who leads, each adjacent pair, the baseline's absence."""
    lines = [verdict.method()]
    lines += [s for s in (verdict.family_sentence(), verdict.stopping_sentence(), verdict.reach_sentence()) if s]
    leaders = verdict.leaders()
    if len(leaders) == 1:
        lines.append(f"Rank 1: **{leaders[0]}**.")
    elif leaders:
        lines.append(f"Tied for rank 1: {', '.join(f'**{s}**' for s in leaders)}.")
    lines += [f"- {sentence}" for sentence in verdict.sentences()]
    if verdict.baseline_problem:
        lines.append(f"_No ratio to the baseline: {verdict.baseline_problem}._")
    return "\n".join(lines)


def schedule_section(results: RunResults) -> str:
    """The schedule: kind, seed, phases with their stop reasons, sequential fallbacks, disturbances."""
    s = schedule_summary(results)
    head = [s["note"]]
    if s["recorded"]:
        head.append(f"Schedule `{s['kind']}`" + ("" if s["seed"] is None else f", seed {s['seed']}")
                    + (s["rewarm"] or "")
                    + ".")
    parts = [" ".join(head)]
    if s["phases"] and any(p["window"] for p in s["phases"]):
        parts.append(table(["Phase", "Cells", "Window", "Windows", "Rounds", "Stopped"],
                           [(p["name"], p["cells"], p["window"] or "–", p["windows"], p["rounds"], p["sentence"])
                            for p in s["phases"]], "lrlrrl"))
    elif s["phases"]:
        parts.append(table(["Phase", "Cells", "Windows", "Rounds", "Stopped"],
                           [(p["name"], p["cells"], p["windows"], p["rounds"], p["sentence"]) for p in s["phases"]],
                           "lrrrl"))
    if s["fallbacks"]:
        parts.append("Measured sequentially instead (they could not run beside the others):\n\n"
                     + "\n".join(f"- {f['stack']}: {f['reason']}" for f in s["fallbacks"]))
    if s["disturbances"]:
        parts.append("Possible disturbances — stacks that used more than 5 % of a CPU while the others were "
                     "measured:\n\n" + "\n".join(f"- {d['stack']}: {d['idle_cpu_fraction'] * 100:.0f} % of a CPU"
                                                 for d in s["disturbances"]))
    return "\n\n".join(parts)


def ceiling_section(results: RunResults) -> str:
    """The database's own ceiling per workload × parameter × condition, or why it was not measured."""
    rows = ceiling_rows(results)
    if not rows:
        return ceiling_note(results)
    return ceiling_note(results) + "\n\n" + table(
        ["Workload", "Parameter", "Round trip", "Connections", "Transactions/s", "95 % interval", "Runs", "Statements"],
        [(r["workload"], r["parameter"], r["round_trip"], r["connections"], f"{r['tps']:,.0f}", r["interval"], r["runs"],
          f"`{r['statements']}`") for r in rows],
        "llrrrrrl")
