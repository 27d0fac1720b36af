"""scripts/noise_sources.py: the figures it derives and its own meters (the windows themselves need a built stack)."""

from __future__ import annotations

import math
import os
import random
import time

import psutil
import pytest

from tests.conftest import script_module


@pytest.fixture(scope="module")
def ns():
    yield from script_module("noise_sources")


def test_the_fit_leaves_the_noise_the_meter_does_not_explain(ns):
    rng = random.Random(3)
    meter = [rng.gauss(0, 0.2) for _ in range(400)]
    y = [8.0 - m + rng.gauss(0, 0.05) for m in meter]
    assert ns.fit_sd(y, [meter]) == pytest.approx(0.05, rel=0.1)
    assert ns.fit_sd(y, []) == pytest.approx(math.sqrt(0.2**2 + 0.05**2), rel=0.1)


def test_the_analysis_names_each_meter_and_each_pair_of_probes(ns, capsys):
    rng = random.Random(5)
    rows = []
    for _ in range(30):
        speed = rng.gauss(0, 0.15)
        rows.append({"rps": 3000 * math.exp(-speed), "server_us": 300 * math.exp(speed), "probe": 2e5 * math.exp(speed + rng.gauss(0, 0.05)),
                     "pingpong": 6e5 * math.exp(rng.gauss(0, 0.2)), "steal": 0.01, "probe_gap": None})
    ns.analyse(rows, ["server_us", "probe", "probe_gap", "pingpong", "steal"])
    out = capsys.readouterr().out
    assert "30 windows" in out
    assert "server_us     r -1.00" in out  # the tautology: the server's cost per request is 1/2xx/s here
    assert "probe_gap" not in out, "a meter without a reading in every window is left out"
    assert "steal " not in out and "+ steal" not in out, "a meter that never varied explains nothing"
    assert "probe + pingpong: log-sd after both" in out
    probe_line = next(line for line in out.splitlines() if line.strip().startswith("probe "))
    assert float(probe_line.split("r ")[1].split()[0]) < -0.8


def test_steal_is_read_from_proc_stat_and_only_grows(ns):
    first = ns.steal_ticks([0])
    time.sleep(0.05)
    assert ns.steal_ticks([0]) >= first >= 0


def test_the_pingpong_probe_reports_units_of_cpu_time_and_stops(ns):
    cpus = sorted(os.sched_getaffinity(0))
    probe = ns.PingPong(cpus[0], cpus[-1])
    start = time.monotonic_ns()
    deadline = time.monotonic() + 20
    while len(probe.times) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    reading = probe.reading(start, time.monotonic_ns())
    probe.stop()
    assert reading is not None and reading > 0, "no unit of the ping-pong was read"
    assert probe.proc.poll() is not None
    deadline = time.monotonic() + 10
    while _group_alive(probe.proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _group_alive(probe.proc.pid), "the ping-pong's other end outlived stop()"


def _group_alive(pgid: int) -> bool:
    """A process of group `pgid` that is not a zombie."""
    for proc in psutil.process_iter(["status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                return True
        except (ProcessLookupError, psutil.Error):
            continue
    return False
