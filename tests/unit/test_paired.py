"""Paired ratios, paired ranks and the interleaved stopping rule (pgarena.analysis.paired)."""

from __future__ import annotations

import math

import pytest

from pgarena.analysis.paired import adjacent_pairs, paired_ranks, paired_ratio, ratios_to, settled


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
    assert scattered is not None and scattered.relation == "indistinguishable"


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


def test_settled_needs_every_adjacent_pair_ordered_or_equivalent():
    clear = {"a": [200, 180, 220], "b": [100, 90, 110]}
    assert settled(clear, target_rel_half_width=0.02)
    equal = {"a": [100, 90, 110, 105], "b": [100.2, 90.1, 110.1, 105.1]}
    assert settled(equal, target_rel_half_width=0.02)
    unclear = {"a": [100, 95, 110], "b": [104, 90, 104]}
    assert not settled(unclear, target_rel_half_width=0.02)
    pairs = adjacent_pairs(clear)
    assert len(pairs) == 1 and pairs[0].ordered and pairs[0].sentence().startswith("a is 2.00× b (")


def test_ratios_to_a_reference():
    per_round = {"a": [200, 180, 220], "b": [100, 90, 110]}
    out = ratios_to(per_round, "a")
    assert out["a"] is None and out["b"] is not None and out["b"].ratio == pytest.approx(0.5)


def test_a_cell_of_one_stack_is_settled_by_its_own_interval():
    from pgarena.analysis.paired import settled

    assert settled({"a": [100.0, 100.5, 99.5]}, target_rel_half_width=0.02)
    assert not settled({"a": [100.0, 130.0, 80.0]}, target_rel_half_width=0.02)  # noisy: more rounds
    assert not settled({"a": [100.0]}, target_rel_half_width=0.02)
