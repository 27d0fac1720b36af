"""Executing an interleaved schedule: rounds of windows until every cell's order is known.

The scheduler knows nothing of stacks, generators or databases: it is handed the (stack, cell) pairs, a
`measure` callback that runs one window and returns its figure (requests/s; None when the window failed),
and the figures of windows already measured (a resumed run). Each round visits every pair once in the
seeded order of `schedule.round_order`; after each round every cell is checked with the paired stopping
rule (`paired.settled`). It stops when

- `settled`: at least `min_rounds` rounds and every adjacent pair of every cell is ordered or equivalent
  within ± the target width (a cell that settles earlier than the others leaves the rounds then);
- `max-rounds`: the cap of rounds is reached;
- `budget`: another round would not fit the time budget (estimated from the rounds so far).

The caller stores each window as it comes (`measure` does), so an interruption loses at most the window
in flight, and a resume passes the stored figures back in `known`.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pgarena.analysis.paired import adjacent_pairs
from pgarena.load.schedule import Slot, round_order

StopReason = Literal["settled", "max-rounds", "budget"]


@dataclass(frozen=True)
class RoundsPolicy:
    """When an interleaved phase stops. Widths are relative (0.02 = ±2 %); seconds are wall-clock."""

    min_rounds: int
    max_rounds: int
    target_rel_half_width: float
    level: float = 0.95
    budget_s: float | None = None

    def __post_init__(self) -> None:
        if not 2 <= self.min_rounds <= self.max_rounds:
            raise ValueError(f"need 2 <= min_rounds <= max_rounds, got {self.min_rounds}, {self.max_rounds}")


@dataclass
class RoundsOutcome:
    """What the rounds measured and why they stopped."""

    rounds: int
    stop_reason: StopReason
    values: dict[Hashable, dict[str, list[float | None]]] = field(default_factory=dict)
    """cell → stack → figure per round (index 0 = round 1; None = that window failed or was not taken)."""
    cell_stop: dict[Hashable, StopReason] = field(default_factory=dict)
    """Why each cell stopped: settled cells leave the rounds early; the others stop with the phase."""
    cell_rounds: dict[Hashable, int] = field(default_factory=dict)
    """How many rounds each cell took part in."""
    unsettled: list[str] = field(default_factory=list)
    """Sentences for the adjacent pairs still neither ordered nor equivalent when the rounds stopped."""


def _per_round(values: Mapping[int, float | None], rounds: int) -> list[float | None]:
    return [values.get(r) for r in range(1, rounds + 1)]


def cell_unsettled(cell: Hashable, per_stack: Mapping[str, Sequence[float | None]], *, target_rel_half_width: float,
                   level: float, label: Callable[[Hashable], str] = str) -> list[str]:
    """One cell's adjacent pairs that are neither ordered nor within the target width, as sentences
    ("<label of the cell>: a and b are indistinguishable (0.97–1.05)")."""
    return [f"{label(cell)}: {pair.sentence()}" for pair in adjacent_pairs(per_stack, level)
            if not pair.settled(target_rel_half_width)]


def run_rounds(pairs: Sequence[tuple[str, Hashable]], *, seed: int, policy: RoundsPolicy,
               measure: Callable[[Slot], float | None],
               known: Mapping[tuple[str, Hashable, int], float | None] | None = None,
               clock: Callable[[], float] = time.monotonic,
               on_round_end: Callable[[int, list[str]], None] | None = None,
               label: Callable[[Hashable], str] = str) -> RoundsOutcome:
    """Measure interleaved rounds of `pairs` until the policy says stop (see the module docstring).

    A cell whose pairs are all settled after at least `min_rounds` rounds leaves the rounds (its stacks'
    windows are no longer scheduled); the others go on. `known` maps (stack, cell, round) to a figure
    measured before (a resumed run): those windows are not measured again. `on_round_end(round, unsettled)`
    is called after each round, e.g. to save and report progress.
    """
    known = dict(known or {})
    figures: dict[Hashable, dict[str, dict[int, float | None]]] = defaultdict(lambda: defaultdict(dict))
    for (stack, cell, r), value in known.items():
        figures[cell][stack][r] = value
    for stack, cell in pairs:
        figures[cell][stack]  # noqa: B018 — every pair appears, even before its first window
    active = list(dict.fromkeys(cell for _, cell in pairs))
    cell_rounds: dict[Hashable, int] = {}
    cell_stop: dict[Hashable, StopReason] = {}
    started = clock()
    measured_rounds = 0
    r = 0
    while True:
        r += 1
        round_started = clock()
        fresh = False
        in_round = [(stack, cell) for stack, cell in pairs if cell in active]
        for slot in round_order(in_round, r, seed):
            if (slot.stack, slot.cell, r) in known:
                continue
            figures[slot.cell][slot.stack][r] = measure(slot)
            fresh = True
        measured_rounds += fresh
        open_pairs: list[str] = []
        for cell in list(active):
            cell_rounds[cell] = r
            per_stack = {stack: _per_round(by_round, r) for stack, by_round in figures[cell].items()}
            still = cell_unsettled(cell, per_stack, label=label, target_rel_half_width=policy.target_rel_half_width,
                                   level=policy.level)
            if r >= policy.min_rounds and not still:
                active.remove(cell)
                cell_stop[cell] = "settled"
            open_pairs += still
        if on_round_end is not None:
            on_round_end(r, open_pairs)
        reason: StopReason | None = None
        if not active:
            reason = "settled"
        elif r >= policy.max_rounds:
            reason = "max-rounds"
        elif policy.budget_s is not None and fresh and r >= policy.min_rounds:
            elapsed = clock() - started
            per_round = (clock() - round_started) if measured_rounds == 1 else elapsed / measured_rounds
            if elapsed + per_round > policy.budget_s:
                reason = "budget"
        if reason is not None:
            for cell in active:
                cell_stop[cell] = reason
            values = {cell: {stack: _per_round(by_round, cell_rounds.get(cell, r))
                             for stack, by_round in per_stack.items()} for cell, per_stack in figures.items()}
            return RoundsOutcome(rounds=r, stop_reason=reason, values=values, cell_stop=cell_stop,
                                 cell_rounds=cell_rounds, unsettled=open_pairs)
