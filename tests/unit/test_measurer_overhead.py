"""scripts/measurer_overhead.py: the figures it derives (the runs themselves need a built stack)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import script_module


@pytest.fixture(scope="module")
def mo():
    yield from script_module("measurer_overhead")


def test_ratio_summary_is_per_round_with_median_and_t_interval(mo):
    summary = mo.ratio_summary([95.0, 110.0, 100.0, 0.0], [100.0, 100.0, 100.0, 0.0])
    assert summary["per_round"] == [0.95, 1.1, 1.0], "a round whose bare run measured nothing is left out"
    assert (summary["median"], summary["min"], summary["max"]) == (1.0, 0.95, 1.1)
    # mean 1.0167, s = 0.0764, t*(0.95, 2) = 4.303: ± 0.1897
    assert summary["ci95_low"] == pytest.approx(0.827, abs=1e-3)
    assert summary["ci95_high"] == pytest.approx(1.206, abs=1e-3)


def test_context_switches_count_every_thread_not_only_the_main_one(mo):
    own = int(next(line.split()[1] for line in Path("/proc/self/status").read_text().splitlines()
                   if line.startswith("voluntary_ctxt_switches")))
    assert mo.ctx_switches(os.getpid()) >= own


def test_bad_arguments_are_a_usage_error(mo):
    with pytest.raises(mo.UsageError, match="--rounds must be at least 2"):
        mo.parse_args(["--rounds", "1"])
    assert mo.main(["--window-s", "0.5"]) == 2
