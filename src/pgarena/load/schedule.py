"""The run as a schedule of windows: which (stack, cell) is measured in which round, in what order.

Planning produces slots; a scheduler executes them one at a time. Two schedules:

- `sequential` — today's behaviour: each stack in turn, all its cells, each cell's repetitions back to
  back. Simple, but every stack is measured in its own block of minutes, so a machine whose speed drifts
  over minutes hands that drift to the stacks.
- `interleaved` — randomized multiple interleaved trials (Abedi and Brecht, ICPE 2017): every round visits
  every (stack, cell) once, in a fresh random order drawn from a recorded seed (the stacks shuffled, each
  stack's cells together: `round_order`), so each round's stacks saw the same machine and can be compared
  within the round (`paired`).

The order of a round depends only on the seed and the round's number, so a resumed run replays the same
order, and a run can be reproduced from its recorded seed.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

ScheduleKind = Literal["sequential", "interleaved"]
SCHEDULE_KINDS: tuple[ScheduleKind, ...] = ("interleaved", "sequential")
DEFAULT_SCHEDULE: ScheduleKind = "interleaved"


@dataclass(frozen=True)
class Slot:
    """One measured window: `stack` at `cell` (a cell key without the stack), in round `round` (1-based)."""

    stack: str
    cell: Hashable
    round: int


def round_order(pairs: Sequence[tuple[str, Hashable]], round_index: int, seed: int) -> list[Slot]:
    """Round `round_index` of an interleaved schedule: every pair once, shuffled by (seed, round) — the stacks in a
    random order, and each stack's cells one after another, in a random order of their own.

    Each stack's cells go together so that a stack does not wait long between its windows: a Node.js stack left
    without load for half a minute reads slower (contract/idle.py), and among 22 stacks × 11 cells shuffled as one,
    most windows came after 15 s or more without load on their stack. Taken together, only the first of a stack's
    windows in a round does, and its re-warm is the longer one. Each cell's stacks are still in a random order
    within the round, which is what the paired comparison needs (Abedi and Brecht's randomized trials).

    `random.Random` seeded with a string is deterministic across processes and Python versions ≥ 3.2
    (it hashes the string with SHA-512), unlike `hash()`.
    """
    rng = random.Random(f"pgarena-schedule:{seed}:{round_index}")
    stacks = list(dict.fromkeys(stack for stack, _ in pairs))
    rng.shuffle(stacks)
    order: list[Slot] = []
    for stack in stacks:
        cells = [cell for s, cell in pairs if s == stack]
        rng.shuffle(cells)
        order += [Slot(stack, cell, round_index) for cell in cells]
    return order


def sequential(pairs: Sequence[tuple[str, Hashable]], rounds: int) -> list[Slot]:
    """Each pair's `rounds` windows back to back, pairs in the given order (stack by stack)."""
    return [Slot(stack, cell, r) for stack, cell in pairs for r in range(1, rounds + 1)]


def interleaved(pairs: Sequence[tuple[str, Hashable]], rounds: int, seed: int) -> list[Slot]:
    """`rounds` interleaved rounds, each in its own random order."""
    return [slot for r in range(1, rounds + 1) for slot in round_order(pairs, r, seed)]


def plan(kind: ScheduleKind, pairs: Sequence[tuple[str, Hashable]], rounds: int, seed: int) -> list[Slot]:
    """The whole list of windows for a fixed number of rounds."""
    if kind == "sequential":
        return sequential(pairs, rounds)
    if kind == "interleaved":
        return interleaved(pairs, rounds, seed)
    raise ValueError(f"unknown schedule '{kind}'; choose one of {', '.join(SCHEDULE_KINDS)}")
