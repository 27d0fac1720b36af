#!/usr/bin/env python3
"""How long a freshly started stack takes to reach its steady rate, loaded back to back or in visits with gaps.

The interleaved rounds assume every stack is at its own steady level from round 1 on; a stack whose rate still
climbs then (a JIT compiling while the rounds run) breaks that. For each stack and arm the stack is started
afresh (scripts/measurer_overhead.py's `start_stack`: its own database, pinned, accounted), then loaded with
perf-test rows=1 at 50 VUs in oha runs of `--visit-s` each until `--load-s` seconds of load have been given:

- `back-to-back`: the visits follow each other at once (the warm-up's one-second windows, as warmup.py runs them);
- `gapped`: `--gap-s` seconds without load after every visit (a stack's life in the interleaved rounds, where it
  idles while the other stacks are measured).

It prints, per stack and arm, the 2xx/s of every `--bin-s` seconds of load relative to the last bin, and when
(in seconds of load and of wall time) the rate first came within 10 % of the last bin's and stayed there.

With `--prewarm-s` the stack is first given that much perf-test rows=1 load, in the arm's visits, not counted
(the headline's warm-up), and the curves are then of each of `--workloads` in turn (`users=20`: a workload and
its parameter): whether a workload after the first reads cold, as the tables after the headline, warmed a second
each, would measure it.

    .venv/bin/python scripts/warmup_curve.py --stacks java-spring-mvc-jdbc,go-nethttp-pgx --load-s 120
    .venv/bin/python scripts/warmup_curve.py --stacks java-spring-mvc-jdbc --arms gapped --prewarm-s 60 \
        --workloads users=20,perf-post=10 --load-s 30 --bin-s 3

A user's mistake (unknown stack, oha missing) is one line and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measurer_overhead as mo  # noqa: E402  (a script beside this one)
from window_shape import Oha, harness  # noqa: E402

from pgarena.contract import workloads as wl  # noqa: E402
from pgarena.db.data import load_workload_data  # noqa: E402

ARMS = ("back-to-back", "gapped")
WITHIN = 0.10
"""A curve has arrived once every later bin is within this of its last bin."""


def bin_rates(visits: list[tuple[float, int]], bin_s: float) -> list[float]:
    """2xx/s per `bin_s` seconds of load, from (load seconds of the visit, its 2xx answers) in order; a bin is
    the visits whose load began in it (a partial last bin is dropped)."""
    out: list[float] = []
    seconds = answered = 0.0
    for load_s, count in visits:
        seconds += load_s
        answered += count
        if seconds >= bin_s - 1e-9:
            out.append(answered / seconds)
            seconds = answered = 0.0
    return out


def arrival(rates: list[float], within: float = WITHIN) -> int | None:
    """Index of the first bin from which every bin lies within ±`within` of the last one; None if none but it."""
    if not rates:
        return None
    last = rates[-1]
    first = len(rates) - 1
    for i in range(len(rates) - 1, -1, -1):
        if abs(rates[i] / last - 1) > within:
            break
        first = i
    return first if first < len(rates) - 1 else None


def visits_of(oha: Oha, arm: str, args: argparse.Namespace, load_s: float, stem: str) -> tuple[list, list]:
    """`load_s` seconds of the arm's visits: (load seconds, 2xx answers) of each, and the wall time after each."""
    visits: list[tuple[float, int]] = []
    walls: list[float] = []
    started = time.monotonic()
    given = 0.0
    while given < load_s - 1e-9:
        _t, ends = oha.run(args.visit_s, f"{stem}{len(visits)}")
        visits.append((args.visit_s, sum(1 for e in ends if e < args.visit_s)))
        given += args.visit_s
        walls.append(time.monotonic() - started)
        if arm == "gapped":
            time.sleep(args.gap_s)
    return visits, walls


def curves(stack: str, arm: str, args: argparse.Namespace) -> list[dict]:
    """One started stack: its `--prewarm-s` of perf-test (not counted), then a curve of each of `--workloads`."""
    out = []
    with ExitStack() as scope:
        h = harness(scope, stack)
        load_workload_data(h.db, [workload for workload, _ in args.workloads])  # the harness loads perf-test's
        if args.prewarm_s > 0:
            visits_of(Oha(h, h.workdir / "prewarm"), arm, args, args.prewarm_s, "p")
        for workload, parameter in args.workloads:
            visits, walls = visits_of(Oha(h, h.workdir / "curve", workload, parameter), arm, args, args.load_s, "v")
            out.append(report(stack, arm, f"{workload}={parameter}" if parameter is not None else workload,
                              visits, walls, args))
    return out


def report(stack: str, arm: str, workload: str, visits: list, walls: list, args: argparse.Namespace) -> dict:
    rates = bin_rates(visits, args.bin_s)
    if not rates or rates[-1] <= 0:
        print(f"{stack} {arm} {workload}: no 2xx answers in its last bin", flush=True)
        return {"stack": stack, "arm": arm, "workload": workload, "visits": visits, "wall_s": walls,
                "bin_rates": rates, "arrived_bin": None}
    first = arrival(rates)
    per_bin = round(args.bin_s / args.visit_s)
    at_wall = walls[first * per_bin] if first is not None and first * per_bin < len(walls) else None
    rel = [r / rates[-1] for r in rates]
    label = f"{stack} {arm}" + (f" {workload}" if args.prewarm_s > 0 or len(args.workloads) > 1 else "")
    print(f"{label}: " + " ".join(f"{v:.2f}" for v in rel)
          + f"  (last bin {rates[-1]:,.0f} 2xx/s; within ±{WITHIN:.0%} of it from "
          + (f"{first * args.bin_s:g} s of load, {at_wall:.0f} s of wall time)" if first is not None else "its last bin only)"),
          flush=True)
    return {"stack": stack, "arm": arm, "workload": workload, "visits": visits, "wall_s": walls, "bin_rates": rates,
            "arrived_bin": first}


def workload_list(text: str) -> list[tuple[str, int | None]]:
    """'users=20,perf-post=10,static' → [(users, 20), (perf-post, 10), (static, None)]."""
    out = []
    for item in (x for x in text.split(",") if x):
        name, _, value = item.partition("=")
        if name not in wl.WORKLOAD_NAMES or not (value.isdigit() or not value):
            raise mo.UsageError(f"unknown workload {item!r}: a workload of {', '.join(wl.WORKLOAD_NAMES)}, "
                                "then =its parameter where it has one")
        out.append((name, int(value) if value else None))
    return out


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stacks", required=True, type=lambda s: [x for x in s.split(",") if x])
    p.add_argument("--arms", default=",".join(ARMS), type=lambda s: [x for x in s.split(",") if x])
    p.add_argument("--load-s", type=float, default=120.0, help="seconds of load per stack and arm")
    p.add_argument("--visit-s", type=float, default=1.0, help="seconds of one oha run")
    p.add_argument("--gap-s", type=float, default=4.0, help="gapped arm: idle seconds after each visit")
    p.add_argument("--bin-s", type=float, default=10.0, help="seconds of load per printed bin")
    p.add_argument("--prewarm-s", type=float, default=0.0,
                   help="seconds of perf-test rows=1 load, in the arm's visits, before the curves (not counted)")
    p.add_argument("--workloads", default=f"{wl.PERF_TEST}=1",
                   help="the curves' workloads, in turn on one started stack: users=20,perf-post=10 "
                        "(default perf-test=1)")
    p.add_argument("--out", type=Path, default=Path("warmup-curve.json"))
    args = p.parse_args(argv)
    try:
        if unknown := [a for a in args.arms if a not in ARMS]:
            raise mo.UsageError(f"unknown arm {unknown[0]!r}: choose from {', '.join(ARMS)}")
        if (not 0 < args.visit_s <= args.bin_s <= args.load_s or args.gap_s < 0 or args.load_s > 1800
                or not 0 <= args.prewarm_s <= 1800):
            raise mo.UsageError("need 0 < --visit-s <= --bin-s <= --load-s <= 1800, --gap-s >= 0 and "
                                "0 <= --prewarm-s <= 1800")
        args.workloads = workload_list(args.workloads)
        results = [c for stack in args.stacks for arm in args.arms for c in curves(stack, arm, args)]
    except mo.UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.out.write_text(json.dumps({"args": {k: v for k, v in vars(args).items() if k != "out"},
                                    "curves": results}, indent=1))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
