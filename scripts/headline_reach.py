"""What the headline's open pairs would have needed (docs/methodology.md, "What a given noise can resolve").

For the first table of a stored run measured in interleaved rounds (the headline), each neighbouring pair left open
with the rounds its estimate and variance would need to be resolved — ordered, or equivalent within the margin —
in half and in four fifths of runs, in that table (its final look, Bonferroni over every pair of its stacks) and in
a run of its two stacks alone (`forecast.rounds_alone`); then, taking the open pairs cheapest first, how many more
windows and minutes of rounds (at the run's wall time per window) the table would have needed for one, two, … more
of them to be resolved in half (and in four fifths) of runs, each stack measured until the last pair it belongs to
is reached.

    PYTHONPATH=src .venv/bin/python scripts/headline_reach.py results/<run-id>
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from pgarena.analysis.forecast import ALONE_HORIZON, resolve_probability, rounds_alone
from pgarena.analysis.sequential import FINAL_SHARE, pair_count
from pgarena.analysis.verdicts import TableVerdict, run_verdicts, window_seconds
from pgarena.results.store import ResultsError, load


def rounds_in_table(verdict: TableVerdict, ratio: float, variance: float, power: float) -> int | None:
    """Rounds the pair would need at the table's final look to be resolved in `power` of runs (None: beyond
    ALONE_HORIZON)."""
    inference = verdict.inference
    assert inference is not None
    alpha = FINAL_SHARE * (1 - inference.level) / pair_count(len(inference.fit.effect))
    return next((n for n in range(3, ALONE_HORIZON + 1)
                 if resolve_probability(math.log(ratio), variance, n, alpha, inference.margin,
                                        df=inference.fit.df + n) >= power), None)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: headline_reach.py RESULTS_DIR (a run folder with results.json)", file=sys.stderr)
        return 2
    try:
        results = load(Path(argv[0]))
    except ResultsError as exc:
        print(exc, file=sys.stderr)
        return 2
    verdict = next((v for v in run_verdicts(results).values() if v.inference is not None and v.pairs), None)
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
        if pair.status != "not resolved" or found is None or not math.isfinite(getattr(found, "variance", math.nan)):
            continue
        half, most = (rounds_in_table(verdict, found.ratio, found.variance, p) for p in (0.5, 0.8))
        print(f"  {pair.upper} / {pair.lower} | {found.ratio:.3f} | {found.rounds} | {half} / {most} | "
              f"{rounds_alone(found)}")  # type: ignore[arg-type]
        if half is not None and most is not None:
            needs.append((half, most, pair.upper, pair.lower))
    reach: list[dict[str, int]] = [{}, {}]
    for k, (half, most, upper, lower) in enumerate(sorted(needs), start=1):
        spans = []
        for at, rounds in zip(reach, (half, most)):
            for stack in (upper, lower):
                at[stack] = max(at.get(stack, 0), rounds)
            windows = sum(max(0, n - had.get(s, 0)) for s, n in at.items())
            spans.append(f"{windows} windows, {windows * seconds / 60:.1f} min")
        print(f"  {k} more pair(s), {resolved + k} of {len(verdict.pairs)}: each resolved in half of runs after "
              f"{spans[0]} more; in four fifths after {spans[1]} more")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
