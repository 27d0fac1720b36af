#!/usr/bin/env python3
"""Does pgarena's work around a window add to its scatter? pgarena's window against a bare one, side by side.

`scripts/measurer_overhead.py` asks whether pgarena's measuring lowers a stack's rate; this asks whether it
makes the rate scatter more, which is what the verdict pays for. One stack is started as `pgarena run` does
(measurer_overhead.start_stack), with pgarena's speed probe on the server CPUs for the whole run, warmed for
8 s once, then in rounds whose order is drawn from `--seed`:

- `pgarena`: one window exactly as an interleaved run takes it (`measure.measure_repetition` with the re-warm
  as the window's lead-in: the answer sampler, the resource samplers, pg_stat_statements read before and
  after, and the connection poller polling the stack's connections as the run does);
- `bare`: one oha run of the same argv (the cell's spec: its variant URLs) for lead-in + window, pinned to the generator CPUs, cut the same way
  (`Engine.parse_after_lead_in`), with none of that beside it.

It prints each arm's log-sd of 2xx/s over the rounds, raw and after the probe's correction (ln 2xx/s less
β·ln reading, β fitted over both arms), and the per-round log-ratio pgarena/bare (its mean: what pgarena costs
the rate; its sd against √2 × an arm's: whether the arms' noise is shared). An arm whose scatter is larger
than the other's by more than chance carries noise of its own.

    .venv/bin/python scripts/window_noise.py --rounds 60 --window-s 1
    .venv/bin/python scripts/window_noise.py --rounds 60 --window-s 0.5
    .venv/bin/python scripts/window_noise.py --rounds 60 --arms pgarena,bare,runner   # the runner alone, a third arm

A user's mistake (unknown stack, oha missing) is one line and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import subprocess
import sys
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measurer_overhead as mo  # noqa: E402  (a script beside this one)

from pgarena.contract import workloads as wl  # noqa: E402
from pgarena.db.connections import ConnectionPoller, TreeDbPorts  # noqa: E402
from pgarena.load.measure import measure_repetition, start_cell  # noqa: E402
from pgarena.load.engines.base import LoadSpec  # noqa: E402
from pgarena.load.window import load_spec  # noqa: E402
from pgarena.results.models import Cell  # noqa: E402
from pgarena.system.resources import CpuMeters  # noqa: E402
from pgarena.system.envelope import pinned_to  # noqa: E402
from pgarena.system.speedprobe import SpeedProbe  # noqa: E402

ARMS = ("pgarena", "bare")
RUNNER = "runner"
"""A third arm on request (--arms): the bare arm's argv run by pgarena's own runner (`children.run_measured`, its CPU
polled every 20 ms as a window's is) and none of pgarena's other work: whether the runner or the work around it
makes the pgarena arm differ from the bare one."""


def log_sd(values: list[float]) -> float:
    return statistics.stdev([math.log(v) for v in values])


def corrected(y: dict[str, list[float]], z: dict[str, list[float]]) -> tuple[dict[str, list[float]], float]:
    """ln y − β·ln z per arm, β the slope of ln y on ln z within arms (each arm's mean removed), and β."""
    ly = {a: [math.log(v) for v in vs] for a, vs in y.items()}
    lz = {a: [math.log(v) for v in vs] for a, vs in z.items()}
    dy = [v - statistics.fmean(ly[a]) for a in ly for v in ly[a]]
    dz = [v - statistics.fmean(lz[a]) for a in lz for v in lz[a]]
    beta = math.fsum(p * q for p, q in zip(dy, dz)) / math.fsum(q * q for q in dz)
    return {a: [p - beta * q for p, q in zip(ly[a], lz[a])] for a in ly}, beta


def summary(y: dict[str, list[float]], z: dict[str, list[float]]) -> dict:
    """Each arm's scatter, raw and after the probe, and every other arm's per-round log-ratio to bare (pgarena's
    also as log_ratio_mean and log_ratio_sd)."""
    adjusted, beta = corrected(y, z)
    vs_bare = {}
    for arm in [a for a in y if a != "bare"]:
        ratios = [math.log(p / b) for p, b in zip(y[arm], y["bare"])]
        vs_bare[arm] = {"mean": statistics.fmean(ratios), "sd": statistics.stdev(ratios),
                        "se": statistics.stdev(ratios) / math.sqrt(len(ratios))}
    return {"rounds": len(y["bare"]), "beta": beta,
            "log_sd": {a: log_sd(y[a]) for a in y},
            "log_sd_after_probe": {a: statistics.stdev(adjusted[a]) for a in y},
            "log_ratio_mean": vs_bare["pgarena"]["mean"], "log_ratio_sd": vs_bare["pgarena"]["sd"],
            "vs_bare": vs_bare}


def after_which(y: dict[str, list[float]], order: list[list[str]]) -> dict[str, dict[str, float]]:
    """arm → the arm measured just before it in its round ('first': none) → mean ln 2xx/s less its round's mean:
    whether what came before a window, not the arm itself, sets its rate."""
    found: dict[str, dict[str, list[float]]] = {}
    for r, arms in enumerate(order):
        mean = statistics.fmean(math.log(y[a][r]) for a in arms)
        for i, arm in enumerate(arms):
            found.setdefault(arm, {}).setdefault(arms[i - 1] if i else "first", []).append(math.log(y[arm][r]) - mean)
    return {arm: {before: statistics.fmean(v) for before, v in by.items()} for arm, by in found.items()}


def bare_window(h: mo.Harness, spec: LoadSpec, lead_in_s: float, window_s: float,
                stem: str, runner: bool = False) -> tuple[float, int, int]:
    """(2xx/s, monotonic ns when the window began, when it ended) of one bare oha run of `spec` (the cell's: its
    variant URLs) cut after its lead-in: started by `taskset` through `subprocess.run`, or with `runner` by
    pgarena's `run_measured` (its CPU sampled as a window's is)."""
    from pgarena.system.children import run_measured

    engine = h.engine_for["oha"]
    raw = h.workdir / (RUNNER if runner else "bare")
    raw.mkdir(exist_ok=True)
    argv = engine.command(replace(spec, duration_s=lead_in_s + window_s), raw, stem)
    stdout, stderr, timeout = raw / f"{stem}.stdout", raw / f"{stem}.stderr", lead_in_s + window_s + 60
    started = time.monotonic_ns()
    if runner:
        run_measured(argv, stdout_path=stdout, stderr_path=stderr, cpus=h.config.generator_cpus, timeout_s=timeout,
                     cpu_samples=[])
    else:
        with open(stdout, "wb") as out, open(stderr, "wb") as err:
            subprocess.run(["taskset", "-c", ",".join(map(str, h.config.generator_cpus)), *argv], stdout=out,
                           stderr=err, stdin=subprocess.DEVNULL, check=False, timeout=timeout)
    ended = time.monotonic_ns()
    out = engine.parse_after_lead_in(raw, stem, lead_in_s=lead_in_s, window_s=window_s, timeout_s=spec.timeout_s)
    return out.rps, started + int(lead_in_s * 1e9), ended


def run(args: argparse.Namespace) -> dict:
    arms = args.arms
    y: dict[str, list[float]] = {a: [] for a in arms}
    z: dict[str, list[float]] = {a: [] for a in arms}
    order: list[list[str]] = []
    with ExitStack() as scope:
        inner = mo.parse_args(["--stack", args.stack, "--workload", wl.PERF_TEST, "--parameter", "1", "--vus", "50",
                               "--window-s", "1", "--warmup-s", "1"])
        h = mo.start_stack(scope, inner, ["oha"])
        scope.enter_context(pinned_to(h.config.generator_cpus))  # as `pgarena run` pins itself (runner.py)
        probe = SpeedProbe(list(h.config.server_cpus)).start()
        scope.callback(probe.stop)
        cpu = CpuMeters(h.meters, h.cpu.source, probe=probe)
        poller = scope.enter_context(ConnectionPoller(
            h.db.admin_url, h.db.user, ports=TreeDbPorts(lambda: h.server.pid, h.db.port)))
        cell = Cell(stack=args.stack, workload=wl.PERF_TEST, parameter_name="rows", parameter=1, vus=50, engine="oha",
                    warmup_seconds=1, duration_seconds=args.window_s)
        cell_run = start_cell(cell, engine=h.engine_for["oha"], config=h.config, db=h.db, base_url=h.base_url,
                              run_dir=h.workdir, routes=h.routes, log=lambda _line: None)
        poller.active = False
        single = load_spec(wl.PERF_TEST, 1, base_url=h.base_url, routes=h.routes, connections=50, config=h.config)
        bare_window(h, single, 0.5, 8.0, "warm")
        rng = random.Random(args.seed)
        for r in range(1, args.rounds + 1):
            order.append(rng.sample(arms, len(arms)))
            for arm in order[-1]:
                if arm in ("bare", RUNNER):
                    rps, start_ns, end_ns = bare_window(h, cell_run.spec, args.lead_in_s, args.window_s, f"r{r}",
                                                        runner=arm == RUNNER)
                    reading = probe.reading(start_ns, end_ns).unit_ns
                else:
                    poller.active = True
                    poller.take_peak(poll=False)
                    rep = measure_repetition(cell_run, engine=h.engine_for["oha"], config=h.config, db=h.db,
                                             server=h.server, base_url=h.base_url, routes=h.routes, cpu=cpu,
                                             round_index=r, rewarm_s=args.lead_in_s)
                    poller.take_peak()
                    poller.active = False
                    rps, reading = rep.rps, rep.reference_unit_ns
                if reading is None:
                    raise mo.UsageError("the speed probe read nothing in a window")
                y[arm].append(rps)
                z[arm].append(reading)
            print(f"round {r}/{args.rounds}: " + ", ".join(f"{a} {y[a][-1]:,.0f}" for a in arms) + " 2xx/s",
                  file=sys.stderr, flush=True)
    return {"stack": args.stack, "window_s": args.window_s, "lead_in_s": args.lead_in_s, "seed": args.seed,
            "rps": y, "reference_unit_ns": z, "order": order, "summary": summary(y, z),
            "after": after_which(y, order)}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stack", default=mo.DEFAULT_STACK)
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--window-s", type=float, default=1.0)
    p.add_argument("--lead-in-s", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, default=Path("window-noise.json"))
    p.add_argument("--arms", default=",".join(ARMS), help=f"of {', '.join((*ARMS, RUNNER))}; bare always")
    args = p.parse_args(argv)
    try:
        if args.rounds < 3 or args.window_s <= 0 or args.lead_in_s <= 0:
            raise mo.UsageError("--rounds must be at least 3, --window-s and --lead-in-s above 0")
        args.arms = list(dict.fromkeys(a.strip() for a in args.arms.split(",") if a.strip()))
        if "bare" not in args.arms or "pgarena" not in args.arms or not set(args.arms) <= {*ARMS, RUNNER}:
            raise mo.UsageError(f"--arms: pgarena and bare, and {RUNNER} if wanted (got {','.join(args.arms)})")
        data = run(args)
    except mo.UsageError as exc:
        print(f"window_noise: {exc}", file=sys.stderr)
        return 2
    s = data["summary"]
    for arm in args.arms:
        print(f"{arm}: log-sd {s['log_sd'][arm]:.3f}, after the probe {s['log_sd_after_probe'][arm]:.3f}; "
              "after " + ", ".join(f"{b} {v:+.3f}" for b, v in sorted(data["after"][arm].items())))
    for arm, found in s["vs_bare"].items():
        print(f"{arm} / bare per round: mean log-ratio {found['mean']:+.3f} (se {found['se']:.3f}), sd {found['sd']:.3f} "
              f"({s['rounds']} rounds, β {s['beta']:.2f})")
    args.out.write_text(json.dumps(data) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
