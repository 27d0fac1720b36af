"""scripts/window_noise.py: the figures it derives from the two arms' windows (the runs need a built stack)."""

from __future__ import annotations

import math
import random

import pytest

from tests.conftest import script_module


@pytest.fixture(scope="module")
def wn():
    yield from script_module("window_noise")


def _arms(extra_sd: float, seed: int = 3, rounds: int = 400):
    """Both arms slowed by the same machine speed (the probe reads it exactly), pgarena's with noise of its own."""
    rng = random.Random(seed)
    speed = [math.exp(rng.gauss(0, 0.15)) for _ in range(rounds)]
    y = {"pgarena": [1000 / s * math.exp(rng.gauss(0, 0.05 + extra_sd)) for s in speed],
         "bare": [1000 / s * math.exp(rng.gauss(0, 0.05)) for s in speed]}
    z = {"pgarena": [200 * s for s in speed], "bare": [200 * s for s in speed]}
    return y, z


def test_the_probe_takes_out_the_shared_speed_and_leaves_each_arms_own_noise(wn):
    y, z = _arms(0.0)
    s = wn.summary(y, z)
    assert s["beta"] == pytest.approx(-1, abs=0.05)
    assert s["log_sd"]["bare"] > 0.13  # the machine's speed, before the probe
    assert s["log_sd_after_probe"]["bare"] == pytest.approx(0.05, rel=0.15)
    assert s["log_sd_after_probe"]["pgarena"] == pytest.approx(0.05, rel=0.15)
    assert abs(s["log_ratio_mean"]) < 0.02 and s["log_ratio_sd"] == pytest.approx(0.05 * math.sqrt(2), rel=0.15)


def test_an_arm_with_noise_of_its_own_scatters_more_after_the_probe(wn):
    s = wn.summary(*_arms(0.05))
    assert s["log_sd_after_probe"]["pgarena"] == pytest.approx(0.10, rel=0.15)
    assert s["log_sd_after_probe"]["bare"] == pytest.approx(0.05, rel=0.15)


def test_a_mistake_is_one_line_and_exit_code_2(wn, capsys):
    assert wn.main(["--rounds", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("window_noise: --rounds")
