"""scripts/duet.py: the cgroup v1 `cpu` mount it needs, what its summary makes of duet and solo rounds, and a
user's mistake as one line and exit code 2."""

from __future__ import annotations

import math
import random
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import script_module

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "duet.py"


@pytest.fixture(scope="module")
def duet():
    yield from script_module("duet")


def test_the_cpu_mount_is_the_v1_hierarchy_with_the_cpu_controller_not_cpuacct_or_cpuset(duet) -> None:
    mounts = "\n".join([
        "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nosuid 0 0",
        "cgroup /sys/fs/cgroup/cpuset cgroup rw,nosuid,cpuset 0 0",
        "cgroup /sys/fs/cgroup/cpuacct cgroup rw,nosuid,cpuacct 0 0",
        "cgroup /sys/fs/cgroup/cpu cgroup rw,nosuid,cpu 0 0",
    ])
    assert duet.cgroup_mount(mounts) == Path("/sys/fs/cgroup/cpu")
    assert duet.cgroup_mount("cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0") == Path(
        "/sys/fs/cgroup/cpu,cpuacct")
    assert duet.cgroup_mount("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\ncgroup /x cgroup rw,cpuacct 0 0") is None


def _side(answers: float, cpu_s: float, probe: float = 200_000.0) -> dict:
    n = max(1, round(answers))
    return {"answers": n, "answers_all": round(1.5 * n), "cpu_s": cpu_s, "probe_ns": probe}


def _rounds(seed: int, *, ratio: float, window_sd: float, duet_bias: float, n: int = 60) -> list[dict]:
    """Synthetic rounds: the machine's speed per window moves both sides of a duet alike and each solo window
    alone; A is `ratio` times B; the duet's ratio is off by `duet_bias` (ln)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        shared = rng.gauss(0, window_sd)
        sa, sb = rng.gauss(0, window_sd), rng.gauss(0, window_sd)
        out.append({
            "duet": [_side(1000 * ratio * math.exp(shared + duet_bias / 2 + rng.gauss(0, 0.01)), 0.5),
                     _side(1000 * math.exp(shared - duet_bias / 2 + rng.gauss(0, 0.01)), 0.5)],
            "solo-a": [_side(2000 * ratio * math.exp(sa), 1.0, 200_000 * math.exp(-sa))],
            "solo-b": [_side(2000 * math.exp(sb), 1.0, 200_000 * math.exp(-sb))],
        })
    return out


def test_the_summary_sees_a_duet_that_shares_the_machines_speed_as_the_sharper_design(duet) -> None:
    s = duet.summary(_rounds(1, ratio=1.25, window_sd=0.15, duet_bias=0.0), 1.0,
                     {"duet": 1.6, "solo-a": 1.6, "solo-b": 1.6})
    assert s["rounds"] == 60
    assert math.exp(s["duet"]["mean"]) == pytest.approx(1.25, rel=0.02)
    assert math.exp(s["solo"]["mean"]) == pytest.approx(1.25, rel=0.15)
    assert s["duet"]["sd"] < 0.03 < 0.15 < s["solo"]["sd"]
    # The probe here reads the solo windows' speed exactly, so it takes their scatter out (β ≈ −1).
    assert s["solo_after_probe"]["beta"] == pytest.approx(-1.0, abs=0.05)
    assert s["solo_after_probe"]["sd"] < 0.02
    assert s["duet_minus_solo"]["mean"] == pytest.approx(0.0, abs=3 * s["duet_minus_solo"]["se"])
    assert s["duet_cpu_share_a"]["mean"] == pytest.approx(0.5)
    assert s["duet_cost_ratio"]["sd"] == pytest.approx(0.0, abs=0.05)


def test_the_summary_measures_a_duets_bias_against_the_solo_ratio(duet) -> None:
    s = duet.summary(_rounds(2, ratio=1.0, window_sd=0.02, duet_bias=0.2), 1.0,
                     {"duet": 1.6, "solo-a": 1.6, "solo-b": 1.6})
    assert s["duet_minus_solo"]["mean"] == pytest.approx(0.2, abs=0.03)
    assert s["duet_minus_solo"]["mean"] > 5 * s["duet_minus_solo"]["se"]


def test_information_per_minute_weighs_one_duet_slot_against_two_solo_slots(duet) -> None:
    rounds = _rounds(3, ratio=1.0, window_sd=0.1, duet_bias=0.0)
    for r in rounds:  # a probe that reads nothing
        for side in (r["solo-a"][0], r["solo-b"][0]):
            side["probe_ns"] = 200_000.0
    s = duet.summary(rounds, 1.0, {"duet": 2.0, "solo-a": 1.0, "solo-b": 1.0})
    expected = (1 / s["duet"]["sd"] ** 2) / (1 / s["solo"]["sd"] ** 2)
    assert "solo_after_probe" not in s  # no variation in the probe: no slope to fit
    assert s["information_per_minute_duet_over_solo"] == pytest.approx(expected)


@pytest.mark.parametrize("args", [["--stacks", "go-nethttp-pgx"], ["--stacks", "a,b,c"],
                                  ["--stacks", "a,b", "--rounds", "0"], ["--stacks", "a,b", "--arms", "alt,solo-a"],
                                  ["--stacks", "a,b", "--arms", "alt,solo-a,solo-b,ab"],
                                  ["--stacks", "a,b", "--arms", "alt,solo-a,solo-b", "--turn-ms", "1"]])
def test_a_users_mistake_is_one_line_and_exit_code_2(args) -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), *args, "--out", "/dev/null"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and proc.stderr.startswith("error: ")


def test_the_freezer_mount_is_found_like_the_cpu_one(duet) -> None:
    mounts = "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\ncgroup /sys/fs/cgroup/freezer cgroup rw,freezer 0 0"
    assert duet.cgroup_mount(mounts, "freezer") == Path("/sys/fs/cgroup/freezer")
    assert duet.cgroup_mount("cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0", "freezer") is None


def test_a_sides_thawed_time_is_its_turns_clipped_to_the_window(duet) -> None:
    turns = duet.Alternator([], 0.05, 0)
    turns.turns = [(0, 0, 50), (1, 50, 100), (0, 100, 150), (1, 150, 200)]
    assert turns.thawed_s(0, 25, 125) * 1e9 == pytest.approx(25 + 25)
    assert turns.thawed_s(1, 25, 125) * 1e9 == pytest.approx(50)
    assert turns.thawed_s(1, 200, 300) == 0


def test_the_alt_arm_is_judged_on_its_rate_per_thawed_second(duet) -> None:
    rounds = _rounds(4, ratio=1.25, window_sd=0.15, duet_bias=0.0)
    rng = random.Random(5)
    for r in rounds:  # A thawed longer than B in its windows: its rate, not its count, is the figure
        thawed = (0.5 + rng.uniform(0.05, 0.1), 0.5)
        r["alt"] = []
        for side, t in zip(r["duet"], thawed):
            answers = round(side["answers"] * t)  # the duet side's count as the rate per second
            r["alt"].append(dict(side, answers=answers, thawed_s=t, rate=answers / t))
    counts = [math.log(r["alt"][0]["answers"] / r["alt"][1]["answers"]) for r in rounds]
    assert math.exp(statistics.fmean(counts)) > 1.25 * 1.1, "counted, A's longer turns would show"
    s = duet.summary(rounds, 1.0, {"duet": 1.6, "alt": 1.6, "solo-a": 1.6, "solo-b": 1.6})
    assert math.exp(s["alt"]["mean"]) == pytest.approx(1.25, rel=0.02) and s["alt"]["sd"] < 0.03
    assert s["alt_minus_solo"]["mean"] == pytest.approx(0.0, abs=3 * s["alt_minus_solo"]["se"])
    assert "information_per_minute_alt_over_solo" in s and "duet" in s
    report = duet.report(s, ["a", "b"])
    assert "alt ln(A/B) per round: mean +0.2" in report and "alt − solo (its bias, ln)" in report
