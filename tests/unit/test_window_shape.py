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


def test_a_shorter_window_scatters_more_only_where_the_noise_is_faster_than_it(ws):
    import math
    import random

    rng = random.Random(5)
    level = {"a": 2000, "b": 1000, "c": 500}  # answers per 100 ms bin: counting noise is small beside these
    # the machine's speed changes per visit (slow spells longer than a window): both windows see the same factor
    slow = {s: [[round(n * f) for _ in range(15)] for f in (math.exp(rng.gauss(0, 0.1)) for _ in range(40))]
            for s, n in level.items()}
    half, whole = ws.window_log_sd(slow, 0.1, 0.5, 0.5)[0], ws.window_log_sd(slow, 0.1, 0.5, 1.0)[0]
    assert half == pytest.approx(whole, rel=0.05) and 0.07 < whole < 0.13
    # independent per 100 ms bin: a window of half the bins scatters √2 times as much
    fast = {s: [[round(n * math.exp(rng.gauss(0, 0.1))) for _ in range(15)] for _ in range(40)]
            for s, n in level.items()}
    sd_half, count = ws.window_log_sd(fast, 0.1, 0.5, 0.5)
    assert sd_half / ws.window_log_sd(fast, 0.1, 0.5, 1.0)[0] == pytest.approx(math.sqrt(2), rel=0.15)
    assert count == 120


def test_the_probe_is_read_over_the_window_or_its_lead_in_too(ws):
    from types import SimpleNamespace

    asked = []

    class Probe:
        def reading(self, start_ns, end_ns, wait_s=None):
            asked.append((start_ns, end_ns))
            return SimpleNamespace(unit_ns=float(end_ns - start_ns))

    assert ws.probe_reading(Probe(), 10**9, 0.5, 1.0, "window") == 1e9
    assert ws.probe_reading(Probe(), 10**9, 0.5, 1.0, "lead-in + window") == 1.5e9
    assert asked == [(int(1.5e9), int(2.5e9)), (int(1e9), int(2.5e9))]
    assert ws.window_counts({"a": [[1, 2, 3, 0, 0]]}, 0.5, 0.5, 0.5) == {"a": [2.0]}
    assert ws.window_counts({"a": [[1, 2, 3, 0, 0]]}, 0.5, 1.5, 1.0) == {"a": [None]}
