"""The warm-ups of a stored run, replayed under the steadiness rule with and without the speed probe.

    .venv/bin/python scripts/warmup_replay.py <run dir> [--workload perf-test]

For each cell of the workload (default: the headline's) whose warm-up recorded its windows, the seconds it took and
the window at which each rule (load/warmup.py `is_steady`: on the rate alone, and on the rate in units of the
probe's reading) first called it steady, at its least warm-up or later — ">N" where the warm-up ended first. Then,
turn by turn (the interleaved warm-up takes one window of each warming stack a turn), the median over the stacks of
each window's rate relative to the stack's last five, alone and times the probe's unit time relative to its last
five, and the mean of the other stacks' CPU in those windows: a common slow spell shows in the first and not in
the second.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pgarena.analysis.ranking import headline_key
from pgarena.load.warmup import WINDOW_S, is_steady
from pgarena.results.models import Cell

sys.path.insert(0, str(Path(__file__).resolve().parent))
from noise_budget import stored_run  # noqa: E402  (a script beside this one)


@dataclass(frozen=True)
class Replay:
    """One warm-up: its stack, the seconds it took, the windows each rule needed (None: not steady in its windows)."""

    stack: str
    seconds: float
    windows: int
    alone: int | None
    with_probe: int | None


def first_steady(rps: Sequence[float], units: Sequence[float | None] | None, least_windows: int) -> int | None:
    """The number of windows after which the rule first held, at `least_windows` or later (None: never)."""
    for n in range(max(1, least_windows), len(rps) + 1):
        if is_steady(list(rps[:n]), units_ns=None if units is None else list(units[:n])):
            return n
    return None


def replay(cells: Sequence[Cell]) -> list[Replay]:
    """Each warm-up with its windows' probe readings, replayed under both rules."""
    out = []
    for cell in cells:
        warm = cell.warmup
        if warm is None or warm.lead_in or not warm.windows_unit_ns:
            continue
        least = int(round(warm.minimum_seconds / WINDOW_S))
        out.append(Replay(cell.stack, warm.seconds, len(warm.windows_rps),
                          first_steady(warm.windows_rps, None, least),
                          first_steady(warm.windows_rps, warm.windows_unit_ns, least)))
    return out


def by_turn(cells: Sequence[Cell]) -> list[tuple[int, int, float, float | None, float | None]]:
    """(turn, stacks, median rate / its last five, the same times the probe's unit / its last five, mean others'
    CPU) for each turn of the warm-ups."""
    series = []
    for cell in cells:
        warm = cell.warmup
        if warm is None or warm.lead_in or len(warm.windows_rps) < 6:
            continue
        rate_ref = statistics.median(warm.windows_rps[-5:]) or 1.0
        units = warm.windows_unit_ns
        read = len(units) == len(warm.windows_rps) and all(u is not None for u in units[-5:])
        unit_ref = statistics.median(units[-5:]) if read else None  # type: ignore[type-var]
        series.append((warm.windows_rps, units if read else None, rate_ref, unit_ref, warm.windows_others_cpu))
    rows = []
    for turn in range(max((len(s[0]) for s in series), default=0)):
        here = [s for s in series if len(s[0]) > turn]
        rates = [s[0][turn] / s[2] for s in here]
        adjusted = [s[0][turn] / s[2] * s[1][turn] / s[3] for s in here
                    if s[1] is not None and s[3] and s[1][turn] is not None]
        others = [s[4][turn] for s in here if len(s[4]) > turn]
        rows.append((turn + 1, len(here), statistics.median(rates),
                     statistics.median(adjusted) if adjusted else None, statistics.fmean(others) if others else None))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--workload", help="the warm-ups of this workload's cells (default: the headline's)")
    args = parser.parse_args(argv)
    results = stored_run([str(args.run_dir)], "warmup_replay.py")
    if results is None:
        return 2
    if args.workload:
        cells = [c for c in results.cells if c.workload == args.workload]
    else:
        key = headline_key(results.cells, results.config.get("workloads"))
        cells = [c for c in results.cells if c.key[1:] == key]
    replays = replay(cells)
    if not replays:
        print("no warm-up with the probe's readings in this run (results from before they were recorded)")
        return 1
    print("stack | took | windows | steady, rate alone | steady, with the probe")
    for r in sorted(replays, key=lambda r: r.seconds):
        def shown(n: int | None) -> str:
            return f">{r.windows}" if n is None else str(n)
        print(f"{r.stack} | {r.seconds:.1f} s | {r.windows} | {shown(r.alone)} | {shown(r.with_probe)}")
    print("\nturn | stacks | median rate / last five | with the probe | others' CPU")
    for turn, stacks, rate, adjusted, others in by_turn(cells):
        print(f"{turn} | {stacks} | {rate:.2f} | {'–' if adjusted is None else f'{adjusted:.2f}'} | "
              f"{'–' if others is None else f'{others:.2f}'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
