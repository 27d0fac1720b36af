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
