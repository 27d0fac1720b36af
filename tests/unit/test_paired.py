"""Paired ratios, paired ranks and the interleaved stopping rule (pgarena.analysis.paired)."""

from __future__ import annotations

import math

import pytest

from pgarena.analysis.paired import paired_ranks, paired_ratio


def test_ratio_of_constant_ratios_is_exact_and_zero_width():
    r = paired_ratio([150, 300, 600], [100, 200, 400])
    assert r is not None and r.rounds == 3
    assert r.ratio == pytest.approx(1.5) and r.low == pytest.approx(1.5) and r.high == pytest.approx(1.5)
    assert r.relation == "above"


def test_ratio_and_its_inverse_agree():
    a, b = [110, 95, 130, 102], [100, 90, 118, 99]
    ab, ba = paired_ratio(a, b), paired_ratio(b, a)
    assert ab is not None and ba is not None
    assert ab.ratio == pytest.approx(1 / ba.ratio)
    assert ab.low == pytest.approx(1 / ba.high) and ab.high == pytest.approx(1 / ba.low)
    inverse = ab.inverse()
    assert inverse.low == pytest.approx(ba.low) and inverse.high == pytest.approx(ba.high)


def test_pairing_removes_the_shared_drift():
    # Both stacks slow down together by 40 % over the rounds; A is always 10 % faster within a round.
    speed = [1.0, 0.9, 0.8, 0.7, 0.6]
    a = [1100 * s for s in speed]
    b = [1000 * s for s in speed]
    r = paired_ratio(a, b)
    assert r is not None and r.relation == "above" and r.ratio == pytest.approx(1.1)


def test_interval_by_hand():
    a, b = [2.0, 3.0, 2.0], [1.0, 1.0, 1.0]
    logs = [math.log(2), math.log(3), math.log(2)]
    mean = sum(logs) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 2)
    half = 4.302652729911275 * sd / math.sqrt(3)  # t*(0.95, df 2)
    r = paired_ratio(a, b)
    assert r is not None
    assert r.low == pytest.approx(math.exp(mean - half), rel=1e-9)
    assert r.high == pytest.approx(math.exp(mean + half), rel=1e-9)
    assert r.relation == "above"  # 2×, 3×, 2×: clearly above 1 even with three rounds
    scattered = paired_ratio([1.2, 0.8, 1.1], [1.0, 1.0, 1.0])
    assert scattered is not None and scattered.relation == "not resolved"


def test_missing_rounds_are_left_out_and_too_few_give_none():
    assert paired_ratio([100, None, 120], [90, 95, None]) is None  # one paired round only
    r = paired_ratio([100, None, 120, 110], [90, 95, 100, 100])
    assert r is not None and r.rounds == 3
    with pytest.raises(ValueError):
        paired_ratio([1, 2], [1, 2, 3])


def test_paired_ranks_order_where_intervals_exclude_one_and_tie_where_not():
    per_round = {
        "slow": [500, 450, 520, 480],
        "fast": [1000, 900, 1040, 960],
        "fast-twin": [1001, 905, 1030, 965],
    }
    ranks = dict(paired_ranks(per_round))
    assert ranks["slow"] == "3"
    assert ranks["fast"] == ranks["fast-twin"] == "1–2"
