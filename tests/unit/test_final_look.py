"""The verdict's final look: the error split between the race's confidence sequences and one fixed-sample interval
for the pairs measured in every round until the time or the cap ended them (analysis/sequential.py)."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from pgarena.analysis.forecast import rounds_to_resolve
from pgarena.analysis.sequential import (
    FINAL_SHARE,
    detectable_ratio,
    fixed_half_width,
    half_width,
    judge,
    pair_alpha,
)
from pgarena.load.scheduler import RoundsPolicy, run_rounds
from pgarena.stats.intervals import t_critical
from tests.unit.test_drift_simulation import DriftingMachine

CELL = ("perf-test", 1, "closed", 50)


def table(seed: int = 1, rounds: int = 12, stacks: int = 4, sd: float = 0.05, gap: float = 0.0) -> dict:
    rng = random.Random(seed)
    factors = [rng.gauss(0, 0.1) for _ in range(rounds)]
    return {f"s{i}": [1000 * math.exp(-i * gap + f + rng.gauss(0, sd)) for f in factors] for i in range(stacks)}


def test_the_fixed_sample_half_width_is_students():
    assert fixed_half_width(10, 0.04, 0.01, 12) == pytest.approx(t_critical(0.99, 12) * math.sqrt(0.004))
    assert fixed_half_width(10, 0.04, 0.05) == pytest.approx(1.959964 * math.sqrt(0.004), rel=1e-5)
    assert fixed_half_width(0, 0.04, 0.05) == math.inf
    # what the look costs: the confidence sequence is far wider than the fixed interval at the same error
    assert half_width(10, 0.04, 0.05 / 190, 1000) > 1.2 * fixed_half_width(10, 0.04, 0.05 / 190, 1000)


def test_without_a_horizon_the_confidence_sequence_keeps_the_whole_error():
    inference = judge(table())
    assert inference.alpha == pytest.approx(pair_alpha(4)) and inference.final_alpha is None
    assert not any(p.final for p in inference.pairs.values())


def test_the_race_spends_a_fifth_and_the_final_look_four_fifths():
    whole, race = judge(table()), judge(table(), horizon=())
    assert race.alpha == pytest.approx((1 - FINAL_SHARE) * pair_alpha(4))
    assert race.final_alpha == pytest.approx(FINAL_SHARE * pair_alpha(4))
    assert race.alpha + race.final_alpha == pytest.approx(whole.alpha)
    for key, found in race.pairs.items():  # the race's looks are stricter than the whole error's
        assert not found.final and found.low < whole.pairs[key].low and found.high > whole.pairs[key].high


def test_only_pairs_of_two_stacks_at_the_horizon_get_the_final_look():
    race = judge(table(), horizon=())
    final = judge(table(), horizon={"s0", "s1", "s2"})
    for (a, b), found in final.pairs.items():
        assert found.ratio == pytest.approx(race.pairs[(a, b)].ratio), "the same centre"
        if {a, b} <= {"s0", "s1", "s2"}:
            assert found.final
            h = math.log(found.high / found.ratio)
            assert h == pytest.approx(fixed_half_width(found.rounds, found.variance, final.final_alpha, found.df))
            assert found.low > race.pairs[(a, b)].low
        else:
            assert not found.final and found.low == race.pairs[(a, b)].low
    assert found.inverse().final == found.final


def test_a_pair_the_final_look_could_resolve_stays_in_reach_sooner():
    race = judge(table(gap=0.04, sd=0.08))
    split = judge(table(gap=0.04, sd=0.08), horizon=())
    assert rounds_to_resolve(split, "s0", "s1") < rounds_to_resolve(race, "s0", "s1")


def test_detectable_ratio_is_the_final_looks_unless_asked_for_the_races():
    final, look = detectable_ratio(0.1, 20, 190), detectable_ratio(0.1, 20, 190, final=False)
    assert 1 < final < look
    z = statistics.NormalDist().inv_cdf(1 - FINAL_SHARE * 0.05 / 190 / 2)
    assert math.log(final) == pytest.approx(z * math.sqrt(2 * 0.01 / 20))


def test_the_scheduler_names_the_stacks_the_time_stopped_in_every_round():
    # two equal stacks and a far one: the far one is ordered early and leaves; the equal pair runs out of time
    machine = DriftingMachine({"a": 1000.0, "b": 1000.0, "far": 3000.0}, drift_per_s=0.0, seed=1)
    outcome = run_rounds([(s, CELL) for s in ("a", "b", "far")], seed=1, measure=machine.measure, clock=machine.clock,
                         policy=RoundsPolicy(min_rounds=3, max_rounds=500, margin=0.001, budget_s=40, forecast=False))
    assert outcome.cell_stop[CELL] == "budget" and outcome.values[CELL]["far"][-1] is None, "far left the race"
    assert outcome.horizon == {CELL: ["a", "b"]}
    # a table that stopped on what it showed gets no final look
    settled = DriftingMachine({"a": 1000.0, "b": 2000.0}, drift_per_s=0.0, seed=1)
    done = run_rounds([(s, CELL) for s in ("a", "b")], seed=1, measure=settled.measure, clock=settled.clock,
                      policy=RoundsPolicy(min_rounds=3, max_rounds=500, budget_s=400))
    assert done.cell_stop[CELL] == "settled" and done.horizon == {}
    # the cap of rounds is a horizon too
    capped = DriftingMachine({"a": 1000.0, "b": 1000.0}, drift_per_s=0.0, seed=1)
    cap = run_rounds([(s, CELL) for s in ("a", "b")], seed=1, measure=capped.measure, clock=capped.clock,
                     policy=RoundsPolicy(min_rounds=4, max_rounds=4, margin=0.001, forecast=False))
    assert cap.stop_reason == "max-rounds" and cap.horizon == {CELL: ["a", "b"]}


def test_the_verdict_reads_the_final_look_from_the_cells_and_says_so(tmp_path, monkeypatch):
    from pgarena.analysis.verdicts import horizon_of, table_verdict
    from pgarena.config.profiles import build_config
    from tests.unit.test_summary_and_ranking import rounds

    monkeypatch.setattr("pgarena.config.profiles.default_cpu_sets", lambda: ([0], [1]))
    config = build_config(profile="full", project_dir=tmp_path)
    figures = table(rounds=8, stacks=3, sd=0.04, gap=0.05)
    cells = [rounds(s, v, config) for s, v in figures.items()]
    assert horizon_of(cells) is None, "results from before the final look was recorded"
    before = table_verdict(cells)
    assert before.inference.final_alpha is None and "final" not in before.family_sentence()
    for c in cells:
        c.summary.final_look = c.stack != "s2"
    assert horizon_of(cells) == {"s0", "s1"}
    after = table_verdict(cells)
    assert after.inference.interval("s0", "s1").final and not after.inference.interval("s0", "s2").final
    assert after.final_pairs() == 1
    sentence = after.family_sentence()
    assert "one final fixed-sample interval" in sentence and "(1 of its pairs here)" in sentence and "95 %" in sentence
    for c in cells:  # every stack left the race at some round: the split stands, no pair has the final look
        c.summary.final_look = False
    raced = table_verdict(cells)
    assert raced.inference.final_alpha is not None and "(none of its pairs here)" in raced.family_sentence()


def test_an_interval_wider_than_a_float_turns_around():
    """A CI run, 2026-11-27: three copies, two rounds whose windows differed by 30 %, read at 1 degree of freedom at
    the race's share of 0.1 % over three pairs: the half-width's exp underflowed to a lower bound of 0, and turning
    the pair around divided by it."""
    from pgarena.analysis.paired import RatioInterval

    inference = judge({"a": [1939.0, 2876.0], "b": [3287.0, 3240.0], "c": [2455.0, 4276.0]}, level=0.999, horizon=())
    for x in "abc":
        for y in "abc":
            if x != y:
                found = inference.interval(x, y)
                assert found is not None and found.low >= 0 and found.status == "not resolved"
    assert any(p.low == 0 for p in inference.pairs.values()), "the case this guards"
    assert inference.pairs[("a", "b")].inverse().high == math.inf
    assert RatioInterval(1.2, 0.0, 3.0, 2, 0.95).inverse().high == math.inf
    from pgarena.analysis.verdicts import Ratio

    assert Ratio(0.5, inference.pairs[("a", "b")]).text().endswith("–∞)")
