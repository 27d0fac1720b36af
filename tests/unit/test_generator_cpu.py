"""The generator's CPU over the measured window only, not its start-up (issue 10 item 7)."""

from __future__ import annotations

import os
import sys

import pytest

from pgarena.load.windowrecord import window_cpu_seconds
from pgarena.system.children import cpu_between, run_measured


def test_cpu_between_interpolates_the_cumulative_samples():
    samples = [(100.0, 0.0), (101.0, 0.8), (102.0, 0.9), (103.0, 1.9)]
    assert cpu_between(samples, 101.0, 102.0) == pytest.approx(0.1)
    assert cpu_between(samples, 100.5, 102.5) == pytest.approx(1.4 - 0.4)
    assert cpu_between(samples, 99.0, 102.0) is None, "not covered: the caller falls back to the process total"
    assert cpu_between(samples[:1], 100.0, 100.0) is None


def test_window_cpu_ends_at_the_raw_output_and_falls_back_to_the_process(tmp_path):
    raw = tmp_path / "out.json"
    raw.write_text("{}")
    os.utime(raw, (102.0, 102.0))
    samples = [(100.0, 0.0), (101.0, 0.8), (102.0, 0.9), (103.0, 1.9)]
    assert window_cpu_seconds(samples, raw, 1.0, 1.9) == pytest.approx(0.1)  # start-up (0.8 s) left out
    assert window_cpu_seconds(samples, tmp_path / "missing", 1.0, 1.9) == 1.9
    assert window_cpu_seconds([], raw, 1.0, 1.9) == 1.9


def test_a_real_child_start_up_cpu_is_not_in_its_window(tmp_path):
    """A child that burns CPU first (its 'start-up'), then idles through its 'window' and writes its
    output: the window's CPU is far below the process's."""
    out = tmp_path / "summary"
    script = ("import time, sys\n"
              "t = time.process_time()\n"
              "while time.process_time() - t < 0.3: pass\n"
              "time.sleep(1.0)\n"
              f"open({str(out)!r}, 'w').write('done')\n")
    samples: list[tuple[float, float]] = []
    code, process_cpu = run_measured([sys.executable, "-c", script], stdout_path=tmp_path / "o",
                                     stderr_path=tmp_path / "e", cpus=None, timeout_s=60, cpu_samples=samples)
    assert code == 0 and process_cpu >= 0.3
    window = window_cpu_seconds(samples, out, 0.5, process_cpu)
    assert window < 0.1 < process_cpu - window


# --- what shares the generator CPUs counts in the generator-bound test (issue 22 item 4) -------------------------

def _window_cell(generator_s: float, *, pgarena_s: float | None = None, proxy_s: float | None = None):
    """A cell of 3 windows of 10 s on one generator CPU with the given CPU seconds per window."""
    from tests.unit.test_compare import make_cell

    cell = make_cell("a", [1000, 1000, 1000])
    for rep in cell.repetitions:
        rep.generator_cpu_seconds, rep.pgarena_cpu_seconds, rep.proxy_cpu_seconds = generator_s, pgarena_s, proxy_s
    return cell


def test_pgarena_and_toxiproxy_on_the_generator_cpus_make_a_cell_generator_bound(tmp_path):
    """The generator alone at 80 % of its one CPU is not bound; with pgarena's samplers (8 %) and Toxiproxy
    (7 %, a stack making many database round trips) on the same CPU the set is 95 % busy: generator-bound."""
    from pgarena.config.profiles import build_config
    from pgarena.contract.flags import GENERATOR_BOUND
    from pgarena.load.summary import summarize

    config = build_config(project_dir=tmp_path, overrides={"generator_cpus": [0], "server_cpus": [1]})
    alone = _window_cell(8.0)
    summarize(alone, config)
    assert GENERATOR_BOUND not in alone.flags and alone.summary.generator_set_cpu_fraction == pytest.approx(0.8)
    shared = _window_cell(8.0, pgarena_s=0.8, proxy_s=0.7)
    summarize(shared, config)
    assert shared.summary.generator_cpu_fraction == pytest.approx(0.8), "the generator's own share is unchanged"
    assert shared.summary.generator_set_cpu_fraction == pytest.approx(0.95)
    assert GENERATOR_BOUND in shared.flags


def test_pgarena_reads_its_own_cpu_over_a_window_and_not_its_children(tmp_path):
    """OwnCpuSampler: this process's busy loop is counted; a child's CPU is not."""
    import subprocess
    import time

    from pgarena.system.resources import OwnCpuSampler

    with OwnCpuSampler(interval_s=0.02) as own:
        subprocess.run([sys.executable, "-c", "import time\nend = time.process_time() + 0.3\n"
                        "while time.process_time() < end: pass"], check=True)
        start = time.process_time()
        while time.process_time() - start < 0.2:
            pass
    assert 0.15 <= own.total() < 0.28 and len(own.samples) >= 5
    assert own.samples == sorted(own.samples)


def test_the_generator_is_reaped_when_it_exits_not_at_the_next_poll():
    """run_measured sleeps between polls on the child's pidfd, so it wakes when the child exits: a waiter asked to
    sleep 30 s returns once a 0.2 s child is gone (a plain sleep would take all 30 s)."""
    import subprocess
    import time

    from pgarena.system.children import _ExitWaiter

    child = subprocess.Popen(["sleep", "0.2"])
    waiter = _ExitWaiter(child.pid)
    started = time.monotonic()
    try:
        waiter(30.0)
    finally:
        waiter.close()
        child.wait()
    assert time.monotonic() - started < 10.0


def test_only_meters_given_are_exact():
    from pgarena.system.resources import CpuMeters

    meters = CpuMeters({"db": lambda: 1.0})
    assert meters.exact("db") and not meters.exact("stack")


def test_results_are_written_between_windows_at_most_every_save_interval(tmp_path, monkeypatch):
    """After a window results.json is written only once SAVE_EVERY_S has passed since the last write; a round's
    end (`save()`) always writes."""
    from types import SimpleNamespace

    from pgarena.results import store
    from tests.unit.test_compare import make_run

    clock = [100.0]
    monkeypatch.setattr(store.time, "monotonic", lambda: clock[0])
    saver = store.Saver(SimpleNamespace(results=make_run("s", []), run_dir=tmp_path))
    saver.save(now=False)
    assert not (tmp_path / "results.json").exists()
    clock[0] += store.SAVE_EVERY_S
    saver.save(now=False)
    assert (tmp_path / "results.json").exists()
    (tmp_path / "results.json").unlink()
    saver.save(now=False)
    assert not (tmp_path / "results.json").exists()
    saver.save()
    assert (tmp_path / "results.json").exists()


def test_the_cpu_meters_start_after_the_lead_in():
    """`window(after_s)` reads the meters' start when the lead-in is over, not when the block begins; a block
    over before then has no figure (not a zero)."""
    import threading

    from pgarena.system.resources import CpuMeters

    value, read = [1.0], threading.Event()

    def meter() -> float:
        read.set()
        return value[0]

    meters = CpuMeters({"stack": meter})
    with meters.window(after_s=0.05) as deltas:
        assert read.wait(10.0)  # the timer read the start
        value[0] = 5.0
    assert deltas == {"stack": 4.0}
    with meters.window(after_s=30.0) as early:
        pass
    assert early == {}


def test_the_tree_sampler_rebases_its_cpu_once_after_the_lead_in(monkeypatch):
    import time

    from pgarena.system import resources

    calls: list[bool] = []
    monkeypatch.setattr(resources, "_sample", lambda state, first: calls.append(first))
    with resources.TreeSampler({"stack": 1}, interval_s=0.01, cpu_after_s=0.05):
        deadline = time.monotonic() + 10.0
        while not any(calls[1:]) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)
    assert calls[0] is True  # the block's start
    assert calls[1:].count(True) == 1  # the lead-in's end, once
