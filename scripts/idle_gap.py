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

`--interleaved` starts every stack at once and takes them in cycles, as a wide headline does: per cycle, each stack in
a random order gets a visit after at least `--long-s` without load (the other stacks' visits fill the gap), then
`--short-s` later a second one; the pair's ln(long/short) is the drop. It prints each stack's mean drop with its
standard error, and each runtime's (the stack id's first word: go, rust, python, bun, node, java), pooled with random
effects (`pooled`), which is what a runtime's declaration of no drop (a stack.toml's `[run] idle_rewarm = false`) rests
on.

    .venv/bin/python scripts/idle_gap.py --interleaved --cycles 12 --long-s 45 \
        --stacks go-nethttp-pgx,rust-actix-tokiopg,python-django,bun-postgresjs,node-express-pg

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

NO_DROP = 0.05
"""A runtime may go without the idle re-warm where the 95 % interval of its pooled ln(long/short) lies above −0.05."""
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


def started(scope: ExitStack, stack: str, workdir: str) -> tuple[ws.Oha, int]:
    """The stack started as `pgarena run` starts it and warmed 8 s: its generator and its server's pid."""
    h = ws.harness(scope, stack)
    oha = ws.Oha(h, Path(workdir) / stack)
    oha.run(8.0, "warm")
    return oha, h.server.pid


def measure(scope: ExitStack, stack: str, args: argparse.Namespace, rng: random.Random) -> None:
    oha, pid = started(scope, stack, args.workdir)
    rates: dict[str, list[float]] = {"short": [], "long": []}
    profiles: dict[str, list[list[int]]] = {"short": [], "long": []}
    faults: dict[str, list[int]] = {"short": [], "long": []}
    for p in range(args.pairs):
        for kind in rng.sample(["short", "long"], 2):
            time.sleep(args.short_s if kind == "short" else args.long_s)
            rate, profile, majors = visit(oha, pid, f"{kind}{p}", args.lead_s, args.window_s, args.bin_s)
            rates[kind].append(rate)
            profiles[kind].append(profile)
            faults[kind].append(majors)
        print(f"{stack}: pair {p + 1}/{args.pairs}", file=sys.stderr, flush=True)
    logs = [math.log(lo / sh) for lo, sh in zip(rates["long"], rates["short"]) if lo > 0 and sh > 0]
    mean, se = mean_se(logs)
    steady = statistics.mean(rates["short"]) * args.bin_s
    print(f"{stack}: 2xx/s after {args.short_s:g} s idle {statistics.median(rates['short']):,.0f}, after "
          f"{args.long_s:g} s {statistics.median(rates['long']):,.0f} (medians); ln(long/short) {mean:+.3f} ± {se:.3f}; "
          f"major page faults a visit {statistics.median(faults['short']):g} and {statistics.median(faults['long']):g}")
    for kind in ("short", "long"):
        bins = [statistics.mean(run[i] for run in profiles[kind]) / steady for i in range(len(profiles[kind][0]))]
        print(f"  {kind:>5} gap, per {args.bin_s:g} s bin (lead-in, then window): "
              + " ".join(f"{b:.2f}" for b in bins))


def runtime_of(stack: str) -> str:
    """A stack id's runtime family: its first word (go-nethttp-pgx → go; seed000-go-pgx → go)."""
    words = stack.split("-")
    return words[1] if words[0].startswith("seed") and len(words) > 1 else words[0]


def mean_se(values: list[float]) -> tuple[float, float]:
    """The mean and its standard error (inf with one value)."""
    if len(values) < 2:
        return (values[0] if values else math.nan), math.inf
    return statistics.mean(values), statistics.stdev(values) / math.sqrt(len(values))


def pooled(estimates: list[tuple[float, float]]) -> tuple[float, float, float]:
    """The random-effects pooled mean, its standard error and the between-stack sd τ of (mean, se) estimates with a
    finite, non-zero se (DerSimonian and Laird, Controlled Clinical Trials 1986: τ² from Cochran's Q, each weight
    1 / (se² + τ²); with τ = 0 the inverse-variance mean). Stacks of one runtime differing by more than their own
    errors say so in τ, and the runtime's mean is then only as sure as that spread allows."""
    usable = [(m, se) for m, se in estimates if math.isfinite(se) and se > 0]
    if not usable:
        return math.nan, math.inf, math.nan
    weights = [1 / se ** 2 for _, se in usable]
    fixed = sum(w * m for w, (m, _) in zip(weights, usable)) / sum(weights)
    q = sum(w * (m - fixed) ** 2 for w, (m, _) in zip(weights, usable))
    scale = sum(weights) - sum(w ** 2 for w in weights) / sum(weights)
    tau2 = max(0.0, (q - (len(usable) - 1)) / scale) if scale > 0 else 0.0
    weights = [1 / (se ** 2 + tau2) for _, se in usable]
    mean = sum(w * m for w, (m, _) in zip(weights, usable)) / sum(weights)
    return mean, math.sqrt(1 / sum(weights)), math.sqrt(tau2)


def interleaved(scope: ExitStack, args: argparse.Namespace, rng: random.Random) -> dict[str, list[float]]:
    """Every stack up at once, in cycles: a visit after a long gap, then one after a short gap (see the docstring)."""
    ohas, pids = {}, {}
    for stack in args.stacks:
        ohas[stack], pids[stack] = started(scope, stack, args.workdir)
    last = {stack: time.monotonic() for stack in args.stacks}
    drops: dict[str, list[float]] = {stack: [] for stack in args.stacks}
    for cycle in range(args.cycles):
        for stack in rng.sample(args.stacks, len(args.stacks)):
            wait = args.long_s - (time.monotonic() - last[stack])
            if wait > 0:
                time.sleep(wait)
            long_rate, _, _ = visit(ohas[stack], pids[stack], f"long{cycle}", args.lead_s, args.window_s, args.bin_s)
            time.sleep(args.short_s)
            short_rate, _, _ = visit(ohas[stack], pids[stack], f"short{cycle}", args.lead_s, args.window_s, args.bin_s)
            last[stack] = time.monotonic()
            if long_rate > 0 and short_rate > 0:
                drops[stack].append(math.log(long_rate / short_rate))
        print(f"cycle {cycle + 1}/{args.cycles}", file=sys.stderr, flush=True)
    return drops


def print_drops(drops: dict[str, list[float]], long_s: float) -> None:
    """Each stack's and each runtime's ln(window after the long gap / after the short one)."""
    by_runtime: dict[str, list[tuple[float, float]]] = {}
    for stack, values in drops.items():
        mean, se = mean_se(values)
        by_runtime.setdefault(runtime_of(stack), []).append((mean, se))
        print(f"{stack}: ln(after ≥{long_s:g} s idle / after the short gap) {mean:+.3f} ± {se:.3f} "
              f"({len(values)} pairs)")
    for runtime, estimates in by_runtime.items():
        mean, se, tau = pooled(estimates)
        low = mean - 1.96 * se
        verdict = ("no drop of 5 % or more" if low > -NO_DROP else "a drop of 5 % or more not excluded")
        print(f"runtime {runtime}: {mean:+.3f} ± {se:.3f} (random effects over {len(estimates)} stack(s), "
              f"between-stack sd {tau:.3f}); 95 % from {low:+.3f}: {verdict}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stacks", type=lambda v: v.split(","), required=True)
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--interleaved", action="store_true", help="every stack up at once, visited in cycles")
    parser.add_argument("--cycles", type=int, default=12, help="with --interleaved: pairs per stack")
    parser.add_argument("--short-s", type=float, default=2.0)
    parser.add_argument("--long-s", type=float, default=20.0)
    parser.add_argument("--lead-s", type=float, default=LEAD_S, help="uncounted load before the window")
    parser.add_argument("--window-s", type=float, default=WINDOW_S, help="the counted window")
    parser.add_argument("--bin-s", type=float, default=BIN_S, help="the profile's bin")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", default="/tmp/idle-gap")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    try:
        if args.interleaved:
            with ExitStack() as scope:
                print_drops(interleaved(scope, args, rng), args.long_s)
        else:
            for stack in args.stacks:
                with ExitStack() as scope:
                    measure(scope, stack, args, rng)
    except ws.mo.UsageError as exc:  # start_stack's refusal (unknown stack, oha missing): one line
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
