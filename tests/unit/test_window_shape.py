"""scripts/window_shape.py: the figures it derives from oha's per-request end times (the runs need built stacks)."""

from __future__ import annotations


import pytest

from tests.conftest import script_module


@pytest.fixture(scope="module")
def ws():
    yield from script_module("window_shape")


def test_answers_are_binned_by_when_they_ended(ws):
    ends = [0.05, 0.15, 0.16, 0.31, 0.99, 1.0, 1.49]
    assert ws.bins(ends, 1.5, 0.5) == [4, 1, 2]
    assert ws.counts_between(ends, 0.5, 1.5) == 3


def test_a_slow_start_shows_below_one_and_the_steady_bins_average_one(ws):
    runs = [[5, 8, 10, 10, 10, 10], [5, 8, 10, 10, 10, 10]]
    profile = ws.relative_profile(runs, 0.25)  # bins from 0.5 s on are steady
    assert profile[:2] == [0.5, 0.8] and profile[2:] == [1.0] * 4


def test_scatter_and_memory_of_a_series(ws):
    assert ws.log_sd([2.0, 2.0, 2.0]) == 0
    assert ws.lag1([1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2]) > 0.3  # slow swings: neighbours alike
    assert ws.lag1([1, 2, 1, 2, 1, 2, 1, 2]) < -0.8  # alternation
