"""The verdict's promise, simulated: the error rate it states is the one it has (issue 21, item 3).

Each simulated run is a table of S stacks raced through the real scheduler (`load.scheduler.run_rounds`,
which looks after every round and drops resolved stacks) and judged by the real verdict
(`analysis.sequential.judge`). The noise is shaped like the measured one (docs/methodology.md, "Noise
budget"): every window's ln(2xx/s) = the stack's mean + a round factor (sd 0.11, shared by the round) + a
drift common to the run (the machine slowing by 30 % from first window to last) + the window's own noise of
log-sd `sd` (0.05 or 0.2; each stack's own sd drawn in 0.7–1.3 × `sd`, so stacks differ in noise too). In
the runs with a speed probe, 60 % of the window's variance is the machine's speed, which the probe reads
with its own small error, as the measured probe does.

- False orders: identical stacks at S = 4, 8, 20 and sd 0.05 and 0.2, 2,000 runs each: the share of runs
  whose table claims any order at all must be ≤ 5 % — and we test it against 6.5 %, so a 5 % promise
  broken to 8 % fails (the binomial sd of a 5 % rate over 2,000 runs is 0.49 %).
- Power: stacks spaced 10 % apart (every neighbour truly 10 % apart) at sd 0.05: ≥ 80 % of neighbouring
  pairs resolved in the right order.
- Coherence: no order, rank or 'best' the table states contradicts a claimed pair.
- The same identical stacks raced as the headline is, its forecast giving up the pairs the time left cannot
  resolve: the pairs still raced when the time runs out, those whose early rounds looked far apart, get the final
  look, and the false-order share must stay ≤ 5 % there too (1,000 runs at 20 stacks).
- The final look (the error split between the race's confidence sequences and one fixed-sample interval where
  the time ran out): the same identical stacks raced until a budget of 15 rounds' time ends them, every pair
  then judged at the final look — the false-order share must stay ≤ 5 % there too; and in such budgeted tables
  it must resolve more neighbouring pairs than the confidence sequence alone at the whole error would.

The rates are printed (run with `-s` to see them); docs/methodology.md quotes them.
"""

from __future__ import annotations

import math
import os
import random
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import pytest

from pgarena.analysis.sequential import judge, rank_labels
from pgarena.load.scheduler import RoundsPolicy, run_rounds

RUNS = int(os.environ.get('PGARENA_SIM_RUNS', '2000'))
MAX_ROUNDS = 30
CELL = ("perf-test", 1, "closed", 50)


@dataclass(frozen=True)
class Scenario:
    stacks: int
    sd: float
    gap: float = 0.0
    probe: bool = False
    round_sd: float = 0.11
    drift: float = 0.30
    budget_rounds: int | None = None
    """The time of this many rounds of every stack (one window a time step), raced until it is spent."""
    forecast: bool = False
    """With `budget_rounds`: the race forecasts what the time left can resolve and gives up the rest, as the
    headline does (RoundsPolicy.forecast); without, it races every open pair until the time is spent."""
    probe_shift: float = 0.0
    """With `probe`: the sd of a shift, by stack, of the probe's log readings (the probe reading the stack
    beside it as well as the machine: analysis/probecheck.py), drawn once per stack."""


def simulate(scenario: Scenario, seed: int) -> tuple[bool, int, int, bool, int]:
    """One raced table: (any false claim, neighbouring pairs resolved in the right order, neighbours,
    coherent, those resolved by the confidence sequences alone at the whole error: 0 unless budgeted)."""
    rng = random.Random(f"verdict-sim:{seed}")
    names = [f"s{i:02d}" for i in range(scenario.stacks)]
    truth = {s: -i * math.log(1 + scenario.gap) for i, s in enumerate(names)}
    own_sd = {s: scenario.sd * rng.uniform(0.7, 1.3) for s in names}
    shift = {s: rng.gauss(0.0, scenario.probe_shift) for s in names}
    round_factor: dict[int, float] = {}
    clock = [0.0]
    expected_windows = scenario.stacks * 8

    def measure(slot):
        clock[0] += 1.0
        factor = round_factor.setdefault(slot.round, rng.gauss(0.0, scenario.round_sd))
        drift = -scenario.drift * min(1.0, clock[0] / expected_windows)
        sd = own_sd[slot.stack]
        if scenario.probe:
            speed = rng.gauss(0.0, sd * math.sqrt(0.6))
            rest = rng.gauss(0.0, sd * math.sqrt(0.4))
            y = truth[slot.stack] + factor + drift + speed + rest
            reading = 1e6 * math.exp(-speed + shift[slot.stack] + rng.gauss(0.0, 0.02))
            return 5000.0 * math.exp(y), reading
        return 5000.0 * math.exp(truth[slot.stack] + factor + drift + rng.gauss(0.0, sd))

    budget = scenario.budget_rounds
    policy = (RoundsPolicy(min_rounds=3, max_rounds=MAX_ROUNDS) if budget is None else
              RoundsPolicy(min_rounds=3, max_rounds=10 * budget, deadline=scenario.stacks * budget + 0.5,
                          forecast=scenario.forecast))
    outcome = run_rounds([(s, CELL) for s in names], seed=seed, measure=measure, clock=lambda: clock[0], policy=policy)
    references = outcome.references[CELL] if scenario.probe else None
    inference = judge(outcome.values[CELL], references, horizon=outcome.horizon.get(CELL, ()))
    false_claim = any(inference.surely_above(a, b) and not truth[a] > truth[b] + 1e-12
                      for a in names for b in names if a != b)
    order = inference.order()
    resolved = sum(1 for a, b in zip(order, order[1:])
                   if truth[a] > truth[b] and inference.surely_above(a, b))
    ranks = rank_labels(inference, order)
    # a claimed "a above b" is never contradicted: a comes first, and the ranks never put b surely above a
    coherent = all(order.index(a) < order.index(b)
                   and int(ranks[a].split("–")[0]) <= int(ranks[b].split("–")[-1])
                   and int(ranks[a].split("–")[0]) < int(ranks[b].split("–")[0])
                   for a in names for b in names if a != b and inference.surely_above(a, b))
    coherent = coherent and not any(inference.surely_above(s, order[0]) for s in names)
    by_whole = 0
    if budget is not None:  # only the final look's test reads it: one more judge of the table
        whole = judge(outcome.values[CELL], references)
        whole_order = whole.order()
        by_whole = sum(1 for a, b in zip(whole_order, whole_order[1:])
                       if truth[a] > truth[b] and whole.surely_above(a, b))
    return false_claim, resolved, len(names) - 1, coherent, by_whole


def _batch(args: tuple[Scenario, range]) -> list[tuple[bool, int, int, bool, int]]:
    scenario, seeds = args
    return [simulate(scenario, seed) for seed in seeds]


def outcomes(scenario: Scenario, runs: int = RUNS) -> list[tuple[bool, int, int, bool, int]]:
    workers = max(1, min(4, os.cpu_count() or 1))
    chunks = [(scenario, range(i, runs, workers)) for i in range(workers)]
    with ProcessPoolExecutor(workers) as pool:
        return [r for part in pool.map(_batch, chunks) for r in part]


def rates(scenario: Scenario, runs: int = RUNS) -> tuple[float, float, bool]:
    """(share of runs with a false claim, share of neighbouring pairs resolved rightly, all coherent)."""
    results = outcomes(scenario, runs)
    false = sum(r[0] for r in results) / len(results)
    resolved = sum(r[1] for r in results) / sum(r[2] for r in results)
    return false, resolved, all(r[3] for r in results)


@pytest.mark.parametrize("stacks", [4, 8, 20])
@pytest.mark.parametrize("sd", [0.05, 0.2])
@pytest.mark.parametrize("budget_rounds", [None, 15])
def test_identical_stacks_get_no_order_in_at_least_95_percent_of_tables(stacks: int, sd: float,
                                                                        budget_rounds: int | None) -> None:
    false, _, coherent = rates(Scenario(stacks=stacks, sd=sd, budget_rounds=budget_rounds))
    how = "raced to the cap" if budget_rounds is None else f"raced until a budget of {budget_rounds} rounds, final look"
    print(f"\nidentical stacks: S={stacks} sd={sd}, {how}: tables claiming a false order {false:.2%} of {RUNS}")
    assert false <= 0.065
    assert coherent


@pytest.mark.parametrize("stacks", [4, 8, 20])
@pytest.mark.parametrize("sd", [0.05, 0.2])
def test_identical_stacks_raced_with_the_time_forecast_get_no_order(stacks: int, sd: float) -> None:
    """The headline's race: it forecasts which open pairs the time left can resolve and keeps only those, so the
    pairs still raced at the end, those that get the final look, are the ones whose early rounds looked far apart.
    At 20 stacks half the runs (a false-order share's binomial sd at 5 % over 1,000 runs is 0.69 %, so 6.5 % is
    still more than 2 sd above it): a table there takes 0.1 s, four minutes of phase 1 at 2,000."""
    runs = RUNS if stacks < 20 else RUNS // 2
    false, _, coherent = rates(Scenario(stacks=stacks, sd=sd, budget_rounds=15, forecast=True), runs=runs)
    print(f"\nidentical stacks: S={stacks} sd={sd}, the time-forecast race in a budget of 15 rounds: tables claiming "
          f"a false order {false:.2%} of {runs}")
    assert false <= 0.065
    assert coherent


def test_the_final_look_resolves_more_of_a_budgeted_table() -> None:
    results = outcomes(Scenario(stacks=8, sd=0.1, gap=0.10, budget_rounds=15), runs=min(RUNS, 500))
    pairs = sum(r[2] for r in results)
    final, whole = sum(r[1] for r in results) / pairs, sum(r[4] for r in results) / pairs
    print(f"\n10 % apart, S=8 sd=0.1, a budget of 15 rounds: neighbouring pairs resolved {final:.1%} with the final "
          f"look, {whole:.1%} by the confidence sequences alone at the whole error")
    assert final > whole + 0.05


def test_identical_stacks_with_the_speed_probe_get_no_order() -> None:
    false, _, coherent = rates(Scenario(stacks=8, sd=0.2, probe=True))
    print(f"\nidentical stacks, probe: S=8 sd=0.2: tables claiming a false order {false:.2%} of {RUNS}")
    assert false <= 0.065
    assert coherent


@pytest.mark.parametrize(("stacks", "shift"), [(8, 0.01), (8, 0.02), (8, 0.03), (5, 0.025)])
def test_a_probe_that_reads_the_stacks_a_little_still_gets_no_false_order(stacks: int, shift: float) -> None:
    # a shift the probe check misses in about half the tables still moves corrected ratios by β times it; without the
    # charge for it (probecheck.shift_variance), 10.6 % of these tables claimed a false order at 8 stacks and sd 0.02
    # (2,000 runs); guessing each stack's shift by empirical Bayes instead ("shrink"), 5.9 % at 5 stacks and sd 0.025
    false, _, coherent = rates(Scenario(stacks=stacks, sd=0.1, probe=True, probe_shift=shift))
    print(f"\nidentical stacks, probe reading the stacks (sd {shift}): S={stacks} sd=0.1: tables claiming a false "
          f"order {false:.2%} of {RUNS}")
    assert false <= 0.065
    assert coherent


@pytest.mark.parametrize("stacks", [4, 8, 20])
def test_a_true_ten_percent_difference_is_resolved(stacks: int) -> None:
    false, resolved, coherent = rates(Scenario(stacks=stacks, sd=0.05, gap=0.10), runs=RUNS if stacks < 20 else 500)
    print(f"\n10 % apart: S={stacks} sd=0.05: neighbouring pairs resolved {resolved:.1%}, "
          f"tables with a wrong order {false:.2%}")
    assert resolved >= 0.80
    assert false <= 0.065
    assert coherent
