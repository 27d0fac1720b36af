"""The HTML report's verdicts: each cell's two ranks and ratios (report/verdicts.py) and the headline —
the stack ranked first (or an explicit tie) in every table, the paired sentences, and what was left out."""

from __future__ import annotations

from pgarena.analysis.ranking import UNRANKED, comparable_groups, efficiency_ranks, level_group_label, relative_rate
from pgarena.analysis.verdicts import TableVerdict, run_verdicts
from pgarena.contract import flags as F
from pgarena.report import families
from pgarena.report.charts import rounded
from pgarena.report.families import cell_marks, rps_bounds
from pgarena.results.models import Cell, RunResults


class Verdicts:
    """Each cell's table verdict (report/verdicts.py) and efficiency rank, looked up by id(cell)."""

    def __init__(self, results: RunResults) -> None:
        groups = comparable_groups(results.cells)
        by_key = run_verdicts(results)
        self.of: dict[int, TableVerdict] = {id(c): by_key[key] for key, cells in groups.items() for c in cells}
        self.efficiency: dict[int, str] = {}
        for cells in groups.values():
            self.efficiency.update((id(c), label) for c, label in efficiency_ranks(cells))

    def rank(self, cell: Cell) -> str:
        """The rank among the stacks whose answers are exact."""
        v = self.of.get(id(cell))
        return UNRANKED if v is None else v.rank_exact.get(cell.stack, UNRANKED)

    def rank_all(self, cell: Cell) -> str:
        """The rank among every stack that answered validly."""
        v = self.of.get(id(cell))
        return UNRANKED if v is None else v.rank_all.get(cell.stack, UNRANKED)

    def hover_ranks(self, cells: list[Cell]) -> dict[int, str]:
        """id(cell) → '1 among exact answers, 1 among all' for the charts' hover text."""
        return {id(c): f"{self.rank(c)} among exact answers, {self.rank_all(c)} among all" for c in cells}


def ratio_payload(verdict: TableVerdict | None, cell: Cell, reference: str | None, ratios: dict) -> dict | None:
    """{'text', 'ratio', 'low', 'high'} of a cell against a reference stack; 'best'/'baseline' for itself."""
    if verdict is None or reference is None:
        return None
    if cell.stack == reference:
        return {"text": "best" if ratios is verdict.to_best else "baseline", "ratio": 1.0, "low": None, "high": None}
    found = ratios.get(cell.stack)
    if found is None:
        return None
    i = found.interval
    return {"text": found.text(), "ratio": rounded(found.ratio, 4), "low": None if i is None else rounded(i.low, 4),
            "high": None if i is None else rounded(i.high, 4)}


def _why_unranked(cell: Cell, verdict: TableVerdict | None) -> str:
    marks = cell_marks(cell)
    if "failed" in marks:
        return "failed"
    reasons = [f for f in cell.flags if f in F.INVALID]
    if F.DEMONSTRATION in cell.flags:
        reasons.append("a demonstration of a mistake, not a competitor")
    if relative_rate(cell):
        reasons.append("offered a share of its own peak (loads differ)")
    if verdict is not None and cell.stack in verdict.sequential:
        reasons.append("measured on its own after the interleaved rounds, so not compared")
    if not reasons and cell.summary is not None and cell.summary.rps_interval is None:
        reasons.append("no interval (fewer than 2 repetitions)")
    return ", ".join(dict.fromkeys(reasons)) or "not ranked"


def _leader(cell: Cell, rank: str, verdict: TableVerdict) -> dict:
    low, high, what = rps_bounds(cell)
    return {"stack": cell.stack, "rank": rank, "rps_median": rounded(cell.summary.rps.median),  # type: ignore[union-attr]
            "rps_low": rounded(low), "rps_high": rounded(high), "interval": what,
            "latency_p99_ms": rounded(cell.summary.latency_p99_ms.median, 3),  # type: ignore[union-attr]
            "wrong_columns": verdict.wrong_columns.get(cell.stack, [])}


def headline(results: RunResults, verdicts: Verdicts) -> list[dict]:
    """Per workload × parameter × load level: the stack ranked first (or an explicit tie) among the exact
    answers, stacks with ❌ columns that rank first among all, the paired sentences, and what was left out."""
    rows = []
    mixed = len({c.engine for c in results.cells}) > 1
    for family in families.families(results.cells):
        engines = sorted({c.engine for c in family.cells})
        for level_cell, engine in ((lc, e) for lc in family.levels() for e in engines):
            group = level_group_label(level_cell)
            cells = [c for c in family.cells if c.model == level_cell.model and level_group_label(c) == group
                     and c.engine == engine]  # cells of different engines never share a rank
            if not cells:
                continue
            verdict = next((verdicts.of[id(c)] for c in cells if id(c) in verdicts.of), None)
            best, best_inexact, unranked = [], [], []
            leaders = set(verdict.leaders()) if verdict else set()
            for cell in (verdict.cells if verdict else []):
                if cell.stack in leaders:
                    ranks = verdict.rank_exact if verdict.rank_exact.get(cell.stack, UNRANKED) != UNRANKED else verdict.rank_all  # type: ignore[union-attr]
                    best.append(_leader(cell, ranks[cell.stack], verdict))  # type: ignore[arg-type]
                elif verdict.wrong_columns.get(cell.stack) is not None and verdicts.rank_all(cell).split("–")[0] == "1":  # type: ignore[union-attr]
                    best_inexact.append(_leader(cell, verdicts.rank_all(cell), verdict))  # type: ignore[arg-type]
            for cell in sorted(cells, key=lambda c: -(c.summary.rps.median if c.summary else -1)):
                if verdicts.rank_all(cell) == UNRANKED:
                    unranked.append({"stack": cell.stack, "why": _why_unranked(cell, verdict)})
            rows.append({"family": family.title, "level": group + (f" · {engine}" if mixed else ""),
                         "model": level_cell.model,
                         "basis": verdict.basis if verdict else None,
                         "stacks": len(cells), "best": best, "best_inexact": best_inexact,
                         "tie": len(best) > 1, "method": verdict.method() if verdict else "",
                         "family_sentence": verdict.family_sentence() if verdict else None,
                         "stopping_sentence": verdict.stopping_sentence() if verdict else None,
                         "reach_sentence": verdict.reach_sentence() if verdict else None,
                         "paired": bool(verdict and verdict.paired),
                         "sentences": verdict.sentences() if verdict else [],
                         "baseline_problem": verdict.baseline_problem if verdict else None, "unranked": unranked})
    return rows
