"""Ranks shared by the Markdown and HTML reports: throughput and efficiency, with ties where the
confidence intervals overlap, and no rank at all for cells that must not be ranked.

Ranks are positions in the *field*: the measured, valid cells (no flags.INVALID flag) with an interval.
`stats.rank_with_ties` over the field gives each cell every position it could take ("1", "2–3"), so a
noisy cell's wide interval still pushes the cells it surely beats down. A rank is *shown* only for a
rankable cell (in the field and not `noisy`); the others get "–". Every measured cell is listed, in
median order, so the table reads top to bottom as measured.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from pgarena.flags import INVALID
from pgarena.results import Cell
from pgarena.stats import rank_with_ties

UNRANKED = "–"


def rankable(cell: Cell) -> bool:
    """Measured, valid and tight enough to rank."""
    s = cell.summary
    return (cell.status == "ok" and s is not None and not s.noisy and s.rps_interval is not None
            and not any(flag in INVALID for flag in cell.flags))


def group_key(cell: Cell) -> tuple:
    """(workload, parameter, model, level, engine): what a cell's figure depends on besides its stack."""
    return (*cell.key[1:], cell.engine)


def comparable_groups(cells: Iterable[Cell]) -> dict[tuple, list[Cell]]:
    """Cells measured under the same conditions — workload, parameter, model and level (`Cell.key` without
    the stack; open-model levels by their configured spec, so '90%' compares stacks at 90 % of their own
    peak) and load generator — in first-seen order, keyed by `group_key`. Ranks are only ever computed
    within one group.

    NOTE: the engine is part of the group because oha and k6 measure different throughput against the same
    server (docs/methodology.md, "oha and k6 disagree"); cells of different engines never share a rank."""
    groups: dict[tuple, list[Cell]] = defaultdict(list)
    for cell in cells:
        groups[group_key(cell)].append(cell)
    return groups


def in_field(cell: Cell) -> bool:
    """Measured, valid and with an interval: it takes part in the ranking (noisy or not)."""
    s = cell.summary
    return (cell.status == "ok" and s is not None and s.rps_interval is not None
            and not any(flag in INVALID for flag in cell.flags))


def throughput_ranks(cells: Sequence[Cell]) -> list[tuple[Cell, str]]:
    """Measured cells by median RPS (higher first) with tie-aware rank labels ("–" where not rankable)."""
    measured = [c for c in cells if c.summary is not None]
    labels = dict((id(c), label) for c, label in rank_with_ties(
        [(c, c.summary.rps_interval.low, c.summary.rps_interval.high, c.summary.rps.median)  # type: ignore[union-attr]
         for c in measured if in_field(c)]))
    ordered = sorted(measured, key=lambda c: -c.summary.rps.median)  # type: ignore[union-attr]
    return [(c, labels[id(c)] if rankable(c) else UNRANKED) for c in ordered]


def cost(cell: Cell) -> float | None:
    """CPU µs per request of the stack and PostgreSQL together."""
    s = cell.summary
    if s is None or s.stack_cpu_us_per_request is None or s.db_cpu_us_per_request is None:
        return None
    return s.stack_cpu_us_per_request + s.db_cpu_us_per_request


def efficiency_ranks(cells: Sequence[Cell]) -> list[tuple[Cell, str]]:
    """Measured cells by CPU µs per request (lower first), ties where the per-repetition intervals overlap.

    Valid cells with an interval are ranked (noise in RPS does not disqualify: CPU per request is the
    steadier figure); cells without CPU figures are left out.
    """
    measured = [c for c in cells if cost(c) is not None]
    ranked = [c for c in measured if c.status == "ok" and c.summary.cpu_us_per_request_interval is not None  # type: ignore[union-attr]
              and not any(flag in INVALID for flag in c.flags)]
    # lower is better: rank the negated intervals
    labels = dict((id(c), label) for c, label in rank_with_ties(
        [(c, -c.summary.cpu_us_per_request_interval.high, -c.summary.cpu_us_per_request_interval.low,  # type: ignore[union-attr]
          -cost(c)) for c in ranked]))  # type: ignore[operator]
    ordered = sorted(measured, key=lambda c: (id(c) not in labels, cost(c)))
    return [(c, labels.get(id(c), UNRANKED)) for c in ordered]
