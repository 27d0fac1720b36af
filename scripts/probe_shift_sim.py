"""What a probe that reads the stacks a little does to the verdict: simulated tables of S stacks raced through the
real scheduler and judged by the real verdict, the probe's log readings shifted by stack with an sd of TAU
(docs/methodology.md, "The probe must read the machine, not the stack"; the model of
tests/unit/test_verdict_simulation.py: 60 % of each window's variance the machine's speed, a round factor of sd 0.11,
the machine slowing 30 % over the run).

    PYTHONPATH=src .venv/bin/python scripts/probe_shift_sim.py STACKS SD TAU RUNS [GAP] [--shifts METHOD]

prints the share of tables claiming a false order, the share that used the speed correction and, with GAP (the
true ratio between neighbours − 1, e.g. 0.1), the share of neighbouring pairs ordered rightly. METHOD: how the
verdict guesses each stack's shift (`probecheck.SHIFT_ESTIMATES`; default the verdict's own)."""

from __future__ import annotations

import math
import random
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from pgarena.analysis import probecheck
from pgarena.analysis.sequential import judge
from pgarena.load.scheduler import RoundsPolicy, run_rounds

sys.path.insert(0, str(Path(__file__).resolve().parent))
from noise_budget import shift_method  # noqa: E402  (a script beside this one)

CELL = ("perf-test", 1, "closed", 50)


def one(args: tuple[int, float, float, float, int, str]) -> tuple[bool, bool, int]:
    """One raced table: (a false order claimed, the correction used, neighbouring pairs ordered rightly)."""
    stacks, sd, tau, gap, seed, method = args
    probecheck.SHIFT_ESTIMATE = method
    rng = random.Random(f"probe-shift:{seed}")
    names = [f"s{i:02d}" for i in range(stacks)]
    truth = {s: -i * math.log(1 + gap) for i, s in enumerate(names)}
    shift = {s: rng.gauss(0.0, tau) for s in names}
    own = {s: sd * rng.uniform(0.7, 1.3) for s in names}
    round_factor: dict[int, float] = {}
    clock = [0.0]

    def measure(slot):  # type: ignore[no-untyped-def]
        clock[0] += 1.0
        factor = round_factor.setdefault(slot.round, rng.gauss(0.0, 0.11))
        drift = -0.3 * min(1.0, clock[0] / (stacks * 8))
        speed = rng.gauss(0.0, own[slot.stack] * math.sqrt(0.6))
        rest = rng.gauss(0.0, own[slot.stack] * math.sqrt(0.4))
        y = truth[slot.stack] + factor + drift + speed + rest
        return 5000.0 * math.exp(y), 1e6 * math.exp(-speed + shift[slot.stack] + rng.gauss(0.0, 0.02))

    outcome = run_rounds([(s, CELL) for s in names], seed=seed, measure=measure, clock=lambda: clock[0],
                         policy=RoundsPolicy(min_rounds=3, max_rounds=30))
    references = outcome.references[CELL]
    inference = judge(outcome.values[CELL], references, horizon=outcome.horizon.get(CELL, ()))
    false = any(inference.surely_above(a, b) and not truth[a] > truth[b] for a in names for b in names if a != b)
    order = inference.order()
    resolved = sum(1 for a, b in zip(order, order[1:]) if truth[a] > truth[b] and inference.surely_above(a, b))
    return false, inference.fit.slope != 0.0, resolved


def main(argv: list[str]) -> int:
    method, argv = shift_method(argv)
    if len(argv) not in (4, 5) or method is None:
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    stacks, sd, tau, runs = int(argv[0]), float(argv[1]), float(argv[2]), int(argv[3])
    gap = float(argv[4]) if len(argv) == 5 else 0.0
    with ProcessPoolExecutor(2) as pool:
        results = list(pool.map(one, [(stacks, sd, tau, gap, i, method) for i in range(runs)], chunksize=20))
    false = sum(r[0] for r in results) / runs
    used = sum(r[1] for r in results) / runs
    line = (f"S={stacks} sd={sd} shift sd={tau} ({method}): tables claiming a false order {false:.1%}, "
            f"the correction used in {used:.0%} ({runs} tables)")
    if gap:
        line += f"; {gap:.0%} apart: neighbouring pairs ordered {sum(r[2] for r in results) / runs / (stacks - 1):.1%}"
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
