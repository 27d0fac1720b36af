"""`pgarena compare` through its command line on two results.json in temporary run folders: exit codes 0/1/2
and the Markdown and HTML files it writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pgarena.cli import app
from pgarena.results.models import RESULTS_FILE, RunResults
from pgarena.results.store import save
from tests.unit.test_compare import make_cell, make_run, spread_around

runner = CliRunner()


def _write(tmp_path: Path, run: RunResults) -> Path:
    folder = tmp_path / run.run_id
    save(run, folder)
    return folder


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    """Run A and run B: stack s1 lost 20 % RPS (±1 %), s2 moved 2 % within ±8 % noise."""
    a = make_run("base", [make_cell("s1", spread_around(10_000, 0.01)), make_cell("s2", spread_around(10_000, 0.08))])
    b = make_run("head", [make_cell("s1", spread_around(8_000, 0.01)), make_cell("s2", spread_around(9_800, 0.08))])
    return _write(tmp_path, a), _write(tmp_path, b)


def test_compare_writes_markdown_and_html_and_exits_0(runs: tuple[Path, Path]) -> None:
    run_a, run_b = runs
    result = runner.invoke(app, ["compare", str(run_a), str(run_b)])
    assert result.exit_code == 0, result.output
    assert "s1 · perf-test rows=10 · 50 VUs: RPS" in result.stdout and "regression" in result.stdout
    markdown = (run_b / "compare-base.md").read_text()
    html = (run_b / "compare-base.html").read_text()
    assert "| regression |" in markdown and "| within noise |" in markdown
    assert '<td class="regression">regression</td>' in html and '<td class="within-noise">within noise</td>' in html
    assert "WARNING" not in markdown


def test_fail_on_regression_gates_on_the_drop(runs: tuple[Path, Path], tmp_path: Path) -> None:
    run_a, run_b = runs
    failing = runner.invoke(app, ["compare", str(run_a), str(run_b / RESULTS_FILE), "--fail-on-regression", "5",
                                  "--out", str(tmp_path / "out")])
    assert failing.exit_code == 1, failing.output
    assert "s1 · perf-test rows=10 · 50 VUs -20.0%" in failing.stderr
    assert (tmp_path / "out" / "compare-base.md").is_file()  # written before the gate fails
    # a 20 % drop passes a 25 % gate, and the 2 % move of s2 is noise under any gate
    assert runner.invoke(app, ["compare", str(run_a), str(run_b), "--fail-on-regression", "25"]).exit_code == 0
    reversed_runs = runner.invoke(app, ["compare", str(run_b), str(run_a), "--fail-on-regression", "0"])
    assert reversed_runs.exit_code == 0, reversed_runs.output  # B → A is an improvement, not a regression


def test_environment_mismatch_warns_and_strict_refuses(tmp_path: Path) -> None:
    cells = [make_cell("s1", spread_around(10_000, 0.01))]
    run_a = _write(tmp_path, make_run("base", cells))
    run_b = _write(tmp_path, make_run("head", cells, cpu_model="Intel Xeon E5", config={"profile": "full"}))
    warned = runner.invoke(app, ["compare", str(run_a), str(run_b)])
    assert warned.exit_code == 0
    assert "WARNING: the environments differ" in warned.stderr and "cpu_model" in warned.stderr
    assert "WARNING: the environments differ" in (run_b / "compare-base.md").read_text()
    assert "WARNING: the environments differ" in (run_b / "compare-base.html").read_text()
    (run_b / "compare-base.md").unlink()
    refused = runner.invoke(app, ["compare", str(run_a), str(run_b), "--strict"])
    assert refused.exit_code == 2
    assert "refusing" in refused.stderr and "config.profile: A quick · B full" in refused.stderr
    assert not (run_b / "compare-base.md").exists()


def test_unreadable_runs_exit_2(runs: tuple[Path, Path], tmp_path: Path) -> None:
    run_a, run_b = runs
    old = tmp_path / "old"
    old.mkdir()
    document = json.loads((run_a / RESULTS_FILE).read_text())
    (old / RESULTS_FILE).write_text(json.dumps({**document, "schema_version": 1}))
    result = runner.invoke(app, ["compare", str(old), str(run_b)])
    assert result.exit_code == 2 and "schema_version 1 is not supported" in result.stderr
    missing = runner.invoke(app, ["compare", str(tmp_path / "nowhere"), str(run_b)])
    assert missing.exit_code == 2 and "cannot read" in missing.stderr
    (old / RESULTS_FILE).write_text(json.dumps({**document, "cells": "not a list"}))
    invalid = runner.invoke(app, ["compare", str(old), str(run_b)])
    assert invalid.exit_code == 2 and "not a valid pgarena results document: cells:" in invalid.stderr


def test_installed_command_prints_lines_when_not_a_tty(runs: tuple[Path, Path]) -> None:
    run_a, run_b = runs
    pgarena = Path(sys.executable).parent / "pgarena"
    if not pgarena.exists():
        pytest.skip(f"the pgarena script is not installed beside {sys.executable}")
    done = subprocess.run([str(pgarena), "compare", str(run_a), str(run_b), "--fail-on-regression", "10"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("s1 · perf-test rows=10 · 50 VUs: RPS 10,000") and "regression" in line
               for line in lines)
    assert not any(ch in done.stdout for ch in "┃━│")  # no table box drawing in a pipe
