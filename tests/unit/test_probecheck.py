"""The speed correction's condition (analysis/probecheck.py): a probe whose readings depend on the stack beside it
is not used, since its correction would carry that dependence into the stacks' ratios."""

from __future__ import annotations

import math
import random

import pytest

from pgarena.analysis.noise import budget_line, noise_budget
from pgarena.analysis.probecheck import PROBE_DEPENDENCE_LEVEL, round_only_rss, stack_dependence
from pgarena.analysis.sequential import additive_fit, fit_table, judge


def _table(*, stacks: int, rounds: int, offsets: list[float], ratio: float = 1.0, seed: int = 1,
           speed_sd: float = 0.15, window_sd: float = 0.03, probe_sd: float = 0.03):
    """2xx/s and probe unit ns per stack and round: every window's speed u moves both (β = −1 on ln unit); the
    probe reads u plus the stack's own offset (`offsets`, log units) plus its own noise. Stack s0 is `ratio` × the
    others."""
    rng = random.Random(seed)
    rps: dict[str, list[float | None]] = {}
    unit: dict[str, list[float | None]] = {}
    for s in range(stacks):
        rps[f"s{s}"], unit[f"s{s}"] = [], []
        for _ in range(rounds):
            u = rng.gauss(0, speed_sd)
            rps[f"s{s}"].append(1000 * (ratio if s == 0 else 1.0) * math.exp(-u + rng.gauss(0, window_sd)))
            unit[f"s{s}"].append(5e5 * math.exp(u + offsets[s] + rng.gauss(0, probe_sd)))
    return rps, unit


def test_the_f_test_is_the_extra_sum_of_squares_of_the_stack_effects():
    z = {"a": [0.0, 1.0, 2.0], "b": [1.0, 2.0, 3.0]}  # b = a + 1 exactly: all of it stack effect
    fit = additive_fit(z)
    assert round_only_rss(z) == pytest.approx(3 * 0.5)  # each round: two values 1 apart
    assert fit.rss == pytest.approx(0.0, abs=1e-12)
    assert stack_dependence(z, fit.rss, fit.df, fit.stack_effects) is None  # nothing left to test against
    noisy = {"a": [0.0, 1.1, 2.0, 2.9], "b": [1.0, 2.0, 3.1, 4.0]}
    fit = additive_fit(noisy)
    check = stack_dependence(noisy, fit.rss, fit.df, fit.stack_effects)
    assert check is not None and check.df_stacks == 1 and check.df_residual == 3
    assert check.f == pytest.approx((round_only_rss(noisy) - fit.rss) / (fit.rss / 3))
    assert check.dependent and check.p < 1e-3


def test_a_probe_that_reads_the_stack_cannot_order_identical_stacks():
    """Identical stacks; the probe reads 35 % slower beside s0 (its caches, its interrupts). Corrected with β ≈ −1
    that would lift s0 by ~35 %, an order the stacks do not have; the check withholds the correction. (A smaller
    dependence, within the probe's own scatter over the rounds, passes the check: module docstring.)"""
    rps, unit = _table(stacks=4, rounds=30, offsets=[0.3, 0.0, 0.0, 0.0])
    inference = judge(rps, unit)
    check = inference.fit.probe_check
    assert check is not None and check.dependent
    assert inference.fit.slope == 0.0
    assert not inference.claims_above(), "an order among identical stacks"
    fair = judge(rps, {s: [v * math.exp(-0.3) if s == "s0" else v for v in vals]  # type: ignore[operator]
                       for s, vals in unit.items()})
    assert fair.fit.probe_check is not None and not fair.fit.probe_check.dependent
    assert fair.fit.slope < -0.5  # the same windows with the stack's offset taken out of the probe: corrected
    assert not fair.claims_above()


def test_an_independent_probe_corrects_and_says_so_in_the_noise_budget():
    rps, unit = _table(stacks=4, rounds=30, offsets=[0.0] * 4, ratio=1.08)
    inference = judge(rps, unit)
    assert inference.fit.probe_check is not None and not inference.fit.probe_check.dependent
    assert inference.fit.slope == pytest.approx(-1.0, abs=0.15)
    assert inference.surely_above("s0", "s1")  # 8 % apart, resolved thanks to the correction
    line = budget_line(noise_budget(rps, unit))
    assert "the probe beside each stack: F" in line and "does not use it" not in line
    budget = noise_budget(*_table(stacks=4, rounds=30, offsets=[0.2, 0.0, 0.0, -0.2]))
    assert budget.probe_check is not None
    (low, low_effect), (high, high_effect) = budget.probe_check.apart  # where the dependence comes from
    assert (low, high) == ("s3", "s0")
    assert low_effect == pytest.approx(-0.2, abs=0.05) and high_effect == pytest.approx(0.2, abs=0.05)
    assert budget.probe_check.where() == (f"fastest beside s3 ({math.expm1(low_effect):+.1%}), "
                                          f"slowest beside s0 ({math.expm1(high_effect):+.1%})")
    assert (f"it depends on the stack ({budget.probe_check.where()}), so the verdict does not use it"
            in budget_line(budget))


def test_an_independent_probe_is_rejected_at_about_the_stated_level():
    """Under independence the check withholds the correction in about PROBE_DEPENDENCE_LEVEL of tables (it costs
    those tables their correction, never a wrong claim)."""
    runs = 400
    rejected = sum(bool((c := fit_table(*_table(stacks=6, rounds=12, offsets=[0.0] * 6, seed=seed)).probe_check)
                        and c.dependent) for seed in range(runs))
    assert rejected / runs <= 3 * PROBE_DEPENDENCE_LEVEL


def test_two_rounds_that_swung_eightfold_give_an_unbounded_interval_not_an_overflow():
    """A CI run (2026-11-27): three copies, the machine's speed swinging 37,000 → 4,700 2xx/s between two rounds;
    the pairs' own variance at 1 degree of freedom made a half-width whose exp overflowed and the report crashed."""
    rps = {"a": [37_550.0, 4_665.0], "b": [36_946.0, 12_379.0], "c": [28_306.0, 18_318.0]}
    inference = judge(rps, level=0.999)
    for found in inference.pairs.values():
        assert found.low >= 0.0 and found.high > found.low
    assert not inference.claims_above()
    assert any(found.high == math.inf for found in inference.pairs.values())


@pytest.mark.parametrize("method", ["charge", "shrink", "james-stein", "morris"])
def test_each_way_of_guessing_the_shifts_leaves_what_its_formula_says(monkeypatch, method):
    """Eight stacks, one window each in four rounds (v = σ̂²/4), the probe's effects spread evenly about their mean."""
    from pgarena.analysis import probecheck

    monkeypatch.setattr(probecheck, "SHIFT_ESTIMATE", method)
    effects = {f"s{i}": 0.01 * (i - 3.5) for i in range(8)}
    z = {s: [0.0, 0.0, None, 0.0, 0.0] for s in effects}
    tau2, sigma2 = 4e-4, 8e-4
    v = sigma2 / 4
    out = probecheck.shift_estimates(tau2, sigma2, z, effects)
    b = 5 / 7 * v / (v + tau2)  # Morris's share shrunk towards the mean
    share = {"charge": 0.0, "shrink": tau2 / (tau2 + v), "james-stein": 1 - 5 / (7 * (tau2 + v) / v),
             "morris": 1 - b}[method]
    for s, effect in effects.items():
        guess, left = out[s]
        assert guess == pytest.approx(share * effect)
        expected = {"charge": tau2, "morris": v * (1 - 7 / 8 * b) + 2 / 5 * (b * effect) ** 2}.get(method, share * v)
        assert left == pytest.approx(expected)
    # no shift seen (τ̂ = 0): "charge" and "shrink" guess and leave nothing; James–Stein, unsure of τ̂, still takes
    # 2/(k − 1) of each effect for the stack's own
    if method != "morris":
        none = probecheck.shift_estimates(0.0, sigma2, z, effects)
        share = 2 / 7 if method == "james-stein" else 0.0
        assert all(none[s] == (pytest.approx(share * e), pytest.approx(share * v)) for s, e in effects.items())


def test_the_verdicts_charge_is_two_beta_squared_tau_squared_for_every_pair(monkeypatch):
    """With the default guess (none) every pair's per-round variance grows by n·2β²τ̂² over the same table judged
    as if the probe's shifts had no variance."""
    from pgarena.analysis import probecheck, sequential

    assert probecheck.SHIFT_ESTIMATE == "charge"
    per_round, reference = _table(stacks=6, rounds=12, offsets=[0.03, 0.0, -0.02, 0.01, -0.03, 0.02], seed=5)
    charged = judge(per_round, reference)
    fit = charged.fit
    assert fit.slope < 0 and fit.probe_shift > 0
    assert list(fit.bias_variance.values()) == [pytest.approx(fit.slope ** 2 * fit.probe_shift ** 2)] * 6
    monkeypatch.setattr(sequential, "shift_variance", lambda *_: 0.0)
    plain = judge(per_round, reference)
    assert not plain.fit.bias_variance
    for key, pair in charged.pairs.items():
        extra = pair.variance - plain.pairs[key].variance
        assert extra == pytest.approx(pair.rounds * 2 * fit.slope ** 2 * fit.probe_shift ** 2)
        assert pair.fixed == pytest.approx(2 * fit.slope ** 2 * fit.probe_shift ** 2)  # for the forecasts
        assert plain.pairs[key].fixed == 0.0
        assert pair.high / pair.low > plain.pairs[key].high / plain.pairs[key].low
