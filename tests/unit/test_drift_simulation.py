"""A simulated drifting machine: sequential scheduling reverses the true order of two stacks, interleaved
scheduling with paired comparisons does not (issue 11's acceptance test, on a simulation).

The machine's speed falls by 50 % over the run (a neighbour starting work, thermal throttling); each
window takes one time step and sees `true_rps × speed(t)` with 1 % noise. Stack "b" is truly 10 % faster
than "a". Measured stack by stack (today's sequential schedule), "a" gets the fast early minutes and wins;
measured in interleaved rounds and compared within rounds, "b" wins with an interval that excludes 1.
"""

from __future__ import annotations

import random

from pgarena.paired import paired_ranks, paired_ratio
from pgarena.schedule import Slot, plan
from pgarena.stats import confidence_interval, rank_with_ties

TRUE_RPS = {"a": 1000.0, "b": 1100.0}
CELL = ("perf-test", 1, "closed", 50)
ROUNDS = 6


def run_on_drifting_machine(slots: list[Slot], seed: int = 7) -> dict[str, list[float]]:
    """Per stack, its values in round order, as a machine that slows down over time measures them."""
    noise = random.Random(seed)
    steps = len(slots)
    values: dict[str, list[float]] = {s: [0.0] * ROUNDS for s in TRUE_RPS}
    for t, slot in enumerate(slots):
        speed = 1.0 - 0.5 * t / steps
        values[slot.stack][slot.round - 1] = TRUE_RPS[slot.stack] * speed * noise.gauss(1.0, 0.01)
    return values


def independent_ranks(values: dict[str, list[float]]) -> dict[str, str]:
    """Today's ranking: each stack's own t-interval, ranks where intervals are disjoint."""
    items = []
    for stack, vs in values.items():
        low, high = confidence_interval(vs)
        items.append((stack, low, high, sorted(vs)[len(vs) // 2]))
    return dict(rank_with_ties(items))


def test_sequential_schedule_reverses_the_true_order():
    slots = plan("sequential", [("a", CELL), ("b", CELL)], ROUNDS, seed=1)
    values = run_on_drifting_machine(slots)
    ranks = independent_ranks(values)
    assert ranks["a"] == "1" and ranks["b"] == "2", ranks  # wrong, and confidently so


def test_interleaved_schedule_with_paired_ratios_keeps_the_true_order():
    for seed in range(20):  # whatever the shuffle, the answer is right
        slots = plan("interleaved", [("a", CELL), ("b", CELL)], ROUNDS, seed=seed)
        values = run_on_drifting_machine(slots, seed=seed)
        ranks = dict(paired_ranks(values))
        assert ranks == {"b": "1", "a": "2"}, (seed, values)
        ratio = paired_ratio(values["b"], values["a"])
        assert ratio is not None and ratio.low > 1.0 and 1.0 < ratio.ratio < 1.25
