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
