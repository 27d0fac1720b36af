"""scripts/noise_budget.py on a stored run: one line per table measured in rounds, then the pooled budget."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pgarena.results.store import save
from tests.fixtures.report_run import sample_results

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "noise_budget.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_the_script_prints_each_table_and_the_pooled_budget(tmp_path):
    results = sample_results()
    for cell in results.cells:  # the probe saw the machine 1 % slower in every later round
        for rep in cell.repetitions:
            rep.reference_unit_ns, rep.reference_samples = 5e5 * (1 + 0.01 * rep.index), 20
    save(results, tmp_path)
    done = _run(str(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "noise budget of fixture-1 (ln 2xx/s per window; two-way fit stack + round)"
    assert any(line.startswith("  perf-test rows=1 · 50 VUs · oha: window log-sd ") for line in lines)
    assert lines[-1].startswith("  pooled over ") and "round sd" in lines[-1]
    assert not any("idle gaps" in line for line in lines)  # no gap readings: no such line


def test_the_script_adds_the_idle_gaps_reading_where_the_run_took_it(tmp_path):
    results = sample_results()
    for cell in results.cells:  # the gaps saw the machine slow where the window was slow, the windows nothing
        for rep in cell.repetitions:
            rep.reference_gap_before_ns = rep.reference_gap_after_ns = 5e9 / rep.rps
    save(results, tmp_path)
    done = _run(str(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    gaps = [line for line in lines if line.startswith("    instead by the idle gaps around each window: ")]
    assert gaps and all("after the gaps (β " in line for line in gaps)
    assert lines[-1] == gaps[-1] and lines[-2].startswith("  pooled over ")


def test_a_folder_without_results_is_one_line_and_exit_2(tmp_path):
    done = _run(str(tmp_path))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert _run().returncode == 2
