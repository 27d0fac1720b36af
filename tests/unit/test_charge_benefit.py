"""The race's forecast gives the probe shifts' floor the benefit of the doubt (forecast.charge_with_benefit): a
chance high τ̂² from a few stacks must not give a pair up for good, a shift the check shows clearly keeps its floor.
The A/A check of 2026-11-30 (`pgarena calibrate`) lost two tables of identical copies at rounds 5 and 10 to it."""

from __future__ import annotations

import math

import pytest

from pgarena.analysis.forecast import charge_with_benefit, rounds_to_resolve
from pgarena.analysis.probecheck import ProbeCheck, charge_relative_se
from pgarena.analysis.sequential import FINAL_SHARE, Inference, PairInterval, TableFit, pair_alpha


def test_the_relative_error_of_the_shift_variance_follows_its_degrees_of_freedom():
    assert charge_relative_se(ProbeCheck(f=2.0, df_stacks=3, df_residual=30, p=0.1)) == pytest.approx(
        math.sqrt(2 / 3) * 2.0)
    assert charge_relative_se(ProbeCheck(f=1.5, df_stacks=21, df_residual=200, p=0.1)) == pytest.approx(
        math.sqrt(2 / 21) * 3.0)
    assert charge_relative_se(ProbeCheck(f=0.8, df_stacks=3, df_residual=30, p=0.6)) == math.inf
    assert charge_relative_se(None) == math.inf


def _inference(check: ProbeCheck, fixed: float, noise: float = 0.02, rounds: int = 10) -> Inference:
    """Four stacks' table (six pairs), the pair a / b equal by its estimate, its variance per round `noise` plus
    the probe shifts' `fixed` (held as rounds × it)."""
    fit = TableFit(y={}, effect={s: 0.0 for s in "abcd"}, variance=noise / 2, df=40, slope=-1.5, windows=40,
                   probe_check=check)
    pair = PairInterval(1.0, 0.8, 1.25, rounds, 0.95, variance=noise + rounds * fixed, df=40, fixed=fixed)
    alpha = pair_alpha(4)
    return Inference(fit=fit, level=0.95, margin=0.10, alpha=alpha * (1 - FINAL_SHARE), pairs={("a", "b"): pair},
                     final_alpha=alpha * FINAL_SHARE)


COPIES = ProbeCheck(f=1.56, df_stacks=3, df_residual=30, p=0.22)
"""Four identical copies' check after 10 rounds of perf-test at 50 VUs (aa-charge-1)."""
CLEAR = ProbeCheck(f=6.0, df_stacks=21, df_residual=300, p=1e-12)
"""A shift by stack no one doubts: 22 stacks, F 6."""


def test_a_chance_high_shift_does_not_give_a_pair_up_and_a_clear_one_does():
    fixed = 0.003  # sd 5.5 % a pair: at the final look's error the interval never fits within ±10 %
    assert rounds_to_resolve(_inference(COPIES, fixed), "a", "b", benefit=0.0) is None  # the floor kept whole
    reached = rounds_to_resolve(_inference(COPIES, fixed), "a", "b")
    assert reached is not None and reached == rounds_to_resolve(_inference(COPIES, 0.0), "a", "b")
    assert rounds_to_resolve(_inference(CLEAR, fixed), "a", "b") is None


def test_the_benefit_lowers_the_fixed_part_and_keeps_the_noise():
    found = _inference(CLEAR, 0.003).pairs[("a", "b")]
    lowered = charge_with_benefit(found, CLEAR, 1.0)
    share = 1 - charge_relative_se(CLEAR)
    assert lowered.fixed == pytest.approx(0.003 * share) and 0 < share < 1
    assert lowered.variance_at(0) == pytest.approx(found.variance_at(0))  # the noise part as measured
    assert charge_with_benefit(found, COPIES, 1.0).fixed == 0.0
    unfixed = _inference(COPIES, 0.0).pairs[("a", "b")]
    assert charge_with_benefit(unfixed, COPIES, 1.0) is unfixed
