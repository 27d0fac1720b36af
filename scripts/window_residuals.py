"""Which headline windows the speed probe leaves unexplained: the residuals of ln 2xx/s after the verdict's fit
(stack + round + β·ln probe reading) of a stored run's headline table (perf-test, 1 row), against when and where
the windows ran. Research tooling (docs/methodology.md, "What the probe leaves").

    .venv/bin/python scripts/window_residuals.py results/<run-id>

Prints the residual sd, its correlation with the seconds since the same stack's previous window, with the slot gap
and with the time into the round, the residuals' autocorrelation in time order, the twelve slowest windows, each
stack's first eight residuals against the mean of its later ones (a stack still warming up, or slowing down, shows
a trend there), the residual sd of rounds 1–5 against the later ones, and (runs that record it, from 2026-11-29 on)
the mean residual by the stack's time without load before the window (0–15 s, 15–35 s, more: contract/idle.py's
thresholds) for each runtime, the stack id's first word. Window times are the mtimes of the raw generator outputs.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not (Path(argv[0]) / "results.json").is_file():
        print("usage: window_residuals.py RESULTS_DIR (a run folder with results.json)", file=sys.stderr)
        return 2
    import numpy as np

    run = Path(argv[0])
    results = json.loads((run / "results.json").read_text())
    rows = [dict(stack=c["stack"], round=rep["round"], y=math.log(rep["rps"]), z=math.log(rep["reference_unit_ns"]),
                 t=os.path.getmtime(run / rep["raw_output"]), idle=rep.get("idle_seconds"))
            for c in results["cells"] if c["workload"] == "perf-test" and c.get("parameter") == 1
            for rep in c["repetitions"]
            if rep.get("rps") and rep.get("round") is not None and rep.get("reference_unit_ns")]
    if len(rows) < 10:
        print(f"{run}: fewer than 10 headline windows with a probe reading", file=sys.stderr)
        return 1
    stacks, rounds, n = sorted({x["stack"] for x in rows}), sorted({x["round"] for x in rows}), len(rows)
    design = np.zeros((n, len(stacks) + len(rounds) + 1))
    for i, x in enumerate(rows):
        design[i, stacks.index(x["stack"])] = design[i, len(stacks) + rounds.index(x["round"])] = 1
        design[i, -1] = x["z"]
    y = np.array([x["y"] for x in rows])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    e = y - design @ coef
    order = sorted(range(n), key=lambda i: rows[i]["t"])
    gap_stack, gap_any, into_round = np.full(n, np.nan), np.full(n, np.nan), np.zeros(n)
    last, first_of_round, previous = {}, {}, None
    for i in order:
        x = rows[i]
        if x["stack"] in last:
            gap_stack[i] = x["t"] - last[x["stack"]]
        last[x["stack"]] = x["t"]
        if previous is not None:
            gap_any[i] = x["t"] - previous
        previous = x["t"]
        into_round[i] = x["t"] - first_of_round.setdefault(x["round"], x["t"])

    def r(a: np.ndarray) -> float:
        keep = ~np.isnan(a)
        return float(np.corrcoef(a[keep], e[keep])[0, 1])

    timed = e[order]
    print(f"{n} windows, {len(stacks)} stacks, {len(rounds)} rounds; residual sd {e.std():.3f} (β {coef[-1]:+.2f})")
    print(f"r with seconds since the stack's previous window {r(gap_stack):+.2f} (median {np.nanmedian(gap_stack):.1f} s); "
          f"with the slot gap {r(gap_any):+.2f}; with the time into the round {r(into_round):+.2f}")
    print(f"autocorrelation in time order: lag 1 {np.corrcoef(timed[:-1], timed[1:])[0, 1]:+.2f}, "
          f"lag 2 {np.corrcoef(timed[:-2], timed[2:])[0, 1]:+.2f}")
    print("the twelve slowest windows:")
    for i in sorted(np.argsort(e)[:12], key=lambda i: rows[i]["t"]):
        print(f"  round {rows[i]['round']:3d} {rows[i]['stack']:36s} {e[i]:+.2f}")
    print("each stack's first eight residuals | the mean of the rest:")
    for stack in stacks:
        mine = [i for i in order if rows[i]["stack"] == stack]
        rest = f"{e[mine[8:]].mean():+.2f}" if len(mine) > 8 else "–"
        print(f"  {stack:36s} {' '.join(f'{e[i]:+.2f}' for i in mine[:8])} | {rest}")
    early = np.array([rows[i]["round"] <= 5 for i in range(n)])
    print(f"residual sd in rounds 1–5 {e[early].std():.3f} ({early.sum()} windows), later {e[~early].std():.3f} "
          f"({(~early).sum()})")
    idle_bands(rows, e)
    return 0


def idle_bands(rows: list[dict], e) -> None:
    """The mean residual ± its standard error by the stack's seconds without load before the window, per runtime."""
    if not any(x["idle"] is not None for x in rows):
        return
    bands = ((0.0, 15.0), (15.0, 35.0), (35.0, math.inf))
    print("mean residual by the stack's time without load before the window (n windows):")
    for runtime in sorted({x["stack"].split("-")[0] for x in rows}):
        cells = []
        for low, high in bands:
            mine = e[[i for i, x in enumerate(rows) if x["stack"].split("-")[0] == runtime and x["idle"] is not None
                      and low <= x["idle"] < high]]
            se = f" ± {mine.std(ddof=1) / math.sqrt(len(mine)):.3f}" if len(mine) > 1 else ""
            cells.append(f"{low:g}–{high:g} s: {mine.mean():+.3f}{se} ({len(mine)})" if len(mine) else
                         f"{low:g}–{high:g} s: –")
        print(f"  {runtime:8s} " + "; ".join(cells))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
