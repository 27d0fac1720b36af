"""Whether a stack reads cold in the tables after the headline: each stack's rise from its first round to its later
ones there, against the other stacks' in the same table. Research tooling (docs/methodology.md, "A cell": "A JIT's
later workloads").

    PYTHONPATH=src .venv/bin/python scripts/later_climb.py results/<run-id>

The tables after the headline warm each cell for a second only (the bench profile's `later_tables`). A runtime that
compiles each endpoint's code when it first runs it (a JVM's JIT, V8's optimizing tiers) would then read slower in a
table's first round than in its later ones, where the rounds gave its compiler time. For each later table measured
in two rounds or more and each stack in it: d = the mean ln 2xx/s of its later rounds − its first round's, less the
mean d of the table's stacks (so the machine's speed in each round cancels). Prints each stack's mean d over the
tables, the largest first, with its z against the spread of the stacks' means (1.4826 × their median absolute
deviation from the median): since cd081e1 a round takes each stack's cells one after another, so a stack's tables
in one round share that visit's spell of the machine, and a standard error over its tables would take them as
independent. A stack is read as cold only well beyond that spread.
"""

from __future__ import annotations

import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from pgarena.analysis.ranking import headline_key
from pgarena.results.models import Cell

sys.path.insert(0, str(Path(__file__).resolve().parent))
from noise_budget import stored_run  # noqa: E402  (a script beside this one)


def climbs(cells: Sequence[Cell], workloads: Sequence[str] | None) -> dict[str, list[float]]:
    """Each stack's rise (ln, relative to its table's mean rise) in every later table it has two rounds or more in;
    `workloads`: the run's order (its config), which names the headline."""
    head = headline_key(cells, workloads)
    tables: dict[tuple, dict[str, float]] = defaultdict(dict)
    for cell in cells:
        key = cell.key[1:]
        if key == head or cell.model != "closed":
            continue
        by_round: dict[int, list[float]] = defaultdict(list)
        for rep in cell.repetitions:
            if rep.round is not None and rep.rps and rep.rps > 0:
                by_round[rep.round].append(math.log(rep.rps))
        if len(by_round) < 2:
            continue
        first, *later = sorted(by_round)
        tables[key][cell.stack] = (statistics.fmean(x for r in later for x in by_round[r])
                                   - statistics.fmean(by_round[first]))
    out: dict[str, list[float]] = defaultdict(list)
    for rises in tables.values():
        if len(rises) < 3:
            continue
        mean = statistics.fmean(rises.values())
        for stack, rise in rises.items():
            out[stack].append(rise - mean)
    return out


def spread(means: list[float]) -> float:
    """1.4826 × the median absolute deviation of the stacks' mean rises from their median: their sd if normal,
    unmoved by the few stacks that do climb."""
    centre = statistics.median(means)
    return 1.4826 * statistics.median(abs(m - centre) for m in means)


def main(argv: list[str]) -> int:
    results = stored_run(argv, "later_climb.py")
    if results is None:
        return 2
    found = climbs(results.cells, results.config.get("workloads"))
    if not found:
        print(f"{argv[0]}: no table after the headline has two rounds of three stacks or more", file=sys.stderr)
        return 1
    means = {stack: statistics.fmean(values) for stack, values in found.items()}
    sd = spread(list(means.values()))
    print(f"rise from the first round to the later ones, against the table's stacks (ln; + = read cold in round 1); "
          f"the stacks' spread {sd:.3f}:")
    for stack, mean in sorted(means.items(), key=lambda kv: -kv[1]):
        z = f"z {mean / sd:+.1f}" if sd > 0 else "z –"
        print(f"  {stack:36s} {mean:+.3f} (×{math.exp(mean):.2f}; {z}; {len(found[stack])} tables)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
