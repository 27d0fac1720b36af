"""The reference probe for real: it runs pinned to the server CPUs, gives each window a reading, dies with
its parent, and a real run stores a reading on every window (pgarena.system.speedprobe)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from pgarena.config.profiles import build_config
from pgarena.pipeline import runner
from pgarena.results.store import load
from pgarena.system.speedprobe import GAP_INTERVAL_S, GAP_MAX_NS, PROBE_INTERVAL_S, SpeedProbe
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres, process_gone, require_engine

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="CPU pinning and prctl are Linux's")


def test_a_real_probe_is_pinned_and_reads_every_window():
    cpus = [max(os.sched_getaffinity(0))]
    with SpeedProbe(cpus) as probe:
        assert psutil.Process(probe.pid).cpu_affinity() == cpus
        start = time.monotonic_ns()
        time.sleep(1.0)
        end = time.monotonic_ns()
        reading = probe.reading(start, end)
        pid = probe.pid
        policy = os.sched_getscheduler(pid)
        if _real_time_allowed():
            # the unit is never preempted by the stack's threads (speedprobe's docstring: why)
            assert policy == os.SCHED_FIFO and probe.policy == "SCHED_FIFO priority 1", probe.policy
            assert os.sched_getparam(pid).sched_priority == 1
        else:
            assert policy == os.SCHED_OTHER and probe.policy.startswith("normal (SCHED_FIFO refused"), probe.policy
    assert 0.7 / PROBE_INTERVAL_S <= reading.samples <= 1.0 / PROBE_INTERVAL_S + 2, reading  # a busy CPU delays a few
    assert reading.unit_ns is not None and 10_000 < reading.unit_ns < 50_000_000, reading  # ~0.2 ms of CPU
    assert process_gone(pid), "stop() reaps the child"
    assert probe.reading(start, end).samples == reading.samples  # the samples outlive the child


def test_between_two_loads_the_probe_reads_faster_and_the_gap_is_told_to_the_load_before():
    with SpeedProbe([max(os.sched_getaffinity(0))]) as probe:
        time.sleep(0.1)
        told = []
        probe.load_ended(time.monotonic_ns(), after=told.append)  # the child now times a unit every 2 ms
        time.sleep(0.5)
        gap = probe.load_starts(time.monotonic_ns())  # and every 20 ms again
        start = time.monotonic_ns()
        time.sleep(0.5)
        load = probe.reading(start, time.monotonic_ns())
    assert told == [gap] and gap is not None and gap.unit_ns is not None
    # 0.48 s of gap at 2 ms a unit (~0.2 ms each) against 0.5 s at 20 ms: far more units, on a busy CPU too
    assert gap.samples > 3 * load.samples and load.samples <= 0.5 / PROBE_INTERVAL_S + 3, (gap, load)
    assert gap.samples <= 0.48 / GAP_INTERVAL_S + 3, gap


def test_the_fast_pace_ends_by_itself_after_a_gaps_longest_reading():
    with SpeedProbe([max(os.sched_getaffinity(0))]) as probe:
        time.sleep(0.1)
        probe.load_ended(time.monotonic_ns())  # and no load ever says it began (a load pgarena does not mark)
        time.sleep(GAP_MAX_NS / 1e9 + 0.3)
        start = time.monotonic_ns()
        time.sleep(0.5)
        later = probe.reading(start, time.monotonic_ns())
    assert later.samples <= 0.5 / PROBE_INTERVAL_S + 3, later  # the window pace again, not one unit every 2 ms


def _real_time_allowed() -> bool:
    """This process may make itself SCHED_FIFO (root, CAP_SYS_NICE or an RLIMIT_RTPRIO)."""
    import resource

    return os.geteuid() == 0 or resource.getrlimit(resource.RLIMIT_RTPRIO)[0] > 0


def test_the_probe_dies_with_its_parent_killed_by_sigkill():
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import os, sys, time
        from pgarena.system.speedprobe import SpeedProbe
        probe = SpeedProbe([min(os.sched_getaffinity(0))]).start()
        print(probe.pid, flush=True)
        time.sleep(120)
        """)], stdout=subprocess.PIPE, text=True, cwd=PROJECT_DIR)
    try:
        pid = int(parent.stdout.readline())
        assert psutil.Process(pid).is_running()
        parent.kill()
        parent.wait()
        assert process_gone(pid), "the probe outlived pgarena"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


@pytest.mark.usefixtures("no_wire")  # reads no wire profile (tests/conftest.py)
@needs_postgres
@pytest.mark.postgres
def test_a_run_stores_the_machine_speed_of_every_window(tmp_path, fixture_env):
    require_engine("k6")
    config = build_config(project_dir=tmp_path, overrides={
        "ceiling_s": 0, "headroom": False, "engine": "k6", "stacks_dir": FIXTURE_STACKS,
        "results_dir": tmp_path / "results", "run_id": "probe", "stacks": ["fixture-good"], "workloads": ["static"],
        "vus": [2], "repetitions": 2, "max_repetitions": 2, "warmup_s": 1, "warmup_cap_s": 2, "duration_s": 1.0,
        "schedule": "sequential"})
    lines: list[str] = []
    results = load(runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="t", log=lines.append))
    reps = [r for c in results.cells for r in c.repetitions]
    assert len(reps) == 2
    for rep in reps:
        assert rep.reference_samples >= 7, rep  # 1 s windows, one unit every 0.1 s
        assert rep.reference_unit_ns is not None and rep.reference_unit_ns > 0
    probe_line = next(line for line in lines if line.startswith("speed probe:"))
    assert results.environment.speed_probe is not None and results.environment.speed_probe in probe_line
    pid = int(probe_line.rsplit("pid ", 1)[1].rstrip(")"))
    assert process_gone(pid), "the probe is stopped with the run"
