#!/usr/bin/env python3
"""What the reference speed probe costs the stack it measures (system/speedprobe.py).

One stack is built and started as `pgarena run` does it (measurer_overhead.start_stack: managed PostgreSQL
and the stack pinned to the server CPUs, cgroup CPU accounting where the kernel offers it). Then, in rounds
whose order is drawn from a seeded random generator, one window with the probe running on the server CPUs as a
run starts it (SCHED_FIFO where allowed; started before the warm-up, stopped after the window), one with the same
probe as a normal task (the probe before 2026-11-27) and one without, all through pgarena's measure path
(measure.measure_cell: warm-up, then one window). Prints per round the 2xx/s of each arm, the ratios between the
arms (a paired t-interval over the rounds: measurer_overhead.ratio_summary) and the probe's own CPU per second of
wall time (its process's user + system time from its first sample on).

    PYTHONPATH=src .venv/bin/python scripts/probe_cost.py --rounds 10
    PYTHONPATH=src .venv/bin/python scripts/probe_cost.py --stacks-dir tests/fixtures/stacks --stack fixture-good \\
        --engine k6 --rounds 2 --window-s 1 --warmup-s 1

A user's mistake (unknown stack, engine missing) is one line and exit code 2. Not a test: the lead runs it on
a quiet machine; it loads one CPU for minutes.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import psutil

from measurer_overhead import DEFAULT_SEED, UsageError, ratio_summary, start_stack  # scripts/, beside this file
from pgarena.contract import workloads as wl
from pgarena.db.postgres import PostgresError
from pgarena.load.engines.base import EngineOutputError
from pgarena.load.measure import measure_cell
from pgarena.results.models import Cell
from pgarena.system.process import NotReady
from pgarena.system.resources import CpuMeters
from pgarena.system.speedprobe import SpeedProbe

ARMS = ("probe", "normal probe", "no probe")
"""`probe` as a run starts it (SCHED_FIFO where allowed), `normal probe` the same as a normal task (the probe before
2026-11-27), `no probe`."""


@dataclass
class Window:
    """One measured window of one arm."""

    round: int
    arm: str
    rps: float
    reference_unit_ns: float | None = None
    reference_samples: int = 0
    probe_cpu_per_s: float | None = None
    """The probe process's CPU seconds per wall second from its first sample to the end of the window
    (warm-up and window; its interpreter's start-up left out)."""


def _probe_cpu(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def measure(h, cell: Cell, round_no: int, arm: str) -> Window:
    """One warm-up and window of `cell` through measure_cell, with the probe beside it (real-time for arm 'probe', a
    normal task for 'normal probe'; none for 'no probe')."""
    with ExitStack() as scope:
        probe = (scope.enter_context(SpeedProbe(h.config.server_cpus, real_time=arm == "probe"))
                 if arm != "no probe" else None)
        deadline = time.monotonic() + 10
        while probe is not None and not probe.samples() and time.monotonic() < deadline:
            time.sleep(0.02)  # its interpreter's start-up is not the probe's steady cost
        started, cpu_before = time.monotonic(), _probe_cpu(probe.pid) if probe else 0.0
        measured = cell.model_copy(deep=True)
        measure_cell(measured, engine=h.engine_for[cell.engine], config=h.config, db=h.db, server=h.server,
                     base_url=h.base_url, run_dir=h.workdir / f"{arm.replace(' ', '-')}-r{round_no}", routes=h.routes,
                     log=lambda _line: None, cpu=CpuMeters(h.meters, h.cpu.source, probe=probe))
        cost = (_probe_cpu(probe.pid) - cpu_before) / (time.monotonic() - started) if probe else None
    rep = measured.repetitions[0]
    return Window(round_no, arm, rep.rps, rep.reference_unit_ns, rep.reference_samples, cost)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stack", default="go-nethttp-pgx")
    p.add_argument("--stacks-dir", type=Path, default=None, help="folder of stack definitions (default: stacks/)")
    p.add_argument("--engine", choices=["oha", "k6"], default="oha")
    p.add_argument("--workload", default=wl.PERF_TEST, choices=[wl.PERF_TEST, wl.USERS, wl.STATIC])
    p.add_argument("--parameter", type=int, default=1, help="perf-test rows / users limit")
    p.add_argument("--vus", type=int, default=50)
    p.add_argument("--rounds", type=int, default=10, help="rounds of one window per arm")
    p.add_argument("--window-s", type=float, default=5.0)
    p.add_argument("--warmup-s", type=float, default=2.0)
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--out", type=Path, default=Path("probe-cost.json"))
    args = p.parse_args(argv)
    if args.rounds < 2 or args.window_s < 1 or args.warmup_s < 1 or args.vus < 1:
        raise UsageError("--rounds must be at least 2, --window-s and --warmup-s at least 1 s, --vus at least 1")
    return args


def main(argv: list[str]) -> int:
    try:
        args = parse_args(argv)
        windows: list[Window] = []
        with ExitStack() as scope:
            h = start_stack(scope, args, [args.engine])
            psutil.Process().cpu_affinity(list(h.config.generator_cpus))
            cell = Cell(stack=args.stack, workload=args.workload, parameter_name=wl.PARAMETER_NAMES[args.workload],
                        parameter=args.parameter if args.workload in (wl.PERF_TEST, wl.USERS) else None,
                        vus=args.vus, engine=args.engine, warmup_seconds=args.warmup_s, duration_seconds=args.window_s)
            rng = random.Random(args.seed)
            for round_no in range(1, args.rounds + 1):
                for arm in rng.sample(ARMS, len(ARMS)):
                    windows.append(measure(h, cell, round_no, arm))
                    w = windows[-1]
                    print(f"round {round_no} {arm}: {w.rps:,.0f} 2xx/s"
                          + (f", unit {w.reference_unit_ns / 1000:.0f} µs ({w.reference_samples} samples), probe "
                             f"CPU {w.probe_cpu_per_s:.2%} of a CPU" if w.reference_unit_ns and w.probe_cpu_per_s
                             is not None else ""), file=sys.stderr)
    except UsageError as exc:
        print(f"probe_cost: {exc}", file=sys.stderr)
        return 2
    except (PostgresError, NotReady, EngineOutputError) as exc:
        print(f"probe_cost: {exc}", file=sys.stderr)
        return 1
    by_arm = {arm: sorted((w for w in windows if w.arm == arm), key=lambda w: w.round) for arm in ARMS}
    costs = [w.probe_cpu_per_s for w in by_arm["probe"] if w.probe_cpu_per_s is not None]
    ratios = {}
    for top, bottom in (("probe", "no probe"), ("normal probe", "no probe"), ("probe", "normal probe")):
        ratio = ratios[f"{top} / {bottom} 2xx/s"] = ratio_summary([w.rps for w in by_arm[top]],
                                                                  [w.rps for w in by_arm[bottom]])
        print(f"{top} / {bottom} 2xx/s per round: {', '.join(f'{r:.3f}' for r in ratio['per_round'])}")
        if "ci95_low" in ratio:
            print(f"  mean {ratio['mean']:.3f}, 95 % paired interval {ratio['ci95_low']:.3f}–{ratio['ci95_high']:.3f} "
                  f"over {len(ratio['per_round'])} rounds (median {ratio['median']:.3f})")
    if costs:
        print(f"the probe's own CPU: median {statistics.median(costs):.2%} of one CPU (range "
              f"{min(costs):.2%}–{max(costs):.2%})")
    args.out.write_text(json.dumps({
        "stack": args.stack, "workload": args.workload, "parameter": args.parameter, "vus": args.vus,
        "engine": args.engine, "rounds": args.rounds, "window_seconds": args.window_s, "seed": args.seed,
        "ratios": ratios,
        "probe_cpu_per_second": costs, "windows": [w.__dict__ for w in windows]}, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
