"""scripts/family_widths.py: what Holm's step-down or Tukey's range would buy over the verdict's Bonferroni split
(docs/methodology.md, "Statistics", item 5)."""

from __future__ import annotations

import pytest
from scipy.stats import norm

from tests.conftest import script_module


@pytest.fixture(scope="module")
def fw():
    yield from script_module("family_widths")


def test_with_nothing_ordered_holm_is_bonferroni_and_it_only_loosens_as_pairs_are_ordered(fw):
    bonferroni = norm.isf(0.05 / (2 * 190))
    one_sided, two_sided = fw.holm_critical(20, 0)
    assert one_sided == pytest.approx(bonferroni) and two_sided == pytest.approx(bonferroni)
    previous = bonferroni
    for ordered in (50, 100, 170, 185):
        one_sided, two_sided = fw.holm_critical(20, ordered)
        assert two_sided < one_sided < previous  # the one-sided form keeps each ordered pair's other side
        previous = one_sided
    # the valid form gains under 5 % of width at 20 stacks even with all but five pairs ordered
    assert fw.holm_critical(20, 185)[0] / bonferroni > 0.95


def test_the_script_prints_each_procedure(fw, capsys):
    assert fw.main(["--stacks", "8", "--rounds", "10", "--sd", "0.1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("8 stacks, 28 pairs") and "Tukey" in out and out.count("Holm with") == 3
