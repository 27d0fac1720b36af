"""Schedules of windows (pgarena.load.schedule)."""

from __future__ import annotations

from collections import Counter

import pytest

from pgarena.load.schedule import interleaved, plan, round_order, sequential

PAIRS = [(s, c) for s in ("a", "b", "c") for c in ("perf-test@50", "users@50")]


def test_sequential_keeps_each_pair_back_to_back():
    slots = sequential(PAIRS, 3)
    assert [(s.stack, s.cell) for s in slots[:3]] == [("a", "perf-test@50")] * 3
    assert [s.round for s in slots[:3]] == [1, 2, 3]
    assert len(slots) == 18


def test_every_interleaved_round_visits_every_pair_once():
    slots = interleaved(PAIRS, 4, seed=42)
    assert len(slots) == 24
    for r in range(1, 5):
        in_round = [(s.stack, s.cell) for s in slots if s.round == r]
        assert Counter(in_round) == Counter(PAIRS)
    orders = {tuple((s.stack, s.cell) for s in slots if s.round == r) for r in range(1, 5)}
    assert len(orders) > 1  # a fresh order each round


def test_round_order_is_reproducible_from_the_seed():
    assert round_order(PAIRS, 3, 99) == round_order(PAIRS, 3, 99)
    assert [(s.stack, s.cell) for s in round_order(PAIRS, 3, 99)] != [
        (s.stack, s.cell) for s in round_order(PAIRS, 3, 100)] or len(PAIRS) < 3


def test_unknown_schedule_is_an_error():
    with pytest.raises(ValueError, match="unknown schedule"):
        plan("random", PAIRS, 2, seed=1)  # type: ignore[arg-type]


def test_a_round_takes_each_stacks_cells_one_after_another():
    pairs = [(s, c) for s in "abcdef" for c in range(5)]
    for r in range(1, 30):
        stacks = [slot.stack for slot in round_order(pairs, r, seed=7)]
        runs = [s for i, s in enumerate(stacks) if i == 0 or stacks[i - 1] != s]
        assert sorted(runs) == list("abcdef"), f"round {r}: a stack's cells split: {stacks}"


def test_a_round_shuffles_the_stacks_and_each_stacks_cells():
    pairs = [(s, c) for s in "abcd" for c in range(4)]
    firsts = Counter(round_order(pairs, r, seed=3)[0].stack for r in range(1, 201))
    assert set(firsts) == set("abcd") and min(firsts.values()) > 25  # each stack first about 50 times in 200
    orders_of_a = Counter(tuple(s.cell for s in round_order(pairs, r, seed=3) if s.stack == "a") for r in range(1, 201))
    assert len(orders_of_a) > 12  # of the 24 orders of a's four cells
    # each cell's stacks come in a random order too: what the paired comparison needs
    b_before_a = sum(next(s.stack for s in round_order(pairs, r, seed=3) if s.cell == 0 and s.stack in "ab") == "b"
                     for r in range(1, 201))
    assert 70 < b_before_a < 130
