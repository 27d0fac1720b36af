#!/usr/bin/env python3
"""Where a window's 2xx/s scatter comes from: one stack, bare generator windows back to back, and per window every
meter that could explain it (docs/methodology.md, "The noise budget": "What slows a window down").

One stack is started as `pgarena run` does (scripts/measurer_overhead.py's `start_stack`: managed PostgreSQL, both
pinned to the server CPUs, cgroup CPU accounting). Then `--windows` times: a gap of `--gap-s` without load, a
0.5 s re-warm and a window of `--window-s` of oha at the cell's load (taskset on the generator CPUs). Per window:

- `rps`: 2xx/s; `server_us`: the stack's and PostgreSQL's CPU µs per request; `generator_us`: oha's;
- `probe`: the run's own speed probe (system/speedprobe.py, on the server CPUs) during the window, and
  `probe_gap`: the same probe in the gaps before and after it, when no stack is loaded;
- `pingpong`: a TCP ping-pong between a thread on the generator CPU and one on the server CPU, 5 round trips every
  20 ms, its CPU time per unit (both ends): the cost of waking a thread on the other CPU;
- `steal`: the share of the server CPUs' time the hypervisor ran something else (/proc/stat `steal`).

It prints one line per window, then per meter the correlation of ln(meter) with ln(rps) and the log-sd of 2xx/s
left after a least-squares fit on it, and on the pairs of probes. With `--batch`, windows alternate between the
stack and PostgreSQL scheduled SCHED_OTHER and SCHED_BATCH (no wake-up preemption), as two arms.

    .venv/bin/python scripts/noise_sources.py                      # go-nethttp-pgx, perf-test rows=1 @ 50 VUs, 40 windows
    .venv/bin/python scripts/noise_sources.py --windows 25 --batch

The ping-pong is research tooling only: its own wake-ups cost 2–6 % of a CPU in the windows measured
(methodology), far too much to run beside every window of a benchmark.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measurer_overhead as mo  # noqa: E402  (a script beside this one)

from pgarena.contract import workloads as wl  # noqa: E402
from pgarena.results.models import Cell  # noqa: E402
from pgarena.system.speedprobe import SpeedProbe, reading_between  # noqa: E402

PINGPONG_TRIPS = 5
PINGPONG_INTERVAL_S = 0.02


def pingpong_child(cpu_a: int, cpu_b: int) -> None:
    """Print 'monotonic_ns cpu_ns' per unit: PINGPONG_TRIPS round trips of 64 bytes over loopback TCP between a
    thread pinned to `cpu_a` and a forked process pinned to `cpu_b`, the CPU time of both ends."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    if os.fork() == 0:
        os.sched_setaffinity(0, {cpu_b})
        peer, _ = server.accept()
        peer.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            started = time.thread_time_ns()
            for _ in range(PINGPONG_TRIPS):
                data = peer.recv(64)
                if not data:
                    os._exit(0)
                peer.sendall(data)
            peer.sendall((time.thread_time_ns() - started).to_bytes(8, "little"))
    os.sched_setaffinity(0, {cpu_a})
    conn = socket.create_connection(server.getsockname())
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        start, started = time.monotonic_ns(), time.thread_time_ns()
        for _ in range(PINGPONG_TRIPS):
            conn.sendall(b"x" * 64)
            got = 0
            while got < 64:
                got += len(conn.recv(64 - got))
        peer_ns = b""
        while len(peer_ns) < 8:
            peer_ns += conn.recv(8 - len(peer_ns))
        sys.stdout.write(f"{start} {time.thread_time_ns() - started + int.from_bytes(peer_ns, 'little')}\n")
        sys.stdout.flush()
        time.sleep(max(0.0, PINGPONG_INTERVAL_S - (time.monotonic_ns() - start) / 1e9))


class PingPong:
    """The ping-pong child and a thread reading its samples; `reading(start_ns, end_ns)` like SpeedProbe's."""

    def __init__(self, cpu_a: int, cpu_b: int) -> None:
        self.times: list[int] = []
        self.cpu: list[int] = []
        self.proc = subprocess.Popen([sys.executable, __file__, "--pingpong-child", f"{cpu_a},{cpu_b}"],
                                     stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            start, cpu = line.split()
            self.times.append(int(start))
            self.cpu.append(int(cpu))

    def reading(self, start_ns: int, end_ns: int) -> float | None:
        time.sleep(2 * PINGPONG_INTERVAL_S)
        return reading_between(list(self.times), list(self.cpu), start_ns, end_ns).unit_ns

    def stop(self) -> None:
        os.killpg(self.proc.pid, 9)
        self.proc.wait(timeout=5)


def steal_ticks(cpus: list[int]) -> int:
    """The `steal` column of /proc/stat summed over `cpus` (clock ticks)."""
    total = 0
    with open("/proc/stat") as f:
        for line in f:
            fields = line.split()
            if fields[0] in {f"cpu{c}" for c in cpus}:
                total += int(fields[8])
    return total


def tree_pids(pid: int) -> list[int]:
    import psutil

    try:
        root = psutil.Process(pid)
        return [root.pid, *(child.pid for child in root.children(recursive=True))]
    except psutil.NoSuchProcess:
        return []


def set_policy(pids: list[int], policy: int) -> None:
    """Every thread of `pids` to `policy` (threads started later inherit their creator's)."""
    for pid in pids:
        for tid in os.listdir(f"/proc/{pid}/task") if os.path.isdir(f"/proc/{pid}/task") else []:
            try:
                os.sched_setscheduler(int(tid), policy, os.sched_param(0))
            except OSError:
                pass  # the thread ended


def fit_sd(y: list[float], columns: list[list[float]]) -> float:
    """Residual sd of y after least squares on an intercept and `columns`."""
    import numpy as np

    x = np.column_stack([np.ones(len(y)), *columns])
    _, rss, *_ = np.linalg.lstsq(x, np.array(y), rcond=None)
    return math.sqrt(float(rss[0]) / (len(y) - x.shape[1])) if len(rss) else float("nan")


def analyse(rows: list[dict], meters: list[str]) -> None:
    y = [math.log(r["rps"]) for r in rows]
    print(f"\n{len(rows)} windows, log-sd of 2xx/s {statistics.stdev(y):.3f}")
    usable = [m for m in meters if all(r.get(m) for r in rows) and len({r[m] for r in rows}) > 1]  # read, and varying
    for m in usable:
        x = [math.log(r[m]) for r in rows]
        print(f"  {m:13s} r {statistics.correlation(x, y):+.2f}   log-sd after it {fit_sd(y, [x]):.3f}")
    probes = [m for m in usable if m in ("probe", "pingpong", "steal")]
    for a, b in itertools.combinations(probes, 2):
        print(f"  {a} + {b}: log-sd after both {fit_sd(y, [[math.log(r[a]) for r in rows], [math.log(r[b]) for r in rows]]):.3f}")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--pingpong-child"]:
        pingpong_child(*map(int, argv[1].split(",")))
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stack", default=mo.DEFAULT_STACK)
    p.add_argument("--rows", type=int, default=1, help="perf-test rows")
    p.add_argument("--vus", type=int, default=mo.DEFAULT_VUS)
    p.add_argument("--windows", type=int, default=40)
    p.add_argument("--window-s", type=float, default=1.0)
    p.add_argument("--gap-s", type=float, default=0.3, help="seconds without load before each window")
    p.add_argument("--no-pingpong", action="store_true", help="leave the ping-pong probe out")
    p.add_argument("--batch", action="store_true", help="alternate SCHED_OTHER and SCHED_BATCH windows")
    p.add_argument("--out", type=Path, default=Path("noise-sources.json"))
    args = p.parse_args(argv)
    try:
        inner = mo.parse_args(["--stack", args.stack, "--workload", wl.PERF_TEST, "--parameter", str(args.rows),
                               "--vus", str(args.vus), "--window-s", str(max(1.0, args.window_s)), "--warmup-s", "1"])
        arms = ["other", "batch"] if args.batch else ["other"]
        rows: list[dict] = []
        with ExitStack() as scope:
            h = mo.start_stack(scope, inner, ["oha"])
            server, generator = list(h.config.server_cpus), list(h.config.generator_cpus)
            os.sched_setaffinity(0, set(generator))
            probe = SpeedProbe(server).start()
            scope.callback(probe.stop)
            pingpong = None if args.no_pingpong else PingPong(generator[0], server[0])
            if pingpong:
                scope.callback(pingpong.stop)
            cell = Cell(stack=args.stack, workload=wl.PERF_TEST, parameter_name=wl.PARAMETER_NAMES[wl.PERF_TEST],
                        parameter=args.rows, vus=args.vus, engine="oha", warmup_seconds=0.5,
                        duration_seconds=args.window_s)
            for n in range(args.windows):
                arm = arms[n % len(arms)]
                policy = os.SCHED_BATCH if arm == "batch" else os.SCHED_OTHER
                set_policy(tree_pids(h.server.pid), policy)
                set_policy(tree_pids(h.db.postmaster_pid or 0), policy)
                gap = time.monotonic_ns()
                time.sleep(args.gap_s)
                before_ns, steal_before = time.monotonic_ns(), steal_ticks(server)
                w = mo.bare_window(h, h.engine_for["oha"], cell, n, arm, [])
                end_ns, steal_after = time.monotonic_ns(), steal_ticks(server)
                start_ns = end_ns - int(args.window_s * 1e9)
                time.sleep(args.gap_s)
                after = time.monotonic_ns()
                gap_pre, gap_post = probe.reading(gap, before_ns).unit_ns, probe.reading(end_ns, after).unit_ns
                elapsed = (end_ns - before_ns) / 1e9
                row = {"arm": arm, "rps": w.rps, "server_us": (w.stack_cpu_us_per_request or 0) + (w.db_cpu_us_per_request or 0),
                       "generator_us": w.generator_cpu_us_per_request,
                       "probe": probe.reading(start_ns, end_ns).unit_ns,
                       "probe_gap": math.sqrt(gap_pre * gap_post) if gap_pre and gap_post else None,
                       "pingpong": pingpong.reading(start_ns, end_ns) if pingpong else None,
                       # + half a tick: a window without steal must still have a logarithm
                       "steal": (steal_after - steal_before + 0.5) / (os.sysconf("SC_CLK_TCK") * elapsed * len(server))}
                rows.append(row)
                print(" ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()), flush=True)
            set_policy(tree_pids(h.server.pid), os.SCHED_OTHER)
            set_policy(tree_pids(h.db.postmaster_pid or 0), os.SCHED_OTHER)
    except mo.UsageError as exc:
        print(f"noise_sources: {exc}", file=sys.stderr)
        return 2
    meters = ["server_us", "generator_us", "probe", "probe_gap", "pingpong", "steal"]
    for arm in arms:
        if len(arms) > 1:
            print(f"\narm {arm}:", end="")
        analyse([r for r in rows if r["arm"] == arm], meters)
    args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
