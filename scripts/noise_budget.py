"""The noise budget of a stored run (pgarena.analysis.noise): per table of cells measured in interleaved
rounds and pooled over the run, the per-window log-sd and the round factor's sd, before and after the
reference probe's adjustment (β and the residuals' correlation); where the run read them, the same again with the
probe's reading of the idle gaps around each window instead of the window's own (speedprobe.SpeedProbe.load_starts).

    PYTHONPATH=src .venv/bin/python scripts/noise_budget.py results/<run-id>
"""

from __future__ import annotations

import sys
from pathlib import Path

from pgarena.analysis import probecheck
from pgarena.analysis.noise import budget_line, run_noise
from pgarena.analysis.ranking import headline_key
from pgarena.analysis.verdicts import TableVerdict, run_verdicts
from pgarena.results.models import RunResults
from pgarena.results.store import ResultsError, load


def stored_run(argv: list[str], script: str) -> RunResults | None:
    """The run whose folder is the one argument, or None after one line on stderr: the usage, or why it could not be
    read (the caller exits 2). Shared by the scripts that read a stored run (headline_reach.py, later_climb.py)."""
    if len(argv) != 1:
        print(f"usage: {script} RESULTS_DIR (a run folder with results.json)", file=sys.stderr)
        return None
    try:
        return load(Path(argv[0]))
    except ResultsError as exc:
        print(exc, file=sys.stderr)
        return None


def headline_verdict(results: RunResults) -> TableVerdict | None:
    """The verdict of the run's headline: the report's first table (ranking.headline_key) among those judged in
    interleaved rounds, not the first in results.json — a cell that failed verification is stored when planned,
    before the headline's (bench21, 2026-11-29: users came first); None when no table was judged so."""
    headline = headline_key(results.cells, results.config.get("workloads"))
    paired = [v for v in run_verdicts(results).values() if v.inference is not None and v.pairs]
    return next((v for v in paired if v.cells[0].key[1:] == headline), paired[0] if paired else None)


def shift_method(argv: list[str]) -> tuple[str | None, list[str]]:
    """`--shifts METHOD` taken out of argv: (METHOD, the rest); the verdict's own method when the option is absent,
    None when it names none of `probecheck.SHIFT_ESTIMATES` (the caller prints its usage and exits 2). Shared by the
    scripts that re-judge with another guess of the probe's shift by stack (headline_reach.py, probe_shift_sim.py)."""
    if "--shifts" not in argv[:-1]:
        return probecheck.SHIFT_ESTIMATE, argv
    at = argv.index("--shifts")
    method = argv[at + 1]
    return (method if method in probecheck.SHIFT_ESTIMATES else None), argv[:at] + argv[at + 2:]


def main(argv: list[str]) -> int:
    results = stored_run(argv, "noise_budget.py")
    if results is None:
        return 2
    tables, pooled = run_noise(results)
    if pooled is None:
        print(f"{results.run_id}: no table was measured in interleaved rounds; no noise budget")
        return 1
    gap_tables, gap_pooled = run_noise(results, gaps=True)
    gaps = dict(gap_tables) if gap_pooled is not None and gap_pooled.beta is not None else {}
    print(f"noise budget of {results.run_id} (ln 2xx/s per window; two-way fit stack + round)")
    for label, budget in tables:
        print(f"  {label}: {budget_line(budget)}")
        if gaps.get(label) is not None and gaps[label].beta is not None:
            print(f"    instead by the idle gaps around each window: {budget_line(gaps[label], 'the gaps')}")
    print(f"  pooled over {len(tables)} table(s): {budget_line(pooled)}")
    if gap_pooled is not None and gaps:
        print(f"    instead by the idle gaps around each window: {budget_line(gap_pooled, 'the gaps')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
