"""Confidence intervals over repetitions, the stopping rule and rank ties (pgarena.stats.intervals, issue 5)."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from pgarena.stats.intervals import (
    confidence_interval,
    interval_too_wide,
    rank_with_ties,
    relative_half_width,
    should_stop,
    t_critical,
)

# Two-sided critical values from the printed t table (NIST/SEMATECH e-Handbook §1.3.6.7.2), 3 decimals.
T_TABLE = [
    (0.90, 1, 6.314), (0.90, 5, 2.015), (0.90, 10, 1.812), (0.90, 30, 1.697),
    (0.95, 1, 12.706), (0.95, 2, 4.303), (0.95, 3, 3.182), (0.95, 4, 2.776), (0.95, 9, 2.262),
    (0.95, 20, 2.086), (0.95, 30, 2.042), (0.95, 100, 1.984),
    (0.99, 1, 63.657), (0.99, 2, 9.925), (0.99, 7, 3.499), (0.99, 30, 2.750), (0.99, 100, 2.626),
]


@pytest.mark.parametrize(("level", "df", "expected"), T_TABLE)
def test_t_critical_matches_the_printed_table(level: float, df: int, expected: float) -> None:
    assert t_critical(level, df) == pytest.approx(expected, abs=0.0006)


def test_t_critical_tends_to_the_normal_quantile_and_falls_as_the_degrees_of_freedom_grow() -> None:
    z = statistics.NormalDist().inv_cdf(0.975)
    assert t_critical(0.95, 10**6) == pytest.approx(z, abs=1e-5)
    assert t_critical(0.95, 1000) == pytest.approx(t_critical(0.95, 1001), abs=1e-5)
    assert t_critical(0.95, 1000) > t_critical(0.95, 1001) > z


@pytest.mark.parametrize(("level", "df"), [(0.0, 3), (1.0, 3), (0.95, 0), (0.95, 2.5)])
def test_t_critical_rejects_bad_arguments(level: float, df: float) -> None:
    with pytest.raises(ValueError):
        t_critical(level, df)  # type: ignore[arg-type]


def test_confidence_interval_of_a_worked_example() -> None:
    # mean 3, s = sqrt(2.5), n = 5, t*(0.95, 4) = 2.7764 → half-width 1.9632
    low, high = confidence_interval([1, 2, 3, 4, 5])
    assert (low + high) / 2 == pytest.approx(3)
    assert (high - low) / 2 == pytest.approx(2.7764 * math.sqrt(2.5) / math.sqrt(5), rel=1e-4)
    assert relative_half_width([1, 2, 3, 4, 5]) == pytest.approx(1.9632 / 3, rel=1e-4)
    # a higher level gives a wider interval
    low99, high99 = confidence_interval([1, 2, 3, 4, 5], 0.99)
    assert low99 < low and high99 > high


def test_confidence_interval_edge_cases() -> None:
    assert confidence_interval([7.0, 7.0, 7.0]) == (7.0, 7.0)
    assert relative_half_width([0.0, 0.0, 0.0]) == 0.0
    assert relative_half_width([-1.0, 1.0]) == math.inf
    with pytest.raises(ValueError):
        confidence_interval([1.0])
    with pytest.raises(ValueError):
        confidence_interval([])


@pytest.mark.parametrize("n", [3, 5, 10])
def test_interval_contains_the_true_mean_in_at_least_90_percent_of_200_seeded_simulations(n: int) -> None:
    true_mean, sigma = 10_000.0, 1_000.0  # RPS with a 10 % standard deviation between repetitions
    hits = 0
    for seed in range(200):
        rng = random.Random(seed)
        low, high = confidence_interval([rng.gauss(true_mean, sigma) for _ in range(n)], 0.95)
        hits += low <= true_mean <= high
    assert hits >= 180  # nominal 95 % → 190 expected
    assert hits <= 199  # and not so wide that it always contains it


def test_a_normal_quantile_would_undercover_with_three_repetitions() -> None:
    """Why the t distribution: with n = 3, mean ± 1.96·s/√n misses far more than 5 % of the time."""
    z = statistics.NormalDist().inv_cdf(0.975)
    t_hits = z_hits = 0
    for seed in range(200):
        rng = random.Random(seed)
        values = [rng.gauss(100.0, 10.0) for _ in range(3)]
        mean, se = statistics.fmean(values), statistics.stdev(values) / math.sqrt(3)
        low, high = confidence_interval(values)
        t_hits += low <= 100.0 <= high
        z_hits += abs(mean - 100.0) <= z * se
    assert t_hits >= 180
    assert z_hits < 180


def _repetitions_until_stop(seed: int, rel_sigma: float, max_reps: int = 10) -> int:
    rng = random.Random(seed)
    values: list[float] = []
    while len(values) < max_reps:
        values.append(rng.gauss(5_000.0, 5_000.0 * rel_sigma))
        if should_stop(values):
            break
    return len(values)


def test_tight_data_stops_at_the_minimum_of_three_repetitions() -> None:
    assert not should_stop([1000.0, 1001.0])  # tight, but below the minimum
    assert should_stop([1000.0, 1001.0, 999.0])  # ±0.25 % at 95 %
    for seed in range(20):
        assert _repetitions_until_stop(seed, rel_sigma=0.002) == 3


def test_wide_data_does_not_stop_by_ten_repetitions() -> None:
    for seed in range(20):
        assert _repetitions_until_stop(seed, rel_sigma=0.20) == 10
    assert not should_stop([900.0, 1100.0, 1000.0, 950.0, 1050.0, 980.0, 1020.0, 940.0, 1060.0, 1000.0])


def test_the_noisier_the_data_the_later_the_stop() -> None:
    means = [statistics.fmean(_repetitions_until_stop(seed, s, max_reps=40) for seed in range(50))
             for s in (0.002, 0.01, 0.02, 0.04)]
    assert means == sorted(means)
    assert means[0] == 3 and means[-1] > 10


def test_stopping_rule_parameters() -> None:
    values = [1000.0, 1030.0, 970.0]  # ±7.5 % at 95 %
    assert not should_stop(values)
    assert should_stop(values, target_rel_half_width=0.08)
    assert not should_stop(values, target_rel_half_width=0.08, min_repetitions=4)
    assert not should_stop(values, target_rel_half_width=0.08, level=0.99)
    assert should_stop([5.0, 5.0], min_repetitions=1)  # at least 2 values are always needed
    assert not should_stop([5.0], min_repetitions=1)
    with pytest.raises(ValueError):
        should_stop(values, target_rel_half_width=0)


def test_interval_too_wide_is_the_noisy_flag() -> None:
    assert interval_too_wide([1000.0, 1030.0, 970.0])
    assert not interval_too_wide([1000.0, 1001.0, 999.0])
    assert interval_too_wide([1000.0])
    assert not interval_too_wide([1000.0, 1030.0, 970.0], target_rel_half_width=0.08)


def test_rank_disjoint_intervals_give_a_plain_order() -> None:
    items = [("b", 80, 90, 85), ("a", 95, 105, 100), ("c", 10, 20, 15)]
    assert rank_with_ties(items) == [("a", "1"), ("b", "2"), ("c", "3")]


def test_rank_overlapping_intervals_tie() -> None:
    items = [("a", 95, 105, 100), ("b", 90, 99, 96), ("c", 50, 60, 55)]
    assert rank_with_ties(items) == [("a", "1–2"), ("b", "1–2"), ("c", "3")]
    everything = [("x", 0, 10, 5), ("y", 1, 11, 6), ("z", 2, 12, 7)]
    assert rank_with_ties(everything) == [("z", "1–3"), ("y", "1–3"), ("x", "1–3")]


def test_rank_chain_of_overlaps() -> None:
    # a overlaps b, b overlaps c, a and c are disjoint: a is 1 or 2, c is 2 or 3, b anywhere
    items = [("a", 100, 110, 105), ("b", 95, 102, 98), ("c", 90, 97, 93)]
    assert rank_with_ties(items) == [("a", "1–2"), ("b", "1–3"), ("c", "2–3")]


def test_rank_range_counts_surely_above_and_below_not_neighbours() -> None:
    # c overlaps a but lies wholly below b: c cannot be first although its interval reaches a's
    items = [("a", 90, 110, 100), ("b", 94, 96, 95), ("c", 85, 93, 92)]
    assert rank_with_ties(items) == [("a", "1–3"), ("b", "1–2"), ("c", "2–3")]


def test_rank_edge_cases() -> None:
    assert rank_with_ties([]) == []
    assert rank_with_ties([("only", 1.0, 2.0, 1.5)]) == [("only", "1")]
    # touching ends count as overlap
    assert rank_with_ties([("a", 10, 20, 15), ("b", 0, 10, 5)]) == [("a", "1–2"), ("b", "1–2")]
    # equal medians keep the input order
    assert [k for k, _ in rank_with_ties([("p", 0, 2, 1), ("q", 0, 2, 1)])] == ["p", "q"]
    # zero-width intervals (identical repetitions) rank strictly unless equal
    assert rank_with_ties([("a", 5, 5, 5), ("b", 4, 4, 4), ("c", 4, 4, 4)]) == [("a", "1"), ("b", "2–3"),
                                                                                 ("c", "2–3")]
    with pytest.raises(ValueError):
        rank_with_ties([("bad", 2.0, 1.0, 1.5)])


def test_rank_label_always_contains_the_median_order_position() -> None:
    rng = random.Random(5)
    for _ in range(200):
        items = []
        for key in range(6):
            centre = rng.uniform(0, 100)
            half = rng.uniform(0, 20)
            items.append((key, centre - half, centre + half, centre))
        for position, (_, label) in enumerate(rank_with_ties(items), start=1):
            best, _, worst = label.partition("–")
            assert int(best) <= position <= int(worst or best)


def test_unbounded_ratio_bounds_turn_around_and_print():
    import math

    from pgarena.stats.intervals import bounds_text, inverse_bounds

    assert inverse_bounds(0.5, 4.0) == (0.25, 2.0)
    assert inverse_bounds(0.0, math.inf) == (0.0, math.inf)
    assert inverse_bounds(0.0, 2.0) == (0.5, math.inf) and inverse_bounds(0.5, math.inf) == (0.0, 2.0)
    assert bounds_text(0.84, 1.31) == "0.84–1.31"
    assert bounds_text(0.0, math.inf) == "0.00–∞"
