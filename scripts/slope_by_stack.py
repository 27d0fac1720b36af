"""Would a slope per stack take more of the machine's speed out than the verdict's one slope per table?

For the headline of a stored run (the report's first table measured in interleaved rounds), ln(2xx/s) of every
window is fitted by least squares three ways: stack + round (no probe), stack + round + β·z (the verdict's one slope,
z = ln `reference_unit_ns`), and stack + round + β_s·z (a slope per stack). It prints each fit's residual sd
(√(RSS / df)), the F test of the slopes' differences (the one-slope fit against the per-stack one) and the spread of
the per-stack slopes (docs/methodology.md, "A slope per stack").

    PYTHONPATH=src .venv/bin/python scripts/slope_by_stack.py results/<run-id>
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import f as f_distribution

from pgarena.analysis.additive import PerRound
from pgarena.analysis.verdicts import per_round_rps

sys.path.insert(0, str(Path(__file__).resolve().parent))
from noise_budget import headline_verdict, stored_run  # noqa: E402  (a script beside this one)


@dataclass(frozen=True)
class Fit:
    rss: float
    df: int
    slopes: dict[str, float]
    """stack → its slope (the one slope under every stack for the one-slope fit; empty without the probe)."""

    @property
    def sd(self) -> float:
        return math.sqrt(self.rss / self.df) if self.df > 0 else math.nan


def fit(y: PerRound, z: PerRound, slopes: str) -> Fit:
    """Least squares of ln y on a level per stack, a deviation per round and, by `slopes` ("none", "one",
    "per-stack"), ln z's slope; windows without a positive y and z are left out."""
    names = sorted(y)
    rows = [(i, r, math.log(a), math.log(b)) for i, s in enumerate(names)
            for r, (a, b) in enumerate(zip(y[s], z.get(s, []))) if a and b and a > 0 and b > 0]
    rounds = {r: k for k, r in enumerate(sorted({r for _, r, _, _ in rows}))}
    stacks, width = len(names), len(names) + len(rounds) - 1
    extra = {"none": 0, "one": 1, "per-stack": stacks}[slopes]
    x = np.zeros((len(rows), width + extra))
    centred = np.array([b for *_, b in rows]) - np.mean([b for *_, b in rows]) if rows else np.zeros(0)
    for n, (i, r, _, _) in enumerate(rows):
        x[n, i] = 1.0
        if rounds[r]:
            x[n, stacks + rounds[r] - 1] = 1.0
        if extra:
            x[n, width + (i if slopes == "per-stack" else 0)] = centred[n]
    target = np.array([a for _, _, a, _ in rows])
    coef, *_ = np.linalg.lstsq(x, target, rcond=None)
    rss = float(((target - x @ coef) ** 2).sum())
    found = coef[width:].tolist()
    by_stack = {s: found[i if slopes == "per-stack" else 0] for i, s in enumerate(names)} if extra else {}
    return Fit(rss, len(rows) - int(np.linalg.matrix_rank(x)), by_stack)


def main(argv: list[str]) -> int:
    results = stored_run(argv, "slope_by_stack.py")
    if results is None:
        return 2
    verdict = headline_verdict(results)
    y, z = (None, None) if verdict is None else (per_round_rps(verdict.cells),
                                                  per_round_rps(verdict.cells, "reference_unit_ns"))
    if y is None or z is None or not any(v for vals in z.values() for v in vals):
        print(f"{results.run_id}: no headline measured in interleaved rounds with the speed probe")
        return 1
    none, one, each = (fit(y, z, how) for how in ("none", "one", "per-stack"))
    extra = one.df - each.df
    f_value = ((one.rss - each.rss) / extra) / (each.rss / each.df) if extra > 0 and each.df > 0 else math.nan
    spread = np.percentile(list(each.slopes.values()), [10, 90])
    print(f"{results.run_id}: the headline's {len(y)} stacks, residual sd without the probe {none.sd:.3f} "
          f"({none.df} df); one slope {one.sd:.3f} (β {one.slopes[next(iter(one.slopes))]:+.2f}); a slope per stack "
          f"{each.sd:.3f} ({each.df} df), the middle 80 % of them {spread[0]:+.2f} … {spread[1]:+.2f}; the slopes "
          f"differ: F {f_value:.2f} on {extra} and {each.df} df, p {f_distribution.sf(f_value, extra, each.df):.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
