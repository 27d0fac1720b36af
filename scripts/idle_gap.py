#!/usr/bin/env python3
"""Does a stack read slower after a long idle gap than after a short one? (docs/methodology.md, "The idle gap".)

In interleaved rounds a stack waits for every other stack's window before its next one: about 37 s at 22 stacks
(1.7 s a window), about 2 s at two. A pool that closes connections idle for longer than the gap (node-postgres'
`pg.Pool` closes them after 10 s by default) starts every window of a long gap on new connections. Per stack (started
as `pgarena run` starts it, scripts/measurer_overhead.py's `start_stack`, warmed 8 s), `--pairs` pairs of visits in a
random order, one after `--short-s` of idle and one after `--long-s`, each visit one oha run of perf-test rows=1 at 50
VUs of the lead-in plus the window, as pgarena's window (0.5 s + 1 s; --lead-s, --window-s); it prints the
window's 2xx/s after each gap, the mean log ratio long/short with its standard error, the stack's major page faults
(pages read back from disk) in a visit, and each gap's 2xx per bin (0.1 s, --bin-s) relative to the short gaps' window.

    .venv/bin/python scripts/idle_gap.py --stacks node-express-pg,node-express-postgresjs --pairs 8 --long-s 20

A user's mistake (unknown stack, oha missing) is one line and exit code 2.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
import window_shape as ws  # noqa: E402  (a script beside this one)

LEAD_S, WINDOW_S, BIN_S = 0.5, 1.0, 0.1
"""pgarena's bench lead-in and window (the defaults of --lead-s and --window-s), and the profile's bin."""


def major_faults(pid: int) -> int:
    """Major page faults (a page read back from disk) of the stack's process tree so far (/proc/<pid>/stat)."""
    total = 0
    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    for proc in tree:
        try:
            total += int(Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[9])
        except (OSError, IndexError, ValueError):
            continue
    return total


def visit(oha: ws.Oha, pid: int, stem: str, lead_s: float, window_s: float,
          bin_s: float) -> tuple[float, list[int], int]:
    """One lead-in + window: the window's 2xx/s, the run's 2xx per bin and the stack's major faults in it."""
    faults = major_faults(pid)
    _, ends = oha.run(lead_s + window_s, stem)
    return (ws.counts_between(ends, lead_s, lead_s + window_s) / window_s, ws.bins(ends, lead_s + window_s, bin_s),
            major_faults(pid) - faults)


def measure(scope: ExitStack, stack: str, args: argparse.Namespace, rng: random.Random) -> None:
    h = ws.harness(scope, stack)
    oha = ws.Oha(h, Path(args.workdir) / stack)
    oha.run(8.0, "warm")
    rates: dict[str, list[float]] = {"short": [], "long": []}
    profiles: dict[str, list[list[int]]] = {"short": [], "long": []}
    faults: dict[str, list[int]] = {"short": [], "long": []}
    for p in range(args.pairs):
        for kind in rng.sample(["short", "long"], 2):
            time.sleep(args.short_s if kind == "short" else args.long_s)
            rate, profile, majors = visit(oha, h.server.pid, f"{kind}{p}", args.lead_s, args.window_s, args.bin_s)
            rates[kind].append(rate)
            profiles[kind].append(profile)
            faults[kind].append(majors)
        print(f"{stack}: pair {p + 1}/{args.pairs}", file=sys.stderr, flush=True)
    logs = [math.log(lo / sh) for lo, sh in zip(rates["long"], rates["short"]) if lo > 0 and sh > 0]
    mean, se = statistics.mean(logs), statistics.stdev(logs) / math.sqrt(len(logs))
    steady = statistics.mean(rates["short"]) * args.bin_s
    print(f"{stack}: 2xx/s after {args.short_s:g} s idle {statistics.median(rates['short']):,.0f}, after "
          f"{args.long_s:g} s {statistics.median(rates['long']):,.0f} (medians); ln(long/short) {mean:+.3f} ± {se:.3f}; "
          f"major page faults a visit {statistics.median(faults['short']):g} and {statistics.median(faults['long']):g}")
    for kind in ("short", "long"):
        bins = [statistics.mean(run[i] for run in profiles[kind]) / steady for i in range(len(profiles[kind][0]))]
        print(f"  {kind:>5} gap, per {args.bin_s:g} s bin (lead-in, then window): "
              + " ".join(f"{b:.2f}" for b in bins))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stacks", type=lambda v: v.split(","), required=True)
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--short-s", type=float, default=2.0)
    parser.add_argument("--long-s", type=float, default=20.0)
    parser.add_argument("--lead-s", type=float, default=LEAD_S, help="uncounted load before the window")
    parser.add_argument("--window-s", type=float, default=WINDOW_S, help="the counted window")
    parser.add_argument("--bin-s", type=float, default=BIN_S, help="the profile's bin")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", default="/tmp/idle-gap")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    for stack in args.stacks:
        try:
            with ExitStack() as scope:
                measure(scope, stack, args, rng)
        except ws.mo.UsageError as exc:  # start_stack's refusal (unknown stack, oha missing): one line
            print(exc, file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
