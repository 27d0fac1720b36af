#!/usr/bin/env python3
"""Measure the measurer: pgarena's figure for one cell against a bare run of the same generator.

One stack is built and started the way `pgarena run` does it (stackdef, process, postgres and runner
helpers; managed PostgreSQL pinned to the server CPUs, the stack too, cgroup CPU accounting when the
kernel offers it). Then, in interleaved rounds whose order is drawn from a seeded random generator:

- `pgarena`: one window through pgarena's real measure path (`measure.measure_cell`: warm-up, one
  repetition with the psutil tree sampler, the cgroup meters and, for oha, the answer sampler);
- `bare`: the same generator with the argv pgarena builds for that cell (`Engine.command`), warm-up then
  window, started with `taskset -c <generator CPUs>` and nothing else of pgarena running beside it.

Per round it reports pgarena RPS / bare RPS; over the rounds the median ratio and a 95 % t-interval on the
mean ratio (pgarena.stats.intervals). A ratio of 1 means the measuring costs the measured nothing.

`--mode engines` answers a different question with the same set-up: bare oha against bare k6, rounds
interleaved, and per window what the server paid per request (stack and PostgreSQL CPU, the stack's
context switches from /proc/<pid>/status, TCP connections opened and segments from /proc/net/snmp).

    .venv/bin/python scripts/measurer_overhead.py --engine oha --rounds 6
    .venv/bin/python scripts/measurer_overhead.py --mode engines --rounds 6

A user's mistake (unknown stack, engine missing) is one line and exit code 2.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

import psutil

from pgarena.config.profiles import build_config
from pgarena.config.run import RunConfig
from pgarena.config.stackdef import render_template
from pgarena.contract import workloads as wl
from pgarena.db.cluster import provide_database
from pgarena.db.data import load_workload_data
from pgarena.db.postgres import Database, PostgresError, free_port
from pgarena.load.engines import Engine, EngineUnavailable, get_engine
from pgarena.load.engines.base import EngineOutputError
from pgarena.load.measure import measure_cell
from pgarena.load.window import load_spec
from pgarena.pipeline.context import RunError
from pgarena.pipeline.plan import select_stacks
from pgarena.results.models import Cell, Spread
from pgarena.stack.launch import stack_environment, stack_values
from pgarena.stats.intervals import confidence_interval
from pgarena.system import cgroups
from pgarena.system.process import NotReady, ServerProcess, run_logged, wait_until_healthy
from pgarena.system.resources import CpuMeters

PROJECT_DIR = Path(__file__).resolve().parent.parent
DEFAULT_STACK = "go-nethttp-pgx"
DEFAULT_WORKLOAD = "perf-test"
DEFAULT_PARAMETER = 10
DEFAULT_VUS = 50
DEFAULT_ROUNDS = 6
DEFAULT_WINDOW_S = 5.0
DEFAULT_WARMUP_S = 2.0
DEFAULT_SEED = 1


class UsageError(Exception):
    """A mistake in the command line or a missing tool: one line, exit code 2."""


@dataclass
class WindowFigures:
    """What one measured window showed: generator RPS and, where read, the server's cost per request."""

    arm: str
    round: int
    rps: float
    requests: int
    failures: int
    latency_p99_ms: float
    generator_cpu_us_per_request: float | None = None
    generator_ctx_switches_per_request: float | None = None
    stack_cpu_us_per_request: float | None = None
    db_cpu_us_per_request: float | None = None
    stack_ctx_switches_per_request: float | None = None
    stack_involuntary_ctx_switches_per_request: float | None = None
    connections: int | None = None
    response_segments_per_request: float | None = None
    per_second: list[dict] = field(default_factory=list)


@dataclass
class Harness:
    """The started stack and what a window needs to reach it."""

    engine_for: dict[str, Engine]
    config: RunConfig
    db: Database
    server: ServerProcess
    base_url: str
    routes: dict[str, str]
    cpu: CpuMeters
    meters: dict[str, Callable[[], float]]
    """The cumulative CPU-seconds counters behind `cpu` (cgroups), for the per-second sampler."""
    workdir: Path
    windows: list[WindowFigures] = field(default_factory=list)


def port_sockets(port: int) -> tuple[int, int, int]:
    """(established connections, data segments received, data segments sent) of the sockets listening-side
    on `port`, summed from `ss -tin` (per-connection counters since each connection opened)."""
    out = subprocess.run(["ss", "-tinH", "state", "established", f"( sport = :{port} )"], capture_output=True,
                         text=True, timeout=10, check=False).stdout
    connections = sum(1 for line in out.splitlines() if line and not line[0].isspace())
    segs_in = sum(int(m) for m in re.findall(r"\bdata_segs_in:(\d+)", out))
    segs_out = sum(int(m) for m in re.findall(r"\bdata_segs_out:(\d+)", out))
    return connections, segs_in, segs_out


class PerSecond:
    """Engines mode: once a second during a window, the stack's requests (its sockets' received data
    segments: one per GET), context switches and CPU, to see whether the server changes state mid-window."""

    def __init__(self, h: Harness) -> None:
        self._h, self._stop = h, threading.Event()
        self.samples: list[tuple[float, int, float, int, int, int]] = []
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _sample(self) -> None:
        port = int(self._h.base_url.rsplit(":", 1)[1])
        meter = self._h.meters.get("stack")
        stack_cpu = meter() if meter else 0.0
        self.samples.append((time.monotonic(), ctx_switches(self._h.server.pid), stack_cpu, *port_sockets(port)))

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            self._sample()

    def __enter__(self) -> PerSecond:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def figures(self) -> dict:
        """Peak connections, response data segments per request, and per second: requests/s, the stack's
        context switches and CPU µs per request (seconds in which connections were steady)."""
        rows = []
        for a, b in zip(self.samples, self.samples[1:]):
            requests = b[4] - a[4]
            if b[3] != a[3] or requests <= 0:
                continue  # connections opened or closed in between: the counters do not subtract
            seconds = b[0] - a[0]
            rows.append({"rps": round(requests / seconds),
                         "stack_ctx_switches_per_request": round((b[1] - a[1]) / requests, 2),
                         "stack_cpu_us_per_request": round((b[2] - a[2]) / requests * 1e6, 1)})
        last = max(self.samples, key=lambda x: x[4], default=None)
        return {"connections": max((x[3] for x in self.samples), default=None),
                "response_segments_per_request": round(last[5] / last[4], 2) if last and last[4] else None,
                "per_second": rows}


def ctx_switch_counts(pid: int) -> tuple[int, int]:
    """(voluntary, involuntary) context switches of every thread of a process tree, summed from the kernel's
    /proc/<pid>/task/<tid>/status (the process's own status file counts its main thread only). Voluntary:
    the thread blocked (waited for I/O, a lock, a timer); involuntary: the scheduler preempted it."""
    counts = [0, 0]
    try:
        root = psutil.Process(pid)
        pids = [root.pid, *(child.pid for child in root.children(recursive=True))]
    except psutil.NoSuchProcess:
        return 0, 0
    for proc_pid in pids:
        for status in Path(f"/proc/{proc_pid}/task").glob("*/status"):
            try:
                text = status.read_text()
            except OSError:
                continue  # the thread ended
            for line in text.splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    counts[0] += int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches:"):
                    counts[1] += int(line.split()[1])
    return counts[0], counts[1]


def ctx_switches(pid: int) -> int:
    """Voluntary + involuntary context switches of every thread of a process tree (ctx_switch_counts)."""
    return sum(ctx_switch_counts(pid))


def bare_window(h: Harness, engine: Engine, cell: Cell, round_no: int, arm: str, extra: list[str],
                per_second: bool = False) -> WindowFigures:
    """Warm-up and one window of the generator alone, pinned with taskset, argv as pgarena builds it
    (`per_second`: with the PerSecond sampler beside it — engines mode only, never in overhead mode)."""
    raw_dir = h.workdir / "bare" / arm
    raw_dir.mkdir(parents=True, exist_ok=True)
    spec = load_spec(cell.workload, cell.parameter, base_url=h.base_url, routes=h.routes, connections=cell.vus,
                     config=h.config)
    cpus = ",".join(map(str, h.config.generator_cpus))
    timeout_s = h.config.duration_s + 2 * h.config.http_timeout_s + 60

    def run(stem: str, seconds: float) -> tuple[float, int]:
        """Run the generator to completion; return its CPU seconds and context switches (the reaped
        child's rusage)."""
        argv = engine.command(replace(spec, duration_s=seconds), raw_dir, stem)
        argv = argv[:-1] + extra + argv[-1:] if extra and engine.name == "oha" else argv
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(raw_dir / f"{stem}.stdout", "wb") as out, open(raw_dir / f"{stem}.stderr", "wb") as err:
            subprocess.run(["taskset", "-c", cpus, *argv], stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                           timeout=timeout_s, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        switches = after.ru_nvcsw + after.ru_nivcsw - before.ru_nvcsw - before.ru_nivcsw
        return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, switches

    run(f"r{round_no}-warmup", cell.warmup_seconds)
    stem = f"r{round_no}"
    switches_before = ctx_switch_counts(h.server.pid)
    with h.cpu.window() as used, (PerSecond(h) if per_second else nullcontext()) as sampler:
        generator_cpu, generator_switches = run(stem, cell.duration_seconds)
    voluntary, involuntary = (after - before for after, before in zip(ctx_switch_counts(h.server.pid),
                                                                        switches_before))
    out = engine.parse(raw_dir, stem)
    n = max(out.requests, 1)
    return WindowFigures(
        arm=arm, round=round_no, rps=out.rps, requests=out.requests, failures=out.errors.total,
        latency_p99_ms=out.latency.p99_ms, generator_cpu_us_per_request=generator_cpu / n * 1e6,
        generator_ctx_switches_per_request=generator_switches / n,
        stack_cpu_us_per_request=used["stack"] / n * 1e6 if "stack" in used else None,
        db_cpu_us_per_request=used["db"] / n * 1e6 if "db" in used else None,
        stack_ctx_switches_per_request=(voluntary + involuntary) / n,
        stack_involuntary_ctx_switches_per_request=involuntary / n, **(sampler.figures() if sampler else {}),
    )


def pgarena_window(h: Harness, engine: Engine, cell: Cell, round_no: int) -> WindowFigures:
    """One repetition through pgarena's measure path (measure_cell with its samplers and checks)."""
    measured = cell.model_copy(deep=True)
    measure_cell(measured, engine=engine, config=h.config, db=h.db, server=h.server,
                 base_url=h.base_url, run_dir=h.workdir / f"pgarena-r{round_no}", routes=h.routes,
                 log=lambda _line: None, cpu=h.cpu)
    rep = measured.repetitions[0]
    n = max(rep.requests, 1)
    return WindowFigures(
        arm="pgarena", round=round_no, rps=rep.rps, requests=rep.requests, failures=rep.errors.total,
        latency_p99_ms=rep.latency.p99_ms, generator_cpu_us_per_request=rep.generator_cpu_seconds / n * 1e6,
        stack_cpu_us_per_request=rep.stack_cpu_seconds / n * 1e6 if rep.stack_cpu_seconds is not None else None,
        db_cpu_us_per_request=rep.db_cpu_seconds / n * 1e6 if rep.db_cpu_seconds is not None else None,
    )


def ratio_summary(numerators: list[float], denominators: list[float]) -> dict:
    """Per-round ratios, their median and range, and the 95 % t-interval on their mean (pgarena.stats.intervals)."""
    ratios = [a / b for a, b in zip(numerators, denominators) if b]
    summary = {"per_round": [round(r, 4) for r in ratios]}
    if ratios:
        s = Spread.of(ratios)
        summary.update(median=round(s.median, 4), min=round(s.min, 4), max=round(s.max, 4))
    if len(ratios) >= 2:
        low, high = confidence_interval(ratios, 0.95)
        summary.update(mean=round(statistics.fmean(ratios), 4), ci95_low=round(low, 4), ci95_high=round(high, 4))
    return summary


def median_of(windows: list[WindowFigures], arm: str, name: str) -> float | None:
    values = [getattr(w, name) for w in windows if w.arm == arm and getattr(w, name) is not None]
    return statistics.median(values) if values else None


def print_table(windows: list[WindowFigures], arms: list[str]) -> None:
    """One line per window, then the medians per arm."""
    columns = [("rps", "req/s"), ("latency_p99_ms", "p99 ms"), ("generator_cpu_us_per_request", "gen µs/req"),
               ("generator_ctx_switches_per_request", "gen ctxsw/req"), ("stack_cpu_us_per_request", "stack µs/req"),
               ("db_cpu_us_per_request", "db µs/req"), ("stack_ctx_switches_per_request", "stack ctxsw/req"),
               ("stack_involuntary_ctx_switches_per_request", "of which preempted"),
               ("connections", "conns"), ("response_segments_per_request", "resp seg/req")]
    cols = [name for name, _ in columns]
    heads = ["round", "arm", *(head for _, head in columns)]
    print(" | ".join(heads))

    def cell(value: object) -> str:
        return "—" if value is None else (f"{value:,.2f}" if isinstance(value, float) else str(value))

    for w in windows:
        print(" | ".join([str(w.round), w.arm, *(cell(getattr(w, c)) for c in cols)]))
    for arm in arms:
        print(" | ".join(["median", arm, *(cell(median_of(windows, arm, c)) for c in cols)]))
    for w in windows:
        if w.per_second:
            print(f"round {w.round} {w.arm} per second (req/s:stack ctxsw/req): "
                  + " ".join(f"{p['rps']}:{p['stack_ctx_switches_per_request']}" for p in w.per_second))


def start_stack(scope: ExitStack, args: argparse.Namespace, engines: list[str]) -> Harness:
    """Database, data, build and start of the stack (as runner.run_stack does), pinned and accounted; the data
    of `args.workloads` when given (observer_cost.py: tx and perf-test), else of `args.workload`."""
    overrides = {"engine": engines[0], "stacks": [args.stack],
                 "workloads": getattr(args, "workloads", [args.workload]),
                 "warmup_s": args.warmup_s, "duration_s": args.window_s, "repetitions": 1, "vus": [args.vus],
                 "headroom": False, "perf_test_rows": [args.parameter] if args.workload == wl.PERF_TEST else None,
                 "users_limits": [args.parameter] if args.workload == wl.USERS else None}
    if getattr(args, "stacks_dir", None) is not None:  # probe_cost.py: a fixture stack
        overrides["stacks_dir"] = args.stacks_dir
    config = build_config(profile="quick", project_dir=PROJECT_DIR, overrides=overrides)
    try:
        engine_for = {name: get_engine(name) for name in engines}
        for engine in engine_for.values():
            engine.binary  # noqa: B018 — raises EngineUnavailable before anything starts
        stacks, broken = select_stacks(config)
    except (EngineUnavailable, RunError) as exc:
        raise UsageError(str(exc)) from None
    if broken or not stacks[0].available:
        why = broken[0].message if broken else stacks[0].unavailable_reason
        raise UsageError(f"stack {args.stack} cannot run here: {why}")
    stack = stacks[0]
    workdir = Path(scope.enter_context(tempfile.TemporaryDirectory(prefix="pgarena-measurer-")))
    db = scope.enter_context(provide_database(workdir, database_url=None, cpus=config.server_cpus))
    load_workload_data(db, config.workloads)
    backend = cgroups.probe()
    meters: dict[str, Callable[[], float]] = {}
    source = "psutil"
    if not isinstance(backend, str):
        source = backend.description
        if db.postmaster_pid:
            db_group = scope.enter_context(backend.create("postgres"))
            db_group.add_tree(db.postmaster_pid)
            meters["db"] = db_group.cpu_seconds
    definition = stack.definition
    values = stack_values(config, db, stack, definition.run.port or free_port())
    if definition.build:
        print(f"[{stack.id}] building", file=sys.stderr)
        step = run_logged(render_template(definition.build.command, values), cwd=stack.directory,
                          env=stack_environment(values, definition.build.env), log_path=workdir / "build.log",
                          timeout_s=definition.build.timeout_s)
        if not step.ok:
            raise UsageError(f"build of {stack.id} failed: {(workdir / 'build.log').read_text()[-300:]}")
    group = scope.enter_context(backend.create(stack.id)) if not isinstance(backend, str) else None
    server = scope.enter_context(ServerProcess(
        render_template(definition.run.command, values), cwd=stack.directory,
        env=stack_environment(values, definition.run.env), log_path=workdir / "run.log", cpus=config.server_cpus,
        preexec=group.preexec_fn() if group else None))
    if group:
        meters["stack"] = group.cpu_seconds
    base_url = f"http://127.0.0.1:{values['port']}"
    try:
        wait_until_healthy(server, base_url + definition.run.health_path, definition.run.startup_timeout_s)
    except NotReady as exc:
        raise UsageError(f"stack {stack.id} did not start: {exc}") from None
    print(f"[{stack.id}] healthy at {base_url} (pid {server.pid}); generator CPUs {config.generator_cpus}, "
          f"server CPUs {config.server_cpus}; CPU accounting: {source}", file=sys.stderr)
    return Harness(engine_for=engine_for, config=config, db=db, server=server, base_url=base_url,
                   routes=dict(definition.routes), cpu=CpuMeters(meters, source), meters=meters,
                   workdir=workdir)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", choices=["overhead", "engines"], default="overhead",
                   help="overhead: pgarena vs bare run of one engine; engines: bare oha vs bare k6")
    p.add_argument("--engine", choices=["oha", "k6"], default="oha", help="overhead mode: the generator")
    p.add_argument("--stack", default=DEFAULT_STACK)
    p.add_argument("--workload", default=DEFAULT_WORKLOAD, choices=[wl.PERF_TEST, wl.USERS, wl.STATIC])
    p.add_argument("--parameter", type=int, default=DEFAULT_PARAMETER, help="perf-test rows / users limit")
    p.add_argument("--vus", type=int, default=DEFAULT_VUS, help="closed-model connections / VUs")
    p.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    p.add_argument("--window-s", type=float, default=DEFAULT_WINDOW_S, help="measured seconds per window")
    p.add_argument("--warmup-s", type=float, default=DEFAULT_WARMUP_S, help="warm-up seconds before each window")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the per-round order")
    p.add_argument("--oha-arg", action="append", default=[], metavar="ARG",
                   help="engines mode: a third arm 'oha+', bare oha with this extra argument (repeatable), "
                        "e.g. --oha-arg=--worker-threads=1")
    p.add_argument("--no-pin-self", action="store_true",
                   help="leave this process (and pgarena's sampler threads) unpinned instead of on the generator CPUs")
    p.add_argument("--out", type=Path, help="JSON file to write (default: measurer-<mode>-<engine>.json in .)")
    args = p.parse_args(argv)
    if args.rounds < 2 or args.window_s < 1 or args.warmup_s < 1 or args.vus < 1:
        raise UsageError("--rounds must be at least 2, --window-s and --warmup-s at least 1 s, --vus at least 1")
    if shutil.which("taskset") is None:
        raise UsageError("taskset (util-linux) is not on PATH; the bare runs are pinned with it")
    return args


def main(argv: list[str]) -> int:
    try:
        args = parse_args(argv)
        arms = ["pgarena", "bare"] if args.mode == "overhead" else ["oha", "k6"] + (["oha+"] if args.oha_arg else [])
        engines = [args.engine] if args.mode == "overhead" else ["oha", "k6"]
        with ExitStack() as scope:
            h = start_stack(scope, args, engines)
            if not args.no_pin_self:
                psutil.Process().cpu_affinity(list(h.config.generator_cpus))
            cell = Cell(stack=args.stack, workload=args.workload, parameter_name=wl.PARAMETER_NAMES[args.workload],
                        parameter=args.parameter if args.workload in (wl.PERF_TEST, wl.USERS) else None,
                        vus=args.vus, engine=engines[0], warmup_seconds=args.warmup_s,
                        duration_seconds=args.window_s)
            rng = random.Random(args.seed)
            for round_no in range(1, args.rounds + 1):
                order = rng.sample(arms, len(arms))
                for arm in order:
                    if arm == "pgarena":
                        w = pgarena_window(h, h.engine_for[args.engine], cell, round_no)
                    elif arm == "bare":
                        w = bare_window(h, h.engine_for[args.engine], cell, round_no, "bare", [])
                    else:
                        extra = args.oha_arg if arm == "oha+" else []
                        w = bare_window(h, h.engine_for[arm.rstrip("+")], cell, round_no, arm, extra,
                                        per_second=True)
                    h.windows.append(w)
                    print(f"round {round_no} {arm}: {w.rps:,.0f} req/s", file=sys.stderr)
            versions = {name: e.version() for name, e in h.engine_for.items()}
    except UsageError as exc:
        print(f"measurer_overhead: {exc}", file=sys.stderr)
        return 2
    except (PostgresError, NotReady, EngineOutputError) as exc:
        print(f"measurer_overhead: {exc}", file=sys.stderr)
        return 1
    print_table(h.windows, arms)
    by_arm = {arm: [w for w in h.windows if w.arm == arm] for arm in arms}
    ratio = ratio_summary([w.rps for w in by_arm[arms[0]]], [w.rps for w in by_arm[arms[1]]])
    if "oha+" in arms:
        variant = ratio_summary([w.rps for w in by_arm["oha+"]], [w.rps for w in by_arm["k6"]])
        print(f"\noha+ ({' '.join(args.oha_arg)}) / k6 req/s: median {variant.get('median', 0):.3f}, per round "
              + ", ".join(f"{r:.3f}" for r in variant["per_round"]))
    print(f"\n{arms[0]} / {arms[1]} req/s per round: {', '.join(f'{r:.3f}' for r in ratio['per_round'])}")
    if "ci95_low" in ratio:
        print(f"median {ratio['median']:.3f} (range {ratio['min']:.3f}–{ratio['max']:.3f}); "
              f"mean {ratio['mean']:.3f}, "
              f"95 % interval {ratio['ci95_low']:.3f}–{ratio['ci95_high']:.3f} over {len(ratio['per_round'])} rounds")
    document = {
        "measured_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "mode": args.mode, "engine_versions": versions, "stack": args.stack, "workload": args.workload,
        "parameter": args.parameter, "vus": args.vus, "rounds": args.rounds, "window_seconds": args.window_s,
        "warmup_seconds": args.warmup_s, "seed": args.seed, "oha_extra_args": args.oha_arg,
        "pinned_self": not args.no_pin_self, "load_average": list(psutil.getloadavg()),
        "ratio_name": f"{arms[0]} / {arms[1]} requests/s", "ratio": ratio,
        "windows": [w.__dict__ for w in h.windows],
    }
    out = args.out or Path(f"measurer-{args.mode}-{args.engine if args.mode == 'overhead' else 'oha-vs-k6'}.json")
    out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
