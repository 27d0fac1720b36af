"""Does the race give its rounds to the right pairs? Simulated headlines raced by the real scheduler under other rules.

Each run is one table shaped like a measured headline: its stacks' ratios to the best (default: bench27's 19 ranked
stacks, 2026-11-29), a window's ln(2xx/s) scattered by `--sd` (each stack's own in 0.7–1.3× that) and a round factor
of sd `--round-sd`, raced by `load.scheduler.run_rounds` from 3 rounds until `--windows` windows' time is spent, as
the headline is (its forecast on: time it gives up goes to the tables after it), then judged by
`analysis.sequential.judge` with its final look. The rules compared:

- `race`: the shipped race (`_race`; `forecast.rounds_to_resolve` with the benefit of `forecast.BENEFIT_SE`);
- `benefit=K`: the same with the benefit of K standard errors;
- `all`: no forecast, every open pair raced until the time is spent;
- `expected`: after each round, keep the set of open pairs whose expected count resolved at the end of the time is
  largest, each pair's chance read from the predictive distribution of its final centre (`expected_race`), pairs
  added greedily.

For each: neighbouring pairs resolved (ordered or equivalent) per table, the share of tables with an order the truth
contradicts, the windows the rounds used and the rounds. `--identical S` makes S identical stacks (an A/A table).

    PYTHONPATH=src .venv/bin/python scripts/race_allocation.py --runs 400 race all expected benefit=0.5 benefit=2
"""

from __future__ import annotations

import argparse
import functools
import math
import random
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Collection, Hashable, Mapping
from concurrent.futures import ProcessPoolExecutor

from pgarena.analysis.forecast import resolve_chance, rounds_to_resolve
from pgarena.analysis.sequential import fixed_half_width, half_width, judge
from pgarena.load import scheduler
from pgarena.load.scheduler import RoundsPolicy, StopReason, run_rounds

BENCH27 = [1.0, 0.90, 0.75, 0.59, 0.41, 0.39, 0.36, 0.36, 0.35, 0.32, 0.27, 0.21, 0.18, 0.16, 0.16, 0.14, 0.12, 0.12,
           0.09]
"""bench27's headline (perf-test rows=1 at 50 VUs, 19 ranked stacks): each stack's paired ratio to the best."""
CELL = ("perf-test", 1, "closed", 50)


def chance(centre: float, variance: float, rounds: int, more: int, alpha: float, df: float, margin: float,
           final: bool) -> float:
    """The chance that a pair at log ratio `centre` over `rounds` rounds of per-round `variance` is resolved after
    `more` rounds: its final centre is normal around `centre` with variance v·more / (rounds·total) (the true ratio
    as uncertain as the estimate says, plus the new rounds' scatter); its half-width the final look's or the
    confidence sequence's at the total (`forecast.resolve_chance`)."""
    if more <= 0:
        return 0.0
    total = rounds + more
    width = (fixed_half_width(total, variance, alpha, df + more) if final
             else half_width(total, variance, alpha, df + more))
    return resolve_chance(centre, math.sqrt(variance * more / (rounds * total)), width, margin)


def expected_race(cells: Mapping[Hashable, scheduler._CellState], by_cap: int, gate: object,
                  throughout: Callable[[Hashable], Collection[str]],
                  time_left: tuple[float, float] | None) -> dict[Hashable, StopReason | None]:
    """`scheduler._race`'s contract, keeping the open pairs that maximise the expected count resolved (no A/B gate)."""
    stops: dict[Hashable, StopReason | None] = {}
    fixed, pairs = 0, []
    for cell, state in cells.items():
        if state.inference is None:
            stops[cell] = None
            fixed += len(state.active)
            continue
        whole, inference = set(throughout(cell)), state.inference
        for a, b in state.open_pairs:
            found = inference.interval(a, b)
            if found is None or found.rounds == 0 or not math.isfinite(found.variance):
                continue
            final = a in whole and b in whole and inference.final_alpha is not None
            alpha = inference.final_alpha if final else inference.alpha
            pairs.append((cell, a, b, functools.partial(chance, math.log(found.ratio), found.variance, found.rounds,
                                                        alpha=alpha, df=found.df, margin=inference.margin,
                                                        final=final)))

    def value(chosen: list) -> float:
        stacks = len({(cell, s) for cell, a, b, _ in chosen for s in (a, b)}) + fixed
        more = by_cap if time_left is None else min(by_cap, int(time_left[0] // (time_left[1] * max(1, stacks))))
        return sum(p(more=more) for *_, p in chosen)

    chosen: list = []
    best = 0.0
    while len(chosen) < len(pairs):
        top, pick = max((value(chosen + [p]), i) for i, p in enumerate(pairs) if p not in chosen)
        if top <= best + 1e-9:
            break
        best = top
        chosen.append(pairs[pick])
    kept: dict[Hashable, set[str]] = defaultdict(set)
    for cell, a, b, _ in chosen:
        kept[cell] |= {a, b}
    for cell, state in cells.items():
        if cell not in stops:
            stops[cell] = None if kept.get(cell) else "budget" if by_cap > 0 else "max-rounds"
            state.active = kept.get(cell) or state.active
    return stops


def ratios_of(opts: argparse.Namespace) -> list[float]:
    """The table's stacks as ratios to the best."""
    return [1.0] * opts.identical if opts.identical else BENCH27


def one(args: tuple[str, int, argparse.Namespace]) -> tuple[int, bool, int, int]:
    """One raced table: (neighbouring pairs resolved, a false order, windows, rounds)."""
    rule, seed, opts = args
    if rule == "expected":
        scheduler._race = expected_race  # type: ignore[assignment]
    elif rule.startswith("benefit="):
        scheduler.rounds_to_resolve = functools.partial(rounds_to_resolve, benefit=float(rule.split("=")[1]))
    rng = random.Random(f"race-allocation:{seed}")
    ratios = ratios_of(opts)
    names = [f"s{i:02d}" for i in range(len(ratios))]
    truth = {s: math.log(r) for s, r in zip(names, ratios)}
    own = {s: opts.sd * rng.uniform(0.7, 1.3) for s in names}
    factors: dict[int, float] = {}
    clock = [0.0]

    def measure(slot: scheduler.Slot) -> float:
        clock[0] += 1.0
        factor = factors.setdefault(slot.round, rng.gauss(0.0, opts.round_sd))
        return 5000.0 * math.exp(truth[slot.stack] + factor + rng.gauss(0.0, own[slot.stack]))

    policy = RoundsPolicy(min_rounds=3, max_rounds=100, deadline=opts.windows + 0.5, forecast=rule != "all")
    outcome = run_rounds([(s, CELL) for s in names], seed=seed, measure=measure, clock=lambda: clock[0], policy=policy)
    inference = judge(outcome.values[CELL], None, horizon=outcome.horizon.get(CELL, ()))
    order = inference.order()
    resolved = sum(1 for a, b in zip(order, order[1:]) if inference.interval(a, b).status != "not resolved")
    false = any(inference.surely_above(a, b) and not truth[a] > truth[b] for a in names for b in names if a != b)
    return resolved, false, outcome.windows, outcome.rounds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rules", nargs="*", default=["race", "all", "expected"],
                        help="race, all, expected or benefit=K (default: race all expected)")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--windows", type=int, default=295, help="the time, in windows (bench27's headline: 295)")
    parser.add_argument("--sd", type=float, default=0.103, help="per-window log-sd (bench27's after the probe)")
    parser.add_argument("--round-sd", type=float, default=0.07, help="a round's sd (bench27's after the probe)")
    parser.add_argument("--identical", type=int, default=0, help="S identical stacks instead of bench27's ratios")
    opts = parser.parse_args(argv)
    for rule in opts.rules:
        if rule not in ("race", "all", "expected") and not rule.startswith("benefit="):
            print(f"race_allocation.py: unknown rule {rule!r} (race, all, expected, benefit=K)", file=sys.stderr)
            return 2
    table = f"{opts.identical} identical stacks" if opts.identical else f"bench27's {len(BENCH27)} stacks"
    print(f"{table}, {opts.windows} windows' time, window log-sd {opts.sd}, round sd {opts.round_sd}, {opts.runs} runs")
    for rule in opts.rules:
        with ProcessPoolExecutor(2) as pool:
            results = list(pool.map(one, [(rule, seed, opts) for seed in range(opts.runs)], chunksize=4))
        resolved, false, windows, rounds = ([r[i] for r in results] for i in range(4))
        mean = statistics.fmean(resolved)
        se = statistics.stdev(resolved) / math.sqrt(len(resolved)) if len(resolved) > 1 else math.nan
        print(f"  {rule:12} resolved {mean:5.2f} ± {se:.2f} of {len(ratios_of(opts)) - 1} pairs; false orders in "
              f"{statistics.fmean(false):.1%} of tables; {statistics.fmean(windows):.0f} windows, "
              f"{statistics.fmean(rounds):.1f} rounds")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
