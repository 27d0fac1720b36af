#!/usr/bin/env python3
"""What the wire observer costs under load (issue 25): its CPU per round trip it relays, and the latency it
adds to each request.

One stack (go-nethttp-pgx unless told) is built and started as `pgarena run` does it
(measurer_overhead.start_stack: managed PostgreSQL and the stack on the server CPUs), then started a second
time with the wire observer as its database (pipeline/wire.through_observer), the observer on the generator
CPUs as `pgarena run` places it. For each workload (tx, perf-test) both starts are loaded at the same fixed
arrival rate, below the stack's capacity (oha's open model, `-q` with latency correction, through pgarena's
engine classes: load/window.run_window): first one unmeasured window each (pools fill, statement caches
warm), then rounds of one window per start, in an order drawn per round from a seeded random generator, so
the machine's drift falls on both alike. Per workload it prints:

- the observer's CPU per relayed round trip: its CPU seconds over an observed window (psutil, from
  /proc/<pid>/stat, 10 ms ticks) over the round trips it counted in that window (its /snapshot, set-up
  round trips included);
- the added latency: observed minus direct p50 and p99 of the same round (pgarena's percentiles over every
  request: engines/latency.py), the paired differences.

Each with its median and the 95 % t-interval of its mean over the rounds (pgarena.stats.intervals). The
shape is system/toxiproxy_overhead.py's (the same question for Toxiproxy: paired, interleaved, CPU per round
trip), here with a real stack and driver under load. Bounded: the plan (set-up allowance, warm-up and
measured windows) must fit --budget-s, and the rounds stop early if the next one would overrun it.

    PYTHONPATH=src .venv/bin/python scripts/observer_cost.py
    PYTHONPATH=src .venv/bin/python scripts/observer_cost.py --rate 300 --rounds 8 --window-s 3

Not a test: the lead runs it on a quiet machine (it keeps both CPUs busy for about 2.5 min). A user's
mistake is one line and exit code 2.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import statistics
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

from measurer_overhead import DEFAULT_SEED, Harness, UsageError, start_stack  # scripts/, beside this file
from pgarena.config.stackdef import render_template
from pgarena.contract import workloads as wl
from pgarena.db.postgres import PostgresError, free_port
from pgarena.load.engines.base import EngineOutputError, LoadSpec
from pgarena.load.window import load_spec, run_window, variants_file, write_tx_bodies
from pgarena.pipeline.plan import select_stacks
from pgarena.pipeline.wire import through_observer
from pgarena.stack.launch import stack_environment, stack_values
from pgarena.stats.intervals import confidence_interval
from pgarena.system.process import NotReady, ServerProcess, wait_until_healthy
from pgarena.system.wireobserver import WireObserver, WireObserverUnavailable

ARMS = ("direct", "observed")
WORKLOADS = (wl.TX, wl.PERF_TEST)
DEFAULT_STACK = "go-nethttp-pgx"
DEFAULT_RATE = 200.0
"""Requests per second offered to each start: well below go-nethttp-pgx's closed-model peak on a 2-CPU
machine (tx about 1,000/s, perf-test at 10 rows more), so neither arm queues."""
DEFAULT_ROWS = 10
DEFAULT_ROUNDS = 6
DEFAULT_WINDOW_S = 4.0
DEFAULT_WARMUP_S = 2.0
DEFAULT_BUDGET_S = 180.0
SETUP_ALLOWANCE_S = 45.0
"""Seconds the plan reserves for the set-up: the managed database, the workloads' data (tx: pgbench scale
10), a cached build and two starts."""
WINDOW_ALLOWANCE_S = 1.0
"""Seconds each window costs beyond its load: the generator's start, its per-request file, the parse."""


@dataclass
class ArmWindow:
    """One window of one start: what the generator measured and, observed, what the observer did."""

    workload: str
    round: int
    """1, 2, …; 0 is the unmeasured first window of each start."""
    arm: str
    rps: float
    """2xx answers per second."""
    requests: int
    failures: int
    p50_ms: float
    p99_ms: float
    observer_cpu_seconds: float | None = None
    round_trips: int | None = None
    """Round trips the observer relayed during the window (set-up ones included)."""

    @property
    def cpu_us_per_round_trip(self) -> float | None:
        """The observer's CPU microseconds per round trip it relayed (None: direct, or nothing relayed)."""
        if self.observer_cpu_seconds is None or not self.round_trips:
            return None
        return self.observer_cpu_seconds * 1e6 / self.round_trips


def relayed_round_trips(before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]]) -> int:
    """Round trips the observer relayed between two of its snapshots (wire/main.go's /snapshot): every
    connection's round trips and set-up round trips in `after` minus those in `before` (a connection opened
    in between counts whole)."""
    def total(connection: dict[str, Any]) -> int:
        counts = connection["counts"]
        return counts["round_trips"] + counts["setup_round_trips"]

    earlier = {c["id"]: total(c) for c in before}
    return sum(total(c) - earlier.get(c["id"], 0) for c in after)


def planned_seconds(workloads: int, rounds: int, window_s: float, warmup_s: float) -> float:
    """Wall seconds the plan needs: the set-up allowance, then per workload one warm-up window per start
    and `rounds` windows per start, each with WINDOW_ALLOWANCE_S of its own."""
    per_workload = len(ARMS) * ((warmup_s + WINDOW_ALLOWANCE_S) + rounds * (window_s + WINDOW_ALLOWANCE_S))
    return SETUP_ALLOWANCE_S + workloads * per_workload


def paired_differences(windows: Sequence[ArmWindow], workload: str, field: str) -> list[float]:
    """Observed minus direct of `field` per measured round of `workload` (rounds missing an arm left out)."""
    by_round: dict[int, dict[str, ArmWindow]] = {}
    for w in windows:
        if w.workload == workload and w.round > 0:
            by_round.setdefault(w.round, {})[w.arm] = w
    return [getattr(arms["observed"], field) - getattr(arms["direct"], field)
            for _, arms in sorted(by_round.items()) if set(arms) == set(ARMS)]


def spread(values: Sequence[float]) -> dict[str, float | int | None]:
    """n, median, mean and the 95 % t-interval of the mean (None with fewer than 2 values)."""
    out: dict[str, float | int | None] = {"n": len(values), "median": None, "mean": None,
                                          "ci95_low": None, "ci95_high": None}
    if values:
        out.update(median=statistics.median(values), mean=statistics.fmean(values))
    if len(values) >= 2:
        out["ci95_low"], out["ci95_high"] = confidence_interval(values, 0.95)
    return out


def summarize(windows: Sequence[ArmWindow], workload: str, rate: float) -> dict[str, Any]:
    """One workload's figures (see the module docstring); latencies in µs, CPU in µs per round trip."""
    measured = [w for w in windows if w.workload == workload and w.round > 0]
    observed = [w for w in measured if w.arm == "observed"]
    cpu = [c for w in observed if (c := w.cpu_us_per_round_trip) is not None]
    trips, requests = sum(w.round_trips or 0 for w in observed), sum(w.requests for w in observed)

    def median_of(arm: str, field: str) -> float | None:
        values = [getattr(w, field) for w in measured if w.arm == arm]
        return statistics.median(values) if values else None

    return {
        "workload": workload, "rate": rate,
        "round_trips_per_request": trips / requests if requests else None,
        "observer_cpu_us_per_round_trip": spread(cpu),
        "added_p50_us": spread([d * 1000 for d in paired_differences(windows, workload, "p50_ms")]),
        "added_p99_us": spread([d * 1000 for d in paired_differences(windows, workload, "p99_ms")]),
        **{f"{arm}_{field}": median_of(arm, field) for arm in ARMS for field in ("p50_ms", "p99_ms", "rps")},
        "failures": sum(w.failures for w in measured),
    }


def _figure(s: dict[str, Any], signed: bool = False) -> str:
    if s["median"] is None:
        return "—"
    sign = "+" if signed else ""
    text = f"{s['median']:{sign},.0f}"
    if s["ci95_low"] is not None:
        text += f" (mean {s['mean']:{sign},.0f}, {s['ci95_low']:{sign},.0f} to {s['ci95_high']:{sign},.0f})"
    return text


def format_table(summaries: Sequence[dict[str, Any]]) -> str:
    """The Markdown table of `summarize`'s rows: medians, then the mean and its 95 % interval."""
    lines = ["| workload | rate (req/s) | 2xx/s direct / observed | round trips/request | observer CPU µs per "
             "round trip | added p50 µs | added p99 µs | p50 ms direct → observed | p99 ms direct → observed |",
             "|---|---:|---:|---:|---|---|---|---:|---:|"]
    for s in summaries:
        trips = "—" if s["round_trips_per_request"] is None else f"{s['round_trips_per_request']:.2f}"
        lines.append(
            f"| {s['workload']} | {s['rate']:,.0f} | {s['direct_rps'] or 0:,.0f} / {s['observed_rps'] or 0:,.0f} "
            f"| {trips} | {_figure(s['observer_cpu_us_per_round_trip'])} | {_figure(s['added_p50_us'], True)} "
            f"| {_figure(s['added_p99_us'], True)} | {s['direct_p50_ms'] or 0:.2f} → {s['observed_p50_ms'] or 0:.2f} "
            f"| {s['direct_p99_ms'] or 0:.2f} → {s['observed_p99_ms'] or 0:.2f} |")
    return "\n".join(lines)


def start_observed(scope: ExitStack, h: Harness, stack_id: str) -> tuple[WireObserver, str]:
    """The observer (generator CPUs) and a second start of the built stack (server CPUs) with the observer as
    its database; returns the observer and the second start's base URL."""
    stacks, _ = select_stacks(h.config)
    stack = next(s for s in stacks if s.id == stack_id)
    definition = stack.definition
    if definition.run.port:
        raise UsageError(f"stack {stack_id} listens on a fixed port: it cannot be started twice")
    try:
        observer = scope.enter_context(WireObserver(f"{h.db.host}:{h.db.port}", log_path=h.workdir / "observer.log",
                                                    cpus=list(h.config.generator_cpus)))
    except WireObserverUnavailable as exc:
        raise UsageError(str(exc)) from None
    values = through_observer(stack_values(h.config, h.db, stack, free_port()), h.db, observer)
    server = scope.enter_context(ServerProcess(
        render_template(definition.run.command, values), cwd=stack.directory,
        env=stack_environment(values, definition.run.env), log_path=h.workdir / "run-observed.log",
        cpus=h.config.server_cpus))
    base_url = f"http://127.0.0.1:{values['port']}"
    wait_until_healthy(server, base_url + definition.run.health_path, definition.run.startup_timeout_s)
    return observer, base_url


def window_spec(h: Harness, workload: str, arm: str, base_url: str, rate: float) -> LoadSpec:
    """The open-model request shape of `workload` against one start, at `rate` requests/s, as `pgarena run`
    builds it (tx: a file of random transactions; perf-test: its varied requests)."""
    raw_dir = h.workdir / arm
    raw_dir.mkdir(exist_ok=True)
    parameter = h.config.perf_test_rows[0] if workload == wl.PERF_TEST else None
    return load_spec(workload, parameter, base_url=base_url, routes=h.routes, connections=h.config.open_connections,
                     config=h.config, rate=rate,
                     bodies_file=write_tx_bodies(raw_dir, "observer-cost", workload) if workload == wl.TX else None,
                     urls_file=variants_file(raw_dir, workload, workload, parameter, base_url, h.routes))


def measure_window(h: Harness, spec: LoadSpec, arm: str, round_no: int, seconds: float,
                   observer: WireObserver | None) -> ArmWindow:
    """One window of `spec`; with `observer`, its CPU and the round trips it relayed over the window."""
    before = observer.snapshot() if observer else []
    cpu_before = observer.cpu_seconds() if observer else 0.0
    window = run_window(h.engine_for["oha"], spec, seconds, h.workdir / arm, f"{spec.workload}-r{round_no}", h.config)
    cpu = observer.cpu_seconds() - cpu_before if observer else None
    trips = relayed_round_trips(before, observer.snapshot()) if observer else None
    out = window.outcome
    return ArmWindow(spec.workload, round_no, arm, out.rps, out.requests, out.errors.total, out.latency.p50_ms,
                     out.latency.p99_ms, cpu, trips)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stack", default=DEFAULT_STACK)
    p.add_argument("--rate", type=float, default=DEFAULT_RATE, help="requests/s offered to each start")
    p.add_argument("--rows", type=int, default=DEFAULT_ROWS, help="perf-test rows")
    p.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, help="measured windows per start and workload")
    p.add_argument("--window-s", type=float, default=DEFAULT_WINDOW_S)
    p.add_argument("--warmup-s", type=float, default=DEFAULT_WARMUP_S, help="the unmeasured first window")
    p.add_argument("--budget-s", type=float, default=DEFAULT_BUDGET_S, help="wall-clock limit, set-up included")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--out", type=Path, default=Path("observer-cost.json"))
    args = p.parse_args(argv)
    if args.rounds < 2 or args.window_s < 1 or args.warmup_s < 1 or args.rate <= 0 or args.rows < 1:
        raise UsageError("--rounds must be at least 2, --window-s and --warmup-s at least 1 s, --rate and --rows "
                         "positive")
    planned = planned_seconds(len(WORKLOADS), args.rounds, args.window_s, args.warmup_s)
    if planned > args.budget_s:
        raise UsageError(f"the plan needs about {planned:.0f} s, more than --budget-s {args.budget_s:.0f}: "
                         "fewer --rounds or a shorter --window-s")
    # measurer_overhead.start_stack's names: the data of both workloads, perf-test's rows as the parameter
    args.workload, args.workloads, args.parameter, args.vus = wl.PERF_TEST, list(WORKLOADS), args.rows, 1
    return args


def main(argv: list[str]) -> int:
    started = time.monotonic()
    windows: list[ArmWindow] = []
    try:
        args = parse_args(argv)
        with ExitStack() as scope:
            h = start_stack(scope, args, ["oha"])
            observer, observed_url = start_observed(scope, h, args.stack)
            psutil.Process().cpu_affinity(list(h.config.generator_cpus))
            urls = {"direct": h.base_url, "observed": observed_url}
            per_round = len(ARMS) * (args.window_s + WINDOW_ALLOWANCE_S)
            rng = random.Random(args.seed)
            for index, workload in enumerate(WORKLOADS):
                specs = {arm: window_spec(h, workload, arm, urls[arm], args.rate) for arm in ARMS}
                for arm in ARMS:
                    measure_window(h, specs[arm], arm, 0, args.warmup_s, observer if arm == "observed" else None)
                for round_no in range(1, args.rounds + 1):
                    later = (len(WORKLOADS) - index - 1) * len(ARMS) * (args.warmup_s + WINDOW_ALLOWANCE_S)
                    if time.monotonic() - started + per_round + later > args.budget_s:
                        print(f"{workload}: stopped after {round_no - 1} rounds (--budget-s)", file=sys.stderr)
                        break
                    for arm in rng.sample(ARMS, len(ARMS)):
                        w = measure_window(h, specs[arm], arm, round_no, args.window_s,
                                           observer if arm == "observed" else None)
                        windows.append(w)
                        print(f"{workload} round {round_no} {arm}: {w.rps:,.0f} 2xx/s, p50 {w.p50_ms:.2f} ms, "
                              f"p99 {w.p99_ms:.2f} ms" + (f", observer {w.cpu_us_per_round_trip:.0f} µs/round trip"
                                                          if w.cpu_us_per_round_trip is not None else ""),
                              file=sys.stderr)
    except UsageError as exc:
        print(f"observer_cost: {exc}", file=sys.stderr)
        return 2
    except (PostgresError, NotReady, EngineOutputError) as exc:
        print(f"observer_cost: {exc}", file=sys.stderr)
        return 1
    summaries = [summarize(windows, workload, args.rate) for workload in WORKLOADS]
    elapsed = time.monotonic() - started
    print(f"\nwire observer's cost under load: {args.stack}, oha open model at {args.rate:,.0f} req/s per start, "
          f"{args.rounds} rounds × {args.window_s:g} s per start and workload, perf-test {args.rows} rows; "
          f"{elapsed:.0f} s in all. Median (mean and its 95 % interval over the rounds):\n")
    print(format_table(summaries))
    below = [s["workload"] for s in summaries if min(s["direct_rps"] or 0, s["observed_rps"] or 0) < 0.95 * args.rate]
    if below:
        print(f"\nbelow the offered rate (capacity reached, the figures include queueing): {', '.join(below)}; "
              "use a lower --rate")
    args.out.write_text(json.dumps({
        "measured_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "stack": args.stack,
        "rate": args.rate, "rows": args.rows, "rounds": args.rounds, "window_seconds": args.window_s,
        "warmup_seconds": args.warmup_s, "seed": args.seed, "load_average": list(psutil.getloadavg()),
        "summaries": summaries, "windows": [asdict(w) for w in windows]}, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
