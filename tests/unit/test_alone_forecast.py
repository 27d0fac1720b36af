"""'The two alone' (analysis/forecast.rounds_alone): the report's forecast of what a run of an open pair's two
stacks alone would need. Checked against the verdict itself: two-stack tables of that many rounds, simulated with
the forecast's ratio and scatter and judged by `sequential.judge` at their final look, resolve the pair in about the
stated share of runs — and clearly less often at half the rounds, so the forecast is not padded."""

from __future__ import annotations

import math
import random

import pytest

from pgarena.analysis.forecast import ALONE_HORIZON, ALONE_POWER, resolve_probability, rounds_alone
from pgarena.analysis.paired import PairVerdict
from pgarena.analysis.sequential import PairInterval, judge
from pgarena.analysis.verdicts import TableVerdict

RUNS = 1_000


def open_pair(ratio: float, window_sd: float, rounds: int = 12) -> PairInterval:
    """A pair left open by some table: its estimate and per-round variance (two windows' worth)."""
    return PairInterval(ratio, ratio * 0.8, ratio * 1.25, rounds, 0.95, 0.10, 2 * window_sd**2, rounds - 1)


def resolved_share(ratio: float, window_sd: float, rounds: int, seed: int) -> float:
    """Two stacks `ratio` apart, `rounds` paired rounds, a round factor both share and each window its own noise;
    the share of runs whose final-look interval (the table raced until its time ran out) orders or makes them
    equivalent."""
    rng = random.Random(seed)
    resolved = 0
    for _ in range(RUNS):
        shared = [rng.gauss(0, 0.1) for _ in range(rounds)]
        table = {"a": [math.exp(math.log(1000 * ratio) + s + rng.gauss(0, window_sd)) for s in shared],
                 "b": [math.exp(math.log(1000) + s + rng.gauss(0, window_sd)) for s in shared]}
        found = judge(table, horizon={"a", "b"}).interval("a", "b")
        assert found is not None and found.final
        resolved += found.status != "not resolved"
    return resolved / RUNS


@pytest.mark.parametrize(("ratio", "window_sd"), [(1.0, 0.1), (1.05, 0.1), (1.08, 0.15), (1.2, 0.2)])
def test_the_forecast_rounds_resolve_the_pair_in_the_stated_share_of_runs(ratio: float, window_sd: float) -> None:
    rounds = rounds_alone(open_pair(ratio, window_sd))
    assert rounds is not None
    at_forecast = resolved_share(ratio, window_sd, rounds, seed=rounds)
    at_half = resolved_share(ratio, window_sd, max(3, rounds // 2), seed=rounds + 1)
    print(f"ratio {ratio}, window sd {window_sd}: {rounds} rounds resolve {at_forecast:.1%}, "
          f"{max(3, rounds // 2)} rounds {at_half:.1%}")
    assert at_forecast >= ALONE_POWER - 0.05  # 1,000 runs: a standard error of about 1.3 points
    assert at_half < at_forecast - 0.1


def test_the_chance_grows_with_the_rounds_and_reaches_one_once_every_centre_resolves() -> None:
    chances = [resolve_probability(0.04, 0.02, n, 0.04, 0.10, df=n - 1) for n in (5, 10, 20, 40, 80)]
    assert chances == sorted(chances) and chances[0] < 0.5
    assert resolve_probability(0.04, 0.02, 2_000, 0.04, 0.10) == 1.0


def test_a_pair_beyond_the_horizon_or_without_a_variance_gets_no_forecast() -> None:
    assert rounds_alone(open_pair(1.05, 3.0)) is None  # a per-window sd of 300 %: beyond ALONE_HORIZON rounds
    assert rounds_alone(PairInterval(1.05, 0.9, 1.2, 5, 0.95, 0.10)) is None  # no variance recorded


def test_only_an_open_pair_says_what_its_two_stacks_alone_would_need() -> None:
    open_ = PairVerdict("a", "b", open_pair(1.03, 0.1))
    ordered = PairVerdict("a", "b", PairInterval(1.5, 1.3, 1.7, 12, 0.95, 0.10, 0.02, 11))
    hopeless = PairVerdict("a", "b", open_pair(1.05, 3.0))
    rounds = open_.alone
    assert rounds is not None
    assert open_.sentence(1.5).endswith(f"; the two alone: ≈ {rounds} rounds, {rounds * 3 / 60:.1f} min)")
    assert open_.sentence() == "a and b: not resolved (0.82–1.29)"
    assert ordered.sentence(1.5) == "a is 1.50× b (1.30–1.70)" and ordered.alone is None
    assert hopeless.sentence(1.5).endswith(f"; the two alone: over {ALONE_HORIZON:,} rounds)")


def test_the_table_explains_the_forecast_only_when_a_pair_shows_one() -> None:
    with_open = TableVerdict(cells=[], basis="rps", paired=True, rounds=12, seconds_per_window=1.7,
                             pairs=[PairVerdict("a", "b", open_pair(1.03, 0.1))])
    settled = TableVerdict(cells=[], basis="rps", paired=True, rounds=12, seconds_per_window=1.7,
                           pairs=[PairVerdict("a", "b", PairInterval(1.5, 1.3, 1.7, 12, 0.95, 0.10, 0.02, 11))])
    unknown_time = TableVerdict(cells=[], basis="rps", paired=True, rounds=12,
                                pairs=[PairVerdict("a", "b", open_pair(1.03, 0.1))])
    sentence = with_open.reach_sentence()
    assert sentence is not None and "1.70 s a window" in sentence and "80 % of runs" in sentence
    assert settled.reach_sentence() is None and unknown_time.reach_sentence() is None


def test_a_variance_the_rounds_do_not_average_away_is_not_forecast_to_shrink() -> None:
    """A pair 3 % apart whose estimate carries a fixed variance of 0.001 (sd 3.2 %, the probe's shifts) can never be
    resolved by more rounds: every forecast says so, while the same total variance read as round noise would be."""
    from pgarena.analysis.forecast import rounds_until

    noise, fixed, rounds = 0.01, 0.001, 10
    charged = PairInterval(1.03, 0.9, 1.2, rounds, 0.95, variance=noise + rounds * fixed, df=30, fixed=fixed)
    plain = PairInterval(1.03, 0.9, 1.2, rounds, 0.95, variance=noise + rounds * fixed, df=30)
    half = math.log(1.03)
    assert rounds_until(plain, 0.01, half, horizon=ALONE_HORIZON) is not None
    assert rounds_until(charged, 0.01, half, horizon=ALONE_HORIZON) is None
    assert rounds_alone(plain) is not None
    assert rounds_alone(charged) is None
    assert charged.inverse().fixed == fixed
    # the per-round variance at another count: the noise part as measured, the fixed part grown with the rounds
    assert charged.variance_at(0) == pytest.approx(noise) and plain.variance_at(0) == plain.variance
    assert charged.variance_at(rounds) == charged.variance
    assert charged.variance_at(4 * rounds) == pytest.approx(noise + 4 * rounds * fixed)
