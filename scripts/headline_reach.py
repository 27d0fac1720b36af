"""What the headline's open pairs would have needed (docs/methodology.md, "What a given noise can resolve").

For the first table of a stored run measured in interleaved rounds (the headline), each neighbouring pair left open
with the rounds its estimate and variance would need to be resolved — ordered, or equivalent within the margin —
in half and in four fifths of runs, in that table (its final look, Bonferroni over every pair of its stacks) and in
a run of its two stacks alone (`forecast.rounds_alone`); then, taking the open pairs cheapest first, how many more
windows and minutes of rounds (at the run's wall time per window) the table would have needed for one, two, … more
of them to be resolved in half (and in four fifths) of runs, each stack measured until the last pair it belongs to
is reached ("never": not within `forecast.ALONE_HORIZON` rounds, e.g. a pair inside the floor the probe's shifts
leave).

    PYTHONPATH=src .venv/bin/python scripts/headline_reach.py results/<run-id> [--shifts METHOD]

METHOD: how the verdict guesses the speed probe's shift beside each stack (`probecheck.SHIFT_ESTIMATES`; default the
verdict's own), to re-judge the run with another (docs/methodology.md, "The probe must read the machine").
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from pgarena.analysis import probecheck
from pgarena.analysis.forecast import ALONE_HORIZON, least_rounds
from pgarena.analysis.sequential import FINAL_SHARE, PairInterval, pair_count
from pgarena.analysis.verdicts import TableVerdict, window_seconds

sys.path.insert(0, str(Path(__file__).resolve().parent))
from noise_budget import headline_verdict, shift_method, stored_run  # noqa: E402  (a script beside this one)


def rounds_in_table(verdict: TableVerdict, found: PairInterval, power: float) -> int | None:
    """Rounds the pair would need at the table's final look (its error split over every pair of the table's stacks)
    to be resolved in `power` of runs (None: beyond ALONE_HORIZON)."""
    inference = verdict.inference
    assert inference is not None
    alpha = FINAL_SHARE * (1 - inference.level) / pair_count(len(inference.fit.effect))
    return least_rounds(math.log(found.ratio), found.variance_at(0), alpha, inference.margin,
                        power, df_at=lambda n: inference.fit.df + n, fixed=found.fixed)


def more_windows(needs: list[tuple[int, float, str, str]], had: dict[str, int]) -> list[tuple[float, float]]:
    """Taking the open pairs (rounds for half / four fifths of runs, inf for never; upper; lower) cheapest first:
    after each, the windows beyond those `had` that the stacks need for every pair so far, each stack measured until
    the last pair it belongs to is reached, as (half, four fifths)."""
    reach: list[dict[str, float]] = [{}, {}]
    out = []
    for half, most, upper, lower in sorted(needs):
        for at, rounds in zip(reach, (half, most)):
            for stack in (upper, lower):
                at[stack] = max(at.get(stack, 0), rounds)
        first, second = (sum(max(0, n - had.get(s, 0)) for s, n in at.items()) for at in reach)
        out.append((first, second))
    return out


def main(argv: list[str]) -> int:
    method, argv = shift_method(argv)
    if method is None:
        print(f"--shifts: one of {', '.join(probecheck.SHIFT_ESTIMATES)}", file=sys.stderr)
        return 2
    probecheck.SHIFT_ESTIMATE = method
    results = stored_run(argv, "headline_reach.py")
    if results is None:
        return 2
    verdict = headline_verdict(results)
    if verdict is None:
        print(f"{results.run_id}: no table was measured in interleaved rounds")
        return 1
    seconds, measured = window_seconds(results)
    had = {c.stack: len(c.repetitions) for c in verdict.cells}
    resolved = sum(p.status != "not resolved" for p in verdict.pairs)
    print(f"{results.run_id}: the headline's {len(verdict.pairs)} neighbouring pairs, {resolved} resolved after "
          f"{verdict.rounds} rounds; {seconds:.2f} s a window ({'measured' if measured else 'window and re-warm'})")
    print("open pair | ratio | rounds had | in this table: 50 % / 80 % of runs | the two alone: 80 %")
    needs = []
    for pair in verdict.pairs:
        found = pair.ratio
        if not pair.forecast or not isinstance(found, PairInterval):
            continue
        half, most = (rounds_in_table(verdict, found, p) for p in (0.5, 0.8))
        print(f"  {pair.upper} / {pair.lower} | {found.ratio:.3f} | {found.rounds} | {half} / {most} | {pair.alone}")
        if half is not None:
            needs.append((half, math.inf if most is None else most, pair.upper, pair.lower))
    def span(windows: float) -> str:
        if not math.isfinite(windows):
            return f"never within {ALONE_HORIZON} rounds"
        return f"after {windows} windows, {windows * seconds / 60:.1f} min more"

    for k, (half, most) in enumerate(more_windows(needs, had), start=1):
        print(f"  {k} more pair(s), {resolved + k} of {len(verdict.pairs)}: each resolved in half of runs "
              f"{span(half)}; in four fifths {span(most)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
