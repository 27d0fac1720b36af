"""Open-model levels shared by every stack, set from the slowest stack's peak of an earlier run
(issue 10 item 6; pgarena.analysis.sharedrates)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from pgarena.analysis.ranking import BY_P99, rank_basis
from pgarena.analysis.sharedrates import rate_key, slowest_peaks
from pgarena.cli import app
from pgarena.config.profiles import build_config
from pgarena.config.stackdef import load_stacks
from pgarena.pipeline.plan import plan_cells
from pgarena.report.markdown import render_markdown
from pgarena.results.store import save
from tests.conftest import FIXTURE_STACKS
from tests.fixtures.report_run import sample_results


def test_slowest_peaks_take_each_stacks_best_valid_closed_cell_then_the_lowest_stack():
    peaks = slowest_peaks(sample_results())
    # perf-test rows=1: go-fast peaks at 4,600 (50 VUs), py-steady at 3,000 (noisy, but valid);
    # node-wrong's columns-wrong cells (❌ answers) are left out
    assert peaks[rate_key("perf-test", 1)] == 3000
    # tx: py-steady's cell broke the invariants (invalid): only go-fast's 905 remains
    assert peaks["tx"] == 905


def test_shared_rates_plan_the_same_rate_for_every_stack(tmp_path, monkeypatch):
    monkeypatch.setattr("pgarena.config.profiles.default_cpu_sets", lambda: ([0], [1]))
    config = build_config(project_dir=tmp_path, overrides={
        "workloads": ["perf-test"], "perf_test_rows": [1, 100], "vus": [1], "shared_rates": ["50%"],
        "shared_rate_peaks": {"perf-test/1": 4000.0}, "stacks_dir": FIXTURE_STACKS})
    stacks, _ = load_stacks(FIXTURE_STACKS)
    stack = next(s for s in stacks if "perf-test" in s.definition.workloads)
    shared = [c for c in plan_cells(config, stack, "oha") if c.model == "open"]
    assert [(c.parameter, c.arrival_rate, c.arrival_rate_spec) for c in shared] == [
        (1, 2000.0, "50% of the slowest peak")], "rows=100 has no reference peak: no shared level"
    assert rank_basis(shared) == BY_P99, "a shared level ranks p99, not 2xx/s"


def test_shared_rates_must_be_shares_and_need_peaks(tmp_path, monkeypatch):
    monkeypatch.setattr("pgarena.config.profiles.default_cpu_sets", lambda: ([0], [1]))
    with pytest.raises(ValueError, match="share of the slowest peak"):
        build_config(project_dir=tmp_path, overrides={"shared_rates": ["2000"], "shared_rate_peaks": {"static": 1.0}})
    with pytest.raises(ValueError, match="--shared-rates-from"):
        build_config(project_dir=tmp_path, overrides={"shared_rates": ["50%"]})


def test_cli_refuses_shared_rates_without_a_readable_run(tmp_path):
    result = CliRunner().invoke(app, ["run", "--shared-rates", "50%", "--shared-rates-from",
                                      str(tmp_path / "nowhere"), "--results-dir", str(tmp_path)])
    assert result.exit_code == 2 and "cannot read" in result.output
    result = CliRunner().invoke(app, ["run", "--shared-rates", "50%", "--results-dir", str(tmp_path)])
    assert result.exit_code == 2 and "--shared-rates-from" in result.output


def test_cli_reads_the_slowest_peaks_of_a_stored_run(tmp_path, monkeypatch):
    seen = {}

    def fake_execute(config, kind, resume=None, budget_from=None):
        seen["config"] = config
        return tmp_path

    monkeypatch.setattr("pgarena.cli.run.execute_run", fake_execute)
    monkeypatch.setattr("pgarena.cli.run.print_outputs", lambda run_dir: None)
    reference = tmp_path / "ref"
    save(sample_results(), reference)
    result = CliRunner().invoke(app, ["run", "--shared-rates", "50%,90%", "--shared-rates-from", str(reference),
                                      "--results-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    config = seen["config"]
    assert config.shared_rates == ["50%", "90%"] and config.shared_rate_peaks["perf-test/1"] == 3000
    assert config.shared_rates_from == str(reference)


def test_markdown_titles_a_shared_level_with_its_origin():
    results = sample_results()
    for cell in results.cells:
        if cell.arrival_rate_spec == "2000":
            cell.arrival_rate_spec = "50% of the slowest peak"
    text = render_markdown(results)
    assert "2,000 req/s offered to every stack (50 % of the slowest peak)" in text
