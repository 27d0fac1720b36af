"""scripts/window_residuals.py on a stored run: a stack still warming up in the first rounds shows in its first
residuals and in the early rounds' residual sd; a folder without results is one line and exit code 2."""

from __future__ import annotations

import json
import math
import os
import random
import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "window_residuals.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def _stored_run(folder: Path, warming: str | None) -> None:
    """8 stacks × 12 interleaved rounds of perf-test rows=1; `warming` runs 45 % slower in rounds 1–5."""
    rng = random.Random(7)
    raw = folder / "raw"
    raw.mkdir()
    cells, t = [], 1_800_000_000.0
    stacks = {**{f"s{i}": 500.0 * i for i in range(1, 8)}, "warming": 1500.0}
    reps: dict[str, list[dict]] = {s: [] for s in stacks}
    for rnd in range(1, 13):
        for stack in rng.sample(sorted(stacks), len(stacks)):
            t += 1.7
            rps = stacks[stack] * math.exp(rng.gauss(0, 0.05)) * (0.55 if stack == warming and rnd <= 5 else 1.0)
            name = f"raw/{stack}-r{rnd}.json"
            (folder / name).write_text("{}")
            os.utime(folder / name, (t, t))
            reps[stack].append({"round": rnd, "rps": rps, "reference_unit_ns": 2e5 * math.exp(rng.gauss(0, 0.03)),
                                "raw_output": name})
    for stack, mine in reps.items():
        cells.append({"stack": stack, "workload": "perf-test", "parameter": 1, "repetitions": mine})
    (folder / "results.json").write_text(json.dumps({"cells": cells}))


def _early_later(out: str) -> tuple[float, float]:
    found = re.search(r"residual sd in rounds 1–5 ([0-9.]+) \(40 windows\), later ([0-9.]+) \(56\)", out)
    assert found, out
    return float(found.group(1)), float(found.group(2))


def _stack_line(out: str, stack: str) -> tuple[list[float], float]:
    """A stack's first eight residuals and the mean of the rest, from the script's table."""
    line = next(x for x in out.splitlines() if x.strip().startswith(f"{stack} "))
    first, rest = line.split("|")
    return [float(v) for v in first.split()[1:]], float(rest)


def test_a_stack_still_warming_up_shows_in_the_first_rounds(tmp_path):
    _stored_run(tmp_path, warming="warming")
    done = _run(str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("96 windows, 8 stacks, 12 rounds; residual sd ")
    first, rest = _stack_line(done.stdout, "warming")
    assert all(v < -0.1 for v in first[:5]) and rest > 0.1, done.stdout  # below its fitted level, then above
    early, later = _early_later(done.stdout)
    assert early > later, done.stdout
    slowest = done.stdout.split("the twelve slowest windows:")[1].splitlines()[1:6]
    assert all("warming" in line for line in slowest), done.stdout  # rounds 1–5 of the warming stack


def test_stacks_the_same_in_every_round_leave_no_trend(tmp_path):
    _stored_run(tmp_path, warming=None)
    done = _run(str(tmp_path))
    assert done.returncode == 0, done.stderr
    first, rest = _stack_line(done.stdout, "warming")
    assert not all(v < -0.1 for v in first[:5]) and abs(rest) < 0.1, done.stdout
    early, later = _early_later(done.stdout)
    assert early < 0.1 and later < 0.1, done.stdout


def test_a_folder_without_results_is_one_line_and_exit_2(tmp_path):
    done = _run(str(tmp_path))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert _run().returncode == 2
