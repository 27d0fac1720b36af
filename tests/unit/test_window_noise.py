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


def test_a_third_arm_is_compared_with_bare_and_what_came_before_each_window_is_read_apart(wn):
    rng = random.Random(5)
    rounds = 300
    order = [rng.sample(["pgarena", "bare", "runner"], 3) for _ in range(rounds)]
    y: dict[str, list[float]] = {"pgarena": [], "bare": [], "runner": []}
    for arms in order:  # the runner arm 5 % above bare; any window right after pgarena's 10 % above
        level = rng.gauss(0, 0.1)
        for i, arm in enumerate(arms):
            lift = (0.05 if arm == "runner" else 0.0) + (0.10 if i and arms[i - 1] == "pgarena" else 0.0)
            y[arm].append(1000 * math.exp(level + lift + rng.gauss(0, 0.01)))
    z = {a: [200.0 * math.exp(rng.gauss(0, 0.01)) for _ in range(rounds)] for a in y}
    s = wn.summary(y, z)
    assert set(s["vs_bare"]) == {"pgarena", "runner"}
    # runner over pgarena: its own 5 %, and a third of its windows follow pgarena's (+10 %)
    assert s["vs_bare"]["runner"]["mean"] - s["vs_bare"]["pgarena"]["mean"] == pytest.approx(0.05 + 0.10 / 3, abs=0.02)
    after = wn.after_which(y, order)
    # against its round's mean, which the lift raises by a third: about 0.07 of the 0.10
    assert after["bare"]["pgarena"] - after["bare"]["runner"] > 0.05
    assert after["runner"]["pgarena"] - after["runner"]["first"] > 0.05
    assert abs(after["pgarena"]["bare"] - after["pgarena"]["runner"]) < 0.1, "what came before pgarena: no lift"
