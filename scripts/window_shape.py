#!/usr/bin/env python3
"""The shape of a window in time, from oha's per-request file (docs/methodology.md, "The noise budget").

Two questions about the interleaved schedule's windows, each answered from every request's end time (oha's
`--db-url` file; its `end` column is seconds since oha started):

- `switch`: how long a stack takes to reach its steady rate after the others were loaded. The stacks are
  started as `pgarena run` does (scripts/measurer_overhead.py's `start_stack`, one harness each), warmed for
  8 s once, then visited round-robin, one oha run of `--span-s` each (after a separate one of `--rewarm-s`, as
  pgarena's re-warm, when given; none by default). It prints
  each stack's 2xx per `--bin-s` bin relative to its steady rate (the bins from 0.5 s to the end), averaged
  over the rounds, and what a window of the run's first `--window-s` reads of that rate: with `--rewarm-s 0.5`,
  a window as pgarena took it before the re-warm became the window's lead-in (a generator run of its own, new
  connections).
  With `--windows 0.5,1` it also fits, for each window length w, ln(2xx in [`--lead-s`, `--lead-s` + w)) of every
  visit with the verdict's two-way model (a level per stack, a deviation per round: analysis/additive.py) and
  prints its window log-sd: how a shorter window after the same lead-in scatters, measured on the same visits;
  and, with pgarena's speed probe running on the server CPUs, the log-sd after the probe's correction, its
  reading taken over the window or over the lead-in and the window (PROBE_SPANS).
- `continuous`: whether a window's scatter comes from the generator's start (its connections, its process)
  or from the machine over time. One stack; per block a continuous oha run cut into 1 s windows after its
  first 0.5 s, then as many separate 1 s windows, each after its own 0.5 s re-warm, as pgarena takes them.
  If the start were the cause, the continuous run's seconds would scatter far less than separate windows.

    .venv/bin/python scripts/window_shape.py switch --stacks go-nethttp-pgx,node-express-pg,java-spring-mvc-jdbc,python-django
    .venv/bin/python scripts/window_shape.py continuous --stack go-nethttp-pgx --blocks 5 --seconds 8

Both load perf-test rows=1 at 50 VUs. A user's mistake (unknown stack, oha missing) is one line and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import statistics
import subprocess
import sys
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measurer_overhead as mo  # noqa: E402  (a script beside this one)

from pgarena.analysis.noise import noise_budget  # noqa: E402
from pgarena.contract import workloads as wl  # noqa: E402
from pgarena.load.window import load_spec  # noqa: E402
from pgarena.system.speedprobe import SpeedProbe  # noqa: E402

STEADY_FROM_S = 0.5
"""A switch profile's steady rate: its bins from here to the end of the run."""


def counts_between(ends: list[float], start_s: float, end_s: float) -> int:
    """Answers that ended in [start_s, end_s) seconds after oha started."""
    return sum(1 for e in ends if start_s <= e < end_s)


def bins(ends: list[float], span_s: float, bin_s: float) -> list[int]:
    """Answers per bin of `bin_s` over the first `span_s` seconds."""
    return [counts_between(ends, i * bin_s, (i + 1) * bin_s) for i in range(round(span_s / bin_s))]


def relative_profile(runs: list[list[int]], bin_s: float) -> list[float]:
    """The mean of each bin over the runs, relative to the mean of the bins from STEADY_FROM_S on."""
    means = [statistics.mean(run[i] for run in runs) for i in range(len(runs[0]))]
    steady = statistics.mean(means[round(STEADY_FROM_S / bin_s):])
    return [m / steady for m in means]


def log_sd(values: list[float]) -> float:
    return statistics.pstdev([math.log(v) for v in values])


def lag1(values: list[float]) -> float:
    """Lag-1 autocorrelation of the logs, in the order taken."""
    logs = [math.log(v) for v in values]
    mean = statistics.mean(logs)
    d = [x - mean for x in logs]
    return sum(a * b for a, b in zip(d, d[1:])) / sum(a * a for a in d)


class Oha:
    """oha at a started stack, perf-test rows=1 (or `workload` at `parameter`) at 50 VUs, pinned to the generator
    CPUs; every answer's end."""

    def __init__(self, h: mo.Harness, raw: Path, workload: str = wl.PERF_TEST, parameter: int | None = 1) -> None:
        self.engine, self.raw = h.engine_for["oha"], raw
        self.spec = load_spec(workload, parameter, base_url=h.base_url, routes=h.routes, connections=50,
                              config=h.config)
        self.cpus = ",".join(map(str, h.config.generator_cpus))
        self.server_cpus = list(h.config.server_cpus)
        raw.mkdir(parents=True, exist_ok=True)

    def run(self, seconds: float, stem: str) -> tuple[int, list[float]]:
        """(monotonic ns at the start, the end time of every 2xx answer)."""
        argv = self.engine.command(replace(self.spec, duration_s=seconds), self.raw, stem)
        started = time.monotonic_ns()
        subprocess.run(["taskset", "-c", self.cpus, *argv], capture_output=True, check=False, timeout=seconds + 60)
        path = self.engine.requests_file(self.raw, stem)
        with sqlite3.connect(path) as conn:
            ends = [end for end, status in conn.execute("SELECT end, status FROM oha") if 200 <= status < 300]
        path.unlink()
        return started, ends


def harness(scope: ExitStack, stack: str) -> mo.Harness:
    inner = mo.parse_args(["--stack", stack, "--workload", wl.PERF_TEST, "--parameter", "1", "--vus", "50",
                           "--window-s", "1", "--warmup-s", "1"])
    return mo.start_stack(scope, inner, ["oha"])


PROBE_SPANS = ("window", "lead-in + window")
"""What the speed probe's reading of a visit covers, for `switch --windows`: the window's own seconds (as
pgarena reads it) or the lead-in's too (more units of the probe, the same spell of the machine)."""


def switch(args: argparse.Namespace) -> dict:
    out: dict[str, list[list[int]]] = {}
    starts: dict[str, list[int]] = {}
    readings: dict[str, dict[str, dict[str, list[float | None]]]] = {}
    with ExitStack() as scope:
        ohas = {s: Oha(h, h.workdir / "switch") for s in args.stacks for h in [harness(scope, s)]}
        probe = SpeedProbe(next(iter(ohas.values())).server_cpus).start() if args.windows else None
        if probe is not None:
            scope.callback(probe.stop)
        for oha in ohas.values():
            oha.run(8.0, "warm")
        for r in range(args.rounds):
            for stack, oha in ohas.items():
                if args.rewarm_s > 0:
                    oha.run(args.rewarm_s, f"w{r}")
                started, ends = oha.run(args.span_s, f"r{r}")
                out.setdefault(stack, []).append(bins(ends, args.span_s, args.bin_s))
                starts.setdefault(stack, []).append(started)
            print(f"round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
        if probe is not None:
            for w in args.windows:
                readings[f"{w:g}"] = {span: {stack: [probe_reading(probe, t, args.lead_s, w, span) for t in ts]
                                             for stack, ts in starts.items()} for span in PROBE_SPANS}
    first_steady = round(STEADY_FROM_S / args.bin_s)
    for stack, runs in out.items():
        steady = statistics.mean(statistics.mean(run[first_steady:]) for run in runs) / args.bin_s
        profile = relative_profile(runs, args.bin_s)
        first = statistics.mean(profile[:round(args.window_s / args.bin_s)])
        print(f"{stack}: " + " ".join(f"{v:.2f}" for v in profile)
              + f"  (steady {steady:,.0f} 2xx/s; its first {args.window_s:g} s: {first:.3f} of it)")
    for w in args.windows:
        sd, n = window_log_sd(out, args.bin_s, args.lead_s, w)
        line = f"a {w:g} s window after a {args.lead_s:g} s lead-in: window log-sd {sd:.3f} (two-way fit, {n} windows)"
        for span, reference in readings.get(f"{w:g}", {}).items():
            budget = noise_budget(window_counts(out, args.bin_s, args.lead_s, w), reference)
            if budget.adjusted_window_log_sd is not None and budget.correlation is not None:
                line += f"; the probe over the {span}: {budget.adjusted_window_log_sd:.3f} (r {budget.correlation:+.2f})"
        print(line)
    return {"bin_s": args.bin_s, "span_s": args.span_s, "bins": out, "probe": readings}


def probe_reading(probe: SpeedProbe, started_ns: int, lead_s: float, window_s: float, span: str) -> float | None:
    """The probe's mean unit over a visit's window, or its lead-in and window (PROBE_SPANS)."""
    first = started_ns + (0 if span == "lead-in + window" else int(lead_s * 1e9))
    return probe.reading(first, started_ns + int((lead_s + window_s) * 1e9), wait_s=0).unit_ns


def window_counts(runs_by_stack: dict[str, list[list[int]]], bin_s: float, lead_s: float,
                  window_s: float) -> dict[str, list[float | None]]:
    """Each visit's 2xx in [lead_s, lead_s + window_s) (None: none)."""
    first, last = round(lead_s / bin_s), round((lead_s + window_s) / bin_s)
    return {stack: [float(sum(run[first:last])) or None for run in runs] for stack, runs in runs_by_stack.items()}


def window_log_sd(runs_by_stack: dict[str, list[list[int]]], bin_s: float, lead_s: float,
                  window_s: float) -> tuple[float, int]:
    """The two-way fit's residual log-sd of each visit's 2xx in [lead_s, lead_s + window_s), and the windows fitted."""
    from pgarena.analysis.additive import additive_fit

    y = {stack: [math.log(v) if v else None for v in counts]
         for stack, counts in window_counts(runs_by_stack, bin_s, lead_s, window_s).items()}
    fit = additive_fit(y)
    return math.sqrt(fit.rss / fit.df), len(fit.residuals)


def continuous(args: argparse.Namespace) -> dict:
    res: dict[str, list[float]] = {"continuous": [], "separate": [], "continuous_probe": [], "separate_probe": []}
    with ExitStack() as scope:
        h = harness(scope, args.stack)
        probe = SpeedProbe(list(h.config.server_cpus)).start()
        scope.callback(probe.stop)
        oha = Oha(h, h.workdir / "continuous")
        oha.run(5.0, "warm")

        def keep(kind: str, count: int, start_ns: int, end_ns: int) -> None:
            reading = probe.reading(start_ns, end_ns)
            if count and reading is not None:
                res[kind].append(float(count))
                res[f"{kind}_probe"].append(reading.unit_ns)

        for b in range(args.blocks):
            started, ends = oha.run(args.seconds + STEADY_FROM_S, f"c{b}")
            for i in range(args.seconds):
                lo = STEADY_FROM_S + i
                keep("continuous", counts_between(ends, lo, lo + 1), started + int(lo * 1e9), started + int((lo + 1) * 1e9))
            for i in range(args.seconds):
                oha.run(0.5, f"w{b}-{i}")
                started, ends = oha.run(1.0, f"s{b}-{i}")
                keep("separate", len(ends), started, started + int(1e9))
            print(f"block {b + 1}/{args.blocks}", file=sys.stderr, flush=True)
    for kind in ("continuous", "separate"):
        v, p = res[kind], res[f"{kind}_probe"]
        r = statistics.correlation([math.log(x) for x in v], [math.log(x) for x in p])
        print(f"{kind}: {len(v)} windows of 1 s, mean {statistics.mean(v):,.0f} 2xx/s, log-sd {log_sd(v):.3f}, "
              f"lag-1 {lag1(v):+.2f}; the probe r {r:+.2f}")
    return res


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("switch", help="the rate after a switch from the other stacks' load")
    s.add_argument("--stacks", type=lambda v: v.split(","), default=[mo.DEFAULT_STACK])
    s.add_argument("--rounds", type=int, default=15)
    s.add_argument("--span-s", type=float, default=1.5)
    s.add_argument("--bin-s", type=float, default=0.1)
    s.add_argument("--rewarm-s", type=float, default=0.0, help="an uncounted oha run before each (pgarena's re-warm)")
    s.add_argument("--window-s", type=float, default=1.0, help="the first seconds of each run read as one window")
    s.add_argument("--windows", type=lambda v: [float(x) for x in v.split(",")], default=[],
                   help="window lengths (s) to fit after --lead-s, e.g. 0.5,1")
    s.add_argument("--lead-s", type=float, default=0.5, help="the lead-in before those windows, in the same run")
    c = sub.add_parser("continuous", help="1 s of a continuous run against separate 1 s windows")
    c.add_argument("--stack", default=mo.DEFAULT_STACK)
    c.add_argument("--blocks", type=int, default=5)
    c.add_argument("--seconds", type=int, default=8)
    for mode in (s, c):
        mode.add_argument("--out", type=Path, default=Path("window-shape.json"))
    args = p.parse_args(argv)
    try:
        data = switch(args) if args.mode == "switch" else continuous(args)
    except mo.UsageError as exc:
        print(f"window_shape: {exc}", file=sys.stderr)
        return 2
    args.out.write_text(json.dumps(data) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
