#!/usr/bin/env python3
"""Two stacks loaded at once on the server CPU (a duet) against the interleaved rounds' solo windows.

The interleaved rounds pair two stacks' windows taken seconds apart, and the machine's slow spells, which last
about a window, reach one of them and not the other: the per-round log ratio of a pair scatters by about √2 times
a window's log-sd (docs/methodology.md, "The noise budget"). Loaded at the same time on the same CPU, two stacks
would share every spell, and their ratio would not see it (Bulej et al., "Duet Benchmarking: Improving
Measurement Accuracy in the Cloud", Empirical Software Engineering 25, 2020, run the two workloads of a
comparison in parallel for this reason).

Each side — a stack started as `pgarena run` starts it (scripts/measurer_overhead.py's `start_stack`: its own
PostgreSQL, pinned to the server CPUs, accounted) — is put, stack and PostgreSQL, into a group of the cgroup v1
`cpu` controller with the same weight, so while both are busy each gets half the server CPU; its 2xx/s is then
that half over its cost per request, and the ratio of the two sides' rates is their solo ratio if running beside
each other costs both alike. Per round, in a random order: one **duet** visit (both oha runs started together,
perf-test rows=1 at `--vus` each, pinned to the generator CPUs) and one **solo** visit of each side (as pgarena's
rounds take them). A visit is one oha run of `--lead-s` + `--window-s`; its window is the 2xx answers that ended
in [lead, lead + window). It prints, over the rounds, the per-round ln(A/B) of the duet and of the solo visits
(mean, sd; the solo one also after pgarena's speed probe), what the mean differs by (a bias of the duet), each
side's share of the server CPU in the duets, and the rounds each design needs for the same interval per minute.

The **alt** arm (`--arms alt,solo-a,solo-b`) loads both sides at once too, but lets them take the server CPU in
turns of `--turn-ms` (the cgroup v1 freezer: the other side, stack and PostgreSQL, is frozen before one is thawed),
so each runs alone in its turns, as in a solo window, while the machine's slow spells, longer than a turn, reach
both alike; a side's figure is its 2xx per thawed second of the window. The duet's sharing of the CPU (the caches,
the scheduler) cost the stacks unequally (docs/methodology.md, "Two stacks at once"); turns share neither.

    .venv/bin/python scripts/duet.py --stacks go-nethttp-pgx,go-nethttp-pgx --rounds 40     # A/A: two copies
    .venv/bin/python scripts/duet.py --stacks go-nethttp-pgx,python-django --rounds 40
    .venv/bin/python scripts/duet.py --stacks go-nethttp-pgx,python-django --arms alt,solo-a,solo-b --turn-ms 50

A user's mistake (unknown stack, oha missing, no cgroup v1 `cpu` or, for alt, `freezer` controller) is one line
and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measurer_overhead as mo  # noqa: E402  (a script beside this one)

from pgarena.contract import workloads as wl  # noqa: E402
from pgarena.load.window import load_spec  # noqa: E402
from pgarena.system.speedprobe import SpeedProbe  # noqa: E402

MOUNTS = Path("/proc/self/mounts")
GROUP_PARENT = "pgarena-duet"
SHARES = 1024
ARMS = ("duet", "alt", "solo-a", "solo-b")
"""duet: both at once, equal CPU weights; alt: both at once, in turns (`--turn-ms`, the cgroup v1 freezer); solo-a,
solo-b: each alone, as pgarena's rounds take them."""
FREEZE_POLLS = 500


def cgroup_mount(mounts_text: str, controller: str = "cpu") -> Path | None:
    """The mount point of the cgroup v1 hierarchy that has `controller`, or None."""
    for line in mounts_text.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[2] == "cgroup" and controller in fields[3].split(","):
            return Path(fields[1])
    return None


class CpuGroup:
    """A cgroup v1 group holding whole process trees (in the `cpu` hierarchy: of weight SHARES); closing moves
    them back to the root."""

    def __init__(self, mount: Path, name: str) -> None:
        self.mount, self.path = mount, mount / GROUP_PARENT / name
        self.path.mkdir(parents=True, exist_ok=True)
        if (self.path / "cpu.shares").exists():
            (self.path / "cpu.shares").write_text(str(SHARES))

    def add_tree(self, pid: int) -> int:
        moved = 0
        root = psutil.Process(pid)
        for proc in [root, *root.children(recursive=True)]:
            try:
                (self.path / "cgroup.procs").write_text(str(proc.pid))
                moved += 1
            except (ProcessLookupError, OSError):
                continue
        return moved

    def close(self) -> None:
        for line in (self.path / "cgroup.procs").read_text().split():
            try:
                (self.mount / "cgroup.procs").write_text(line)
            except OSError:
                pass
        for _ in range(20):
            try:
                self.path.rmdir()
                break
            except OSError:
                time.sleep(0.05)
        try:
            self.path.parent.rmdir()
        except OSError:
            pass


class FreezeGroup(CpuGroup):
    """A cgroup v1 `freezer` group: `freeze()` stops every task of it and returns once the kernel says FROZEN."""

    def _state(self, state: str) -> None:
        (self.path / "freezer.state").write_text(state)

    def freeze(self) -> None:
        self._state("FROZEN")
        for _ in range(FREEZE_POLLS):
            if (self.path / "freezer.state").read_text().strip() == "FROZEN":
                return
            time.sleep(0.0002)

    def thaw(self) -> None:
        self._state("THAWED")

    def close(self) -> None:
        self.thaw()
        super().close()


class Alternator:
    """During a visit, the two sides take the server CPU in turns of `slice_s`: the other side is frozen (stack and
    PostgreSQL) before one is thawed, so each runs alone in its turns, and the machine's slow spells, longer than
    a turn, reach both alike. `thawed_s(side, start_ns, end_ns)` is a side's thawed time in an interval."""

    def __init__(self, groups: list[FreezeGroup], slice_s: float, first: int) -> None:
        self.groups, self.slice_s, self.first = groups, slice_s, first
        self.turns: list[tuple[int, int, int]] = []  # (side, thawed at ns, frozen at ns)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Alternator:
        self.groups[1 - self.first].freeze()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        for group in self.groups:
            group.thaw()

    def _run(self) -> None:
        side = self.first
        while not self._stop.is_set():
            self.groups[side].thaw()
            thawed = time.monotonic_ns()
            self._stop.wait(self.slice_s)
            self.groups[side].freeze()
            self.turns.append((side, thawed, time.monotonic_ns()))
            side = 1 - side

    def thawed_s(self, side: int, start_ns: int, end_ns: int) -> float:
        return sum(max(0, min(b, end_ns) - max(a, start_ns)) for s, a, b in self.turns if s == side) / 1e9


class Side:
    """One started stack: its oha command, its CPU counters, its cgroup."""

    def __init__(self, h: mo.Harness, label: str, vus: int) -> None:
        self.h, self.label = h, label
        self.engine = h.engine_for["oha"]
        self.spec = load_spec(wl.PERF_TEST, 1, base_url=h.base_url, routes=h.routes, connections=vus, config=h.config)
        self.raw = h.workdir / "duet"
        self.raw.mkdir(parents=True, exist_ok=True)
        self.cpus = ",".join(map(str, h.config.generator_cpus))

    def start(self, seconds: float, stem: str) -> subprocess.Popen:
        argv = self.engine.command(replace(self.spec, duration_s=seconds), self.raw, stem)
        return subprocess.Popen(["taskset", "-c", self.cpus, *argv], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)

    def answers(self, stem: str, start_s: float, end_s: float) -> tuple[int, int]:
        """2xx answers that ended in [start_s, end_s), and in the whole run."""
        path = self.engine.requests_file(self.raw, stem)
        with sqlite3.connect(path) as conn:
            (n, total) = conn.execute("SELECT count(*) FILTER (WHERE end >= ? AND end < ?), count(*) FROM oha "
                                      "WHERE status BETWEEN 200 AND 299", (start_s, end_s)).fetchone()
        path.unlink()
        return int(n or 0), int(total or 0)

    def cpu_seconds(self) -> float:
        return sum(meter() for meter in self.h.meters.values())


def visit(sides: list[Side], seconds: float, stem: str, lead_s: float, window_s: float,
          timeout_s: float, turns: Alternator | None = None) -> list[dict]:
    """One oha run per side, started together; each side's 2xx in its window and CPU seconds over the visit. With
    `turns` (an `alt` visit) the sides run in turns, and each side's `rate` is its 2xx per thawed second of the
    window."""
    cpu0 = [s.cpu_seconds() for s in sides]
    with turns if turns is not None else ExitStack():
        started = time.monotonic_ns()
        procs = [s.start(seconds, stem) for s in sides]
        for p in procs:
            try:
                p.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    out = []
    window = (started + int(lead_s * 1e9), started + int((lead_s + window_s) * 1e9))
    for i, (side, c0) in enumerate(zip(sides, cpu0)):
        n, total = side.answers(stem, lead_s, lead_s + window_s)
        got = {"started_ns": started, "answers": n, "answers_all": total, "cpu_s": side.cpu_seconds() - c0}
        if turns is not None:
            got["thawed_s"] = turns.thawed_s(i, *window)
            got["rate"] = n / got["thawed_s"] if got["thawed_s"] > 0 else 0.0
        out.append(got)
    return out


def _rate(side: dict) -> float:
    """A side's figure in a visit: 2xx per thawed second in an `alt` visit, its window's 2xx otherwise."""
    return side.get("rate", side["answers"])


def _ln(a: dict, b: dict) -> float | None:
    return math.log(_rate(a) / _rate(b)) if _rate(a) and _rate(b) else None


def summary(rounds: list[dict], window_s: float, slot_s: dict[str, float]) -> dict:
    """The per-round log ratios of the designs (the together arms, duet and alt, against the solo visits) and what
    they say."""
    pairs = [(r["solo-a"][0], r["solo-b"][0]) for r in rounds if r["solo-a"][0]["answers"] and r["solo-b"][0]["answers"]]
    solo = [math.log(a["answers"] / b["answers"]) for a, b in pairs]
    out: dict = {"rounds": len(rounds), "solo": _moments(solo)}
    z = [(a.get("probe_ns"), b.get("probe_ns")) for a, b in pairs]
    if len(solo) >= 5 and all(za and zb for za, zb in z):
        dz = [math.log(za / zb) for za, zb in z]
        if statistics.pvariance(dz) > 0:
            beta = _slope(dz, solo)
            out["solo_after_probe"] = {"beta": beta, "sd": _sd([d - beta * x for d, x in zip(solo, dz)], extra_df=1)}
    for arm in [a for a in ("duet", "alt") if rounds and a in rounds[0]]:
        values = [v for v in (_ln(*r[arm]) for r in rounds) if v is not None]
        out[arm] = _moments(values)
        if not values or not solo:
            continue
        both = [x - y for x, y in ((_ln(*r[arm]), _ln(r["solo-a"][0], r["solo-b"][0])) for r in rounds)
                if x is not None and y is not None]
        out[f"{arm}_minus_solo"] = _moments(both)
        shares = [r[arm][0]["cpu_s"] / (r[arm][0]["cpu_s"] + r[arm][1]["cpu_s"]) for r in rounds
                  if r[arm][0]["cpu_s"] + r[arm][1]["cpu_s"] > 0]
        out[f"{arm}_cpu_share_a"] = _moments(shares)
        # CPU seconds (stack + its PostgreSQL) per 2xx of B over A's, the machine's speed the same for both: the
        # solo throughput ratio of two stacks that saturate the server CPU.
        costs = [math.log((b["cpu_s"] / b["answers_all"]) / (a["cpu_s"] / a["answers_all"]))
                 for a, b in (r[arm] for r in rounds) if a["cpu_s"] > 0 and b["cpu_s"] > 0
                 and a["answers_all"] and b["answers_all"]]
        out[f"{arm}_cost_ratio"] = _moments(costs)
        # Information per minute: 1/sd² per pair of figures, one together slot against two solo slots.
        sd_solo = out.get("solo_after_probe", out["solo"])["sd"]
        if out[arm]["sd"] and sd_solo:
            per_min = 60 / slot_s[arm] / out[arm]["sd"] ** 2
            per_min_solo = 60 / (slot_s["solo-a"] + slot_s["solo-b"]) / sd_solo ** 2
            out[f"information_per_minute_{arm}_over_solo"] = per_min / per_min_solo
    out["slot_s"] = slot_s
    out["window_s"] = window_s
    return out


def _moments(xs: list[float]) -> dict:
    if len(xs) < 2:
        return {"n": len(xs), "mean": xs[0] if xs else None, "sd": None, "se": None}
    sd = statistics.stdev(xs)
    return {"n": len(xs), "mean": statistics.fmean(xs), "sd": sd, "se": sd / math.sqrt(len(xs))}


def _sd(xs: list[float], extra_df: int = 0) -> float | None:
    n = len(xs)
    if n - 1 - extra_df < 1:
        return None
    m = statistics.fmean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1 - extra_df))


def _slope(x: list[float], y: list[float]) -> float:
    mx, my = statistics.fmean(x), statistics.fmean(y)
    sxx = sum((a - mx) ** 2 for a in x)
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / sxx if sxx > 0 else 0.0


def run(args: argparse.Namespace) -> dict:
    mounts = MOUNTS.read_text()
    mount = cgroup_mount(mounts)
    if mount is None or not os.access(mount, os.W_OK):
        raise mo.UsageError("a duet needs the cgroup v1 'cpu' controller mounted and writable (as root)")
    freezer = cgroup_mount(mounts, "freezer")
    if "alt" in args.arms and (freezer is None or not os.access(freezer, os.W_OK)):
        raise mo.UsageError("the alt arm needs the cgroup v1 'freezer' controller mounted and writable (as root)")
    rng = random.Random(args.seed)
    seconds = args.lead_s + args.window_s
    rounds: list[dict] = []
    slot: dict[str, list[float]] = {arm: [] for arm in args.arms}
    with ExitStack() as scope:
        sides, frozen = [], []
        for label, stack in zip("ab", args.stacks):
            h = mo.start_stack(scope, mo.parse_args(["--stack", stack, "--workload", wl.PERF_TEST, "--parameter",
                                                     "1", "--vus", str(args.vus), "--window-s", "1",
                                                     "--warmup-s", "1"]), ["oha"])
            side = Side(h, label, args.vus)
            roots = [h.server.pid, *([h.db.postmaster_pid] if h.db.postmaster_pid else [])]
            for group in [CpuGroup(mount, f"{label}-{os.getpid()}"),
                          *([FreezeGroup(freezer, f"{label}-{os.getpid()}")] if "alt" in args.arms else [])]:
                scope.callback(group.close)
                moved = sum(group.add_tree(pid) for pid in roots)
                print(f"[{label}] {stack}: {moved} processes in {group.path}", file=sys.stderr)
                if isinstance(group, FreezeGroup):
                    frozen.append(group)
            sides.append(side)
        probe = SpeedProbe(list(sides[0].h.config.server_cpus)).start()
        scope.callback(probe.stop)

        def turns() -> Alternator:
            return Alternator(frozen, args.turn_ms / 1000, rng.randrange(2))
        for i, side in enumerate(sides):  # warm each alone, then together
            visit([side], args.warm_s, f"warm{i}", 0, args.warm_s, args.warm_s + 60)
        for arm in [a for a in ("duet", "alt") if a in args.arms]:
            visit(sides, args.warm_s, f"warm-{arm}", 0, args.warm_s, args.warm_s + 60,
                  turns() if arm == "alt" else None)
        deadline = time.monotonic() + args.max_minutes * 60
        for r in range(args.rounds):
            if time.monotonic() > deadline:
                print(f"stopped after {r} rounds: --max-minutes {args.max_minutes:g} spent", file=sys.stderr)
                break
            record: dict = {}
            for arm in rng.sample(args.arms, len(args.arms)):
                chosen = sides if arm in ("duet", "alt") else [sides[0] if arm == "solo-a" else sides[1]]
                t0 = time.monotonic()
                got = visit(chosen, seconds, f"r{r}-{arm}", args.lead_s, args.window_s, seconds + 60,
                            turns() if arm == "alt" else None)
                slot[arm].append(time.monotonic() - t0)
                for g in got:
                    lead_ns = g["started_ns"] + int(args.lead_s * 1e9)
                    g["probe_ns"] = probe.reading(lead_ns, lead_ns + int(args.window_s * 1e9), wait_s=0.5).unit_ns
                record[arm] = got
            rounds.append(record)
            print(f"round {r + 1}/{args.rounds}: " + ", ".join(
                f"{arm} " + "/".join(f"{_rate(g):.0f}" for g in got) for arm, got in record.items()),
                file=sys.stderr, flush=True)
    slot_s = {arm: statistics.fmean(v) if v else math.nan for arm, v in slot.items()}
    return {"args": {k: v for k, v in vars(args).items() if k != "out"}, "rounds": rounds,
            "summary": summary(rounds, args.window_s, slot_s)}


def report(s: dict, stacks: list[str]) -> str:
    def f(m: dict, key: str = "sd") -> str:
        return "n/a" if m.get(key) is None else f"{m[key]:+.3f}" if key == "mean" else f"{m[key]:.3f}"

    def ln_line(name: str, m: dict) -> str:
        return (f"{name} ln(A/B) per round: mean {f(m, 'mean')} (ratio {math.exp(m['mean'] or 0):.3f}), "
                f"sd {f(m)}")

    lines = [f"A = {stacks[0]}, B = {stacks[1]}; {s['rounds']} rounds; slots (s): "
             + ", ".join(f"{k} {v:.2f}" for k, v in s["slot_s"].items()),
             *(ln_line(arm, s[arm]) for arm in ("duet", "alt") if arm in s), ln_line("solo", s["solo"])]
    if "solo_after_probe" in s:
        p = s["solo_after_probe"]
        lines.append(f"solo after the speed probe: sd {p['sd']:.3f} (β {p['beta']:+.2f})")
    for arm in ("duet", "alt"):
        if f"{arm}_minus_solo" not in s:
            continue
        m = s[f"{arm}_minus_solo"]
        lines.append(f"{arm} − solo (its bias, ln): {f(m, 'mean')} ± {f(m, 'se')} (se)")
        lines.append(f"A's share of the server CPU in the {arm} visits: {s[f'{arm}_cpu_share_a']['mean']:.3f} "
                     f"(sd {f(s[f'{arm}_cpu_share_a'])})")
        c = s[f"{arm}_cost_ratio"]
        if c.get("mean") is not None:
            lines.append(f"{arm} ln(B's CPU per 2xx / A's): mean {f(c, 'mean')} (ratio {math.exp(c['mean']):.3f}), "
                         f"sd {f(c)}")
        if f"information_per_minute_{arm}_over_solo" in s:
            lines.append(f"information per minute, {arm} / solo (after the probe): "
                         f"{s[f'information_per_minute_{arm}_over_solo']:.2f}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stacks", required=True, type=lambda s: [x for x in s.split(",") if x],
                   help="A,B (the same id twice for an A/A duet)")
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--vus", type=int, default=50, help="connections of each side's oha")
    p.add_argument("--lead-s", type=float, default=0.5, help="seconds of a visit before its window")
    p.add_argument("--window-s", type=float, default=1.0)
    p.add_argument("--warm-s", type=float, default=15.0, help="warm-up of each side alone, then of the duet")
    p.add_argument("--max-minutes", type=float, default=20.0, help="stop taking rounds after this")
    p.add_argument("--arms", default="duet,solo-a,solo-b", type=lambda s: [x for x in s.split(",") if x],
                   help=f"the visits of each round, in a random order, of {', '.join(ARMS)} (both solo ones needed)")
    p.add_argument("--turn-ms", type=float, default=50.0, help="the alt arm: each side's turn on the server CPU")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, default=Path("duet.json"))
    args = p.parse_args(argv)
    try:
        if len(args.stacks) != 2:
            raise mo.UsageError("--stacks takes exactly two stack ids, A,B")
        if not {"solo-a", "solo-b"} <= set(args.arms) <= set(ARMS) or len(set(args.arms)) != len(args.arms):
            raise mo.UsageError(f"--arms takes solo-a, solo-b and any of duet, alt, once each; got {','.join(args.arms)}")
        if not 5 <= args.turn_ms <= 1000:
            raise mo.UsageError("need 5 <= --turn-ms <= 1000")
        if not (1 <= args.rounds <= 1000 and args.window_s > 0 and args.lead_s >= 0 and 0 < args.warm_s <= 600
                and 0 < args.max_minutes <= 240):
            raise mo.UsageError("need 1 <= --rounds <= 1000, --window-s > 0, --lead-s >= 0, 0 < --warm-s <= 600, "
                                "0 < --max-minutes <= 240")
        result = run(args)
    except mo.UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.out.write_text(json.dumps(result, indent=1))
    print(report(result["summary"], args.stacks))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
