"""The generator's CPU over the measured window only, not its start-up (issue 10 item 7)."""

from __future__ import annotations

import os
import sys

import pytest

from pgarena.load.window import window_cpu_seconds
from pgarena.system.process import cpu_between, run_measured


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
