"""Candidate speed meters beside a run, and how well each explains its windows' 2xx/s (docs/methodology.md,
"The machine's speed in every window"). Research tooling: the run's own probe is system/speedprobe.py.

    # 1. start the meters on the server CPU for as long as the run lasts, then the run beside them
    PYTHONPATH=src .venv/bin/python scripts/speed_meters.py meter loop 1 /tmp/m 600 &
    PYTHONPATH=src .venv/bin/python scripts/speed_meters.py meter cached 1 /tmp/m 600 &
    PYTHONPATH=src .venv/bin/python scripts/speed_meters.py meter dram 1 /tmp/m 600 &
    PYTHONPATH=src .venv/bin/python scripts/speed_meters.py meter late 1 /tmp/m 600 &
    PYTHONPATH=src .venv/bin/python scripts/speed_meters.py meter twopass 1 /tmp/m 600 &
    PYTHONPATH=src .venv/bin/python scripts/speed_meters.py meter l3 1 /tmp/m 600 &
    .venv/bin/pgarena run --workloads perf-test --budget 8m --run-id meters-x
    # 2. the per-window log-sd after each meter as a covariate in the stack + round fit
    PYTHONPATH=src .venv/bin/python scripts/speed_meters.py analyse results/meters-x /tmp/m

Meters (each its own process pinned to one CPU, one sample every 20 ms; `late` every 1 ms): `loop` the first
probe's pure-Python loop; `cached` the probe's unit itself (speedprobe.UnitOfWork) as a normal task; `dram`
20,000 reads from a 64 MiB array; `late` a SCHED_FIFO process's timer lateness (time the CPU did not run at all);
`twopass` the probe's unit twice from one wake-up, each pass timed: `cold` the first (the probe's reading: its
array as the stack left the caches), `warm` the second right after (the same reads with the caches its own) —
whether the probe's dependence on the stack beside it comes from the caches the stack leaves; `sched` the probe's
unit on alternate wake-ups under the normal scheduler (`cfs`) and under SCHED_FIFO (`fifo`: no task preempts
it mid-unit), and `preempted` 1 + the involuntary context switches of the thread during a `cfs` unit; `refault` the machine's file
page refaults (/proc/vmstat workingset_refault_file: pages the kernel evicted and had to read back) per 100 ms;
`l3`, `syscall`, `pingpong`, `combo` and `l2` other units at the probe's SCHED_FIFO priority (`real_time`).
`analyse` also reads each timing meter over the idle gaps around every window (`<meter>@gaps`: from the end of the
window before to the start of this one's load, and on to the next; `probe@gaps` the run's own gap readings) and
ends with every meter at once as covariates. For every meter it also prints the F test of the stack
effects on its log readings (analysis/probecheck.py: does the meter read the stack beside it?) and the two stacks
it reads most apart.
Window times come from the mtime of each window's raw generator output (its end) less its duration.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

MODES = ("loop", "cached", "dram", "late", "twopass", "sched", "refault", "l3", "syscall", "pingpong", "combo", "l2")
METERS = ("loop", "cached", "dram", "late", "cold", "warm", "cfs", "fifo", "preempted", "refault", "l3", "syscall",
          "pingpong", "combo", "l2")
"""The readings `analyse` looks for (`twopass` writes `cold` and `warm`; `sched` writes `cfs`, `fifo` and
`preempted`)."""
COUNTS = ("late", "refault")
"""Meters whose lines are counts per 100 ms, read per window as 1 + their sum per second."""


def meter(mode: str, cpu: int, out: str, seconds: float) -> int:
    """Write `wall_time value` lines to `<out>.<mode>` for `seconds`: a unit's thread CPU ns, or (late) the
    summed lateness ns per 100 ms."""
    os.sched_setaffinity(0, {cpu})
    end = time.time() + seconds
    if mode == "twopass":
        return twopass(out, end)
    if mode == "sched":
        return sched(out, end)
    if mode == "refault":
        return refault(out, end)
    if mode in ("l3", "syscall", "pingpong", "combo", "l2"):
        return real_time(mode, out, end)
    with open(f"{out}.{mode}", "w") as f:
        if mode == "late":
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
            total, since = 0, time.time()
            while time.time() < end:
                before = time.monotonic_ns()
                time.sleep(0.001)
                total += max(0, time.monotonic_ns() - before - 1_000_000)
                if time.time() - since >= 0.1:
                    f.write(f"{time.time():.3f} {total}\n")
                    total, since = 0, time.time()
            return 0
        if mode == "loop":
            def unit() -> int:
                x = 0
                for i in range(10_000):
                    x = (x * 31 + i) & 0xFFFF
                return x
        elif mode == "cached":
            from pgarena.system.speedprobe import UnitOfWork

            unit = UnitOfWork()  # the run's own probe unit, so the comparison is with exactly what runs
        else:
            import numpy as np
            size = (64 << 20) // 8
            values = np.arange(size, dtype=np.int64)
            positions = np.random.default_rng(1).integers(0, size, 20_000)

            def unit() -> int:
                return int(values[positions].sum())
        while time.time() < end:
            start, before = time.time(), time.thread_time_ns()
            unit()
            f.write(f"{start:.3f} {time.thread_time_ns() - before}\n")
            time.sleep(0.02)
    return 0


def twopass(out: str, end: float) -> int:
    """The probe's unit twice per wake-up until `end`: `<out>.cold` the first pass, `<out>.warm` the second."""
    from pgarena.system.speedprobe import UnitOfWork

    unit = UnitOfWork()
    with open(f"{out}.cold", "w") as cold, open(f"{out}.warm", "w") as warm:
        while time.time() < end:
            start, before = time.time(), time.thread_time_ns()
            unit()
            middle = time.thread_time_ns()
            unit()
            after = time.thread_time_ns()
            cold.write(f"{start:.3f} {middle - before}\n")
            warm.write(f"{start:.3f} {after - middle}\n")
            time.sleep(0.02)
    return 0


def sched(out: str, end: float) -> int:
    """The probe's unit on alternate wake-ups as a normal task and as a SCHED_FIFO one until `end`."""
    import resource

    from pgarena.system.speedprobe import UnitOfWork

    unit = UnitOfWork()
    fifo = False
    with open(f"{out}.cfs", "w") as cfs, open(f"{out}.fifo", "w") as rt, open(f"{out}.preempted", "w") as pre:
        while time.time() < end:
            if fifo:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
            switches = resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw
            start, before = time.time(), time.thread_time_ns()
            unit()
            used = time.thread_time_ns() - before
            switched = resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw - switches
            if fifo:
                os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
                rt.write(f"{start:.3f} {used}\n")
            else:
                cfs.write(f"{start:.3f} {used}\n")
                pre.write(f"{start:.3f} {1 + switched}\n")
            fifo = not fifo
            time.sleep(0.02)
    return 0


def real_time(mode: str, out: str, end: float) -> int:
    """A unit at the probe's SCHED_FIFO priority, every 20 ms until `end`: `combo` the probe's own unit
    (speedprobe.UnitOfWork since 2026-11-29: 5,000 reads at random positions of an 8 MiB array, then 250 one-byte
    reads of /dev/zero); `l3` its reads alone (beyond the core's L2, within the shared L3: another tenant's use of
    the L3 slows them); `syscall` 500 one-byte reads of /dev/zero alone (the kernel's entry and exit, which the
    stacks' network and PostgreSQL's round trips cross many times a request); `pingpong` 20 one-byte round trips
    over a socket pair with a child on the same CPU at the same priority (a wake-up and two context switches each,
    as a request between a stack and PostgreSQL; timed by wall time, so the switches count); `l2` the probe's unit
    before (20,000 reads from a 256 KiB array, in the core's L2)."""
    import socket

    import numpy as np

    from pgarena.system.speedprobe import PROBE_RT_PRIORITY, UnitOfWork

    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(PROBE_RT_PRIORITY))
    clock = time.thread_time_ns
    if mode == "combo":
        unit = UnitOfWork()
    elif mode == "l3":
        unit = UnitOfWork(syscalls=0)
    elif mode == "syscall":
        unit = UnitOfWork(iterations=0, syscalls=500)
    elif mode == "l2":
        values = np.arange((256 << 10) // 8, dtype=np.int64)
        positions = np.random.default_rng(1).integers(0, len(values), 20_000)

        def unit() -> int:
            return int(values[positions].sum())
    else:
        clock = time.monotonic_ns
        mine, theirs = socket.socketpair()
        if os.fork() == 0:  # the echo: same CPU, same priority, ends when the meter's end of the pair closes
            mine.close()
            while data := theirs.recv(1):
                theirs.sendall(data)
            os._exit(0)
        theirs.close()

        def unit() -> int:
            for _ in range(20):
                mine.sendall(b"x")
                mine.recv(1)
            return 20
    with open(f"{out}.{mode}", "w") as f:
        while time.time() < end:
            start, before = time.time(), clock()
            unit()
            f.write(f"{start:.3f} {clock() - before}\n")
            time.sleep(0.02)
    return 0


def refault(out: str, end: float) -> int:
    """The file page refaults of the whole machine per 100 ms until `end` (`<out>.refault`)."""
    def count() -> int:
        with open("/proc/vmstat") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("workingset_refault_file "))

    with open(f"{out}.refault", "w") as f:
        last = count()
        while time.time() < end:
            time.sleep(0.1)
            now = count()
            f.write(f"{time.time():.3f} {now - last}\n")
            last = now
    return 0


def _gap_readings(rows: list[dict], meters: dict) -> list[str]:
    """Each timing meter's reading of the idle gaps around every window, as `<meter>@gaps` in its row: the log of the
    mean of its units from 10 ms after the window before ended to 30 ms before this window's load (re-warm) began,
    and the same after it; `probe@gaps` (the run's own, speedprobe.SpeedProbe.load_starts) where the run read it.
    The names of the readings added."""
    import numpy as np

    ordered = sorted(rows, key=lambda r: r["_span"][2])
    spans = [(before["_span"][2] + 0.01, row["_span"][0] - 0.03) for before, row in zip(ordered, ordered[1:])]
    for name, data in meters.items():
        for i, row in enumerate(ordered):
            around = [spans[j] for j in (i - 1, i) if 0 <= j < len(spans)]
            units = np.concatenate([data[(data[:, 0] >= low) & (data[:, 0] <= high), 1] for low, high in around])
            row[f"{name}@gaps"] = math.log(units.mean()) if len(units) >= 3 else None
    return [f"{m}@gaps" for m in meters] + (["probe@gaps"] if any(r["probe@gaps"] for r in rows) else [])


def analyse(run_dir: str, out: str) -> int:
    """Per-window log-sd of ln(2xx/s) after a stack + round fit, without and with each meter's window mean
    (log) as a covariate, and the correlation of the two residuals."""
    import numpy as np

    results = json.loads((Path(run_dir) / "results.json").read_text())
    meters = {m: np.loadtxt(f"{out}.{m}", ndmin=2) for m in METERS if Path(f"{out}.{m}").exists()}
    rows = []
    for cell in results["cells"]:
        for rep in cell["repetitions"]:
            if not rep.get("rps") or rep.get("round") is None:
                continue
            end = os.path.getmtime(Path(run_dir) / rep["raw_output"])
            start = end - rep["duration_seconds"]
            gaps = [rep.get(f"reference_gap_{side}_ns") for side in ("before", "after")]
            row = {"stack": cell["stack"], "cell": (cell["workload"], cell["parameter"], cell["vus"]),
                   "round": rep["round"], "y": math.log(rep["rps"]),
                   "probe": math.log(rep["reference_unit_ns"]) if rep.get("reference_unit_ns") else None,
                   "probe@gaps": math.fsum(math.log(g) for g in gaps) / 2 if all(gaps) else None,
                   "_span": (start - (rep.get("rewarm_seconds") or 0.0), start, end)}
            for name, data in meters.items():
                inside = data[(data[:, 0] >= start) & (data[:, 0] <= end), 1]
                value = inside.sum() / rep["duration_seconds"] + 1 if name in COUNTS else inside.mean() if len(inside) else 0
                row[name] = math.log(value) if value > 0 else None
            rows.append(row)
    gapped = _gap_readings(rows, {m: d for m, d in meters.items() if m not in COUNTS})
    names = ["probe", *meters, *gapped]
    rows = [r for r in rows if all(r[n] is not None for n in names)]
    if not rows:
        print("no window with every meter's reading", file=sys.stderr)
        return 1
    groups = sorted({(r["stack"], r["cell"]) for r in rows})
    rounds = sorted({(r["cell"], r["round"]) for r in rows})
    design = np.zeros((len(rows), len(groups) + len(rounds)))
    for i, r in enumerate(rows):
        design[i, groups.index((r["stack"], r["cell"]))] = 1
        design[i, len(groups) + rounds.index((r["cell"], r["round"]))] = 1
    y = np.array([r["y"] for r in rows])

    def residuals(matrix, target):
        """The residuals, their degrees of freedom and the coefficients of the least-squares fit."""
        coef, *_ = np.linalg.lstsq(matrix, target, rcond=None)
        return target - matrix @ coef, len(target) - np.linalg.matrix_rank(matrix), coef

    from scipy.stats import f as f_distribution

    e, df, _ = residuals(design, y)
    round_design = design[:, len(groups):]
    print(f"{len(rows)} windows, {len(groups)} stack × cell, {len(rounds)} rounds; window log-sd {math.sqrt(e @ e / df):.3f}")
    for name in names:
        z = np.array([r[name] for r in rows])
        ez, dfz, _ = residuals(np.column_stack([design, z]), y)
        zr, _, coef = residuals(design, z)
        # does the meter read the stack? F of the stack effects on z (probecheck's test, here on the array)
        z_round, _, _ = residuals(round_design, z)
        extra = max(0.0, z_round @ z_round - zr @ zr)
        f = (extra / (len(groups) - 1)) / (zr @ zr / df)
        level = coef[:len(groups)]  # each stack × cell group's effect, centred within its cell (tables differ in level)
        centre = {cell: level[[i for i, g in enumerate(groups) if g[1] == cell]].mean() for cell in {g[1] for g in groups}}
        effects = sorted((level[i] - centre[g[1]], g[0]) for i, g in enumerate(groups))
        print(f"  with {name:7s}: log-sd {math.sqrt(ez @ ez / dfz):.3f}, residual r {np.corrcoef(e, zr)[0, 1]:+.2f}; "
              f"by stack F {f:.2f} on {len(groups) - 1} and {df} df, p {f_distribution.sf(f, len(groups) - 1, df):.2g} "
              f"(fastest beside {effects[0][1]} {math.expm1(effects[0][0]):+.1%}, "
              f"slowest beside {effects[-1][1]} {math.expm1(effects[-1][0]):+.1%}; residual sd {math.sqrt(zr @ zr / df):.3f})")
    if len(names) > 1:  # every meter at once: what they explain together, and each one's slope
        columns = np.column_stack([np.array([r[n] for r in rows]) for n in names])
        ej, dfj, coef = residuals(np.column_stack([design, columns]), y)
        slopes = ", ".join(f"{n} {c:+.2f}" for n, c in zip(names, coef[-len(names):]))
        print(f"  with all {len(names)}: log-sd {math.sqrt(ej @ ej / dfj):.3f} (slopes {slopes})")
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) == 5 and args[0] == "meter" and args[1] in MODES:
        sys.exit(meter(args[1], int(args[2]), args[3], float(args[4])))
    if len(args) == 3 and args[0] == "analyse":
        sys.exit(analyse(args[1], args[2]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)
