"""Issue 22 item 11: the small known holes — the Profile line's budget, the interleaved warm-up's peak
connections, the resilience cell's known-wrong columns, LoadSpec.expected_rows, compare's gate honesty."""

from __future__ import annotations

from types import SimpleNamespace

from pgarena.config.stackdef import RunSpec
from pgarena.contract.flags import CONTENT_TYPE
from pgarena.contract.values import Verdict
from pgarena.load.warmup import WindowResult
from pgarena.pipeline import interleaved, resilience, warming
from pgarena.report.markdown import render_markdown
from pgarena.results.models import Cell, Check, ColumnVerdict, WorkloadVerification
from tests.fixtures.report_run import sample_results


def test_the_profile_line_states_the_cell_budget_stored_in_seconds():
    results = sample_results()
    results.config.update({"repetitions": 3, "max_repetitions": 10, "target_rel_half_width": 0.02,
                           "cell_budget_seconds": 40.0})
    results.config.pop("cell_budget_s", None)
    text = render_markdown(results)
    assert "or 40.0 s measured" in text and "None s measured" not in text


class _Poller:
    """A connection poller whose peak over each warm-up window is 7 (0 when reset before it)."""

    active = False

    def __init__(self) -> None:
        self.peaks = [0, 7]

    def take_peak(self, poll: bool = True) -> int:
        self.peaks.reverse()
        return self.peaks[-1]


def test_the_interleaved_warm_up_peak_counts_in_the_cell_peak(monkeypatch):
    cell = Cell(stack="s", workload="users", parameter_name="limit", parameter=20, vus=4, engine="oha",
                warmup_seconds=1, duration_seconds=1, pool_size=5)
    live = SimpleNamespace(
        id="s", warmed=set(), crashed=lambda: False, use_network=lambda _cell: None, connections=_Poller(),
        cpu=SimpleNamespace(probe=None),
        stack=SimpleNamespace(definition=SimpleNamespace(run=RunSpec(command="true"))),
        info=SimpleNamespace(warmup_seconds=None, warmup_steady=None))
    config = SimpleNamespace(warmup_s=1.0, warmup_cap_s=3.0, pool_size=5)
    run = SimpleNamespace(ctx=SimpleNamespace(config=config, engine=None, db=None, log=lambda _line: None),
                          lives={"s": live}, _cell_run=lambda _live, _cell: None, _later=lambda _phase: None,
                          _idle_meters=lambda _busy: {})
    monkeypatch.setattr(warming, "warm_window", lambda *a, **k: WindowResult(rps=10.0, duration_s=1.0,
                                                                             answered_2xx=10))
    interleaved.InterleavedRun._warm_stacks(run, interleaved._Phase("headline", {("s", "users"): cell}))
    assert cell.warmup is not None and cell.warmup.peak_connections == 7
    assert cell.peak_connections == 7  # before: None until a window, and never the warm-up's
    assert "pool-exceeded" in cell.flags  # 7 connections against a pool of 5, during the warm-up


class _Started(Exception):
    """Raised by the fake start_cell: what the resilience window would have started with is known."""


def test_a_resilience_window_passes_the_stacks_known_wrong_columns_and_content_type(monkeypatch, tmp_path):
    results = sample_results()
    results.verifications = [WorkloadVerification(
        stack="node", workload="users", ok=True,
        checks=[Check(name="limit 20: content type JSON", ok=False)],
        columns=[ColumnVerdict(column="created_at", pg_type="timestamptz", verdict=Verdict.WRONG, reason="ms")])]
    seen: dict = {}

    def fake_start_cell(cell, **kwargs):
        seen.update(kwargs)
        raise _Started

    monkeypatch.setattr(resilience, "start_cell", fake_start_cell)
    monkeypatch.setattr(resilience, "closed_peak", lambda *a: 1000.0)
    monkeypatch.setattr(resilience.faults, "unavailable", lambda db, fault: None)
    ctx = SimpleNamespace(config=SimpleNamespace(db_rtt_ms=[], open_connections=10), db=None, results=results,
                          engine=SimpleNamespace(name="k6"), run_dir=tmp_path, log=lambda _line: None,
                          variants_cache={})
    live = SimpleNamespace(id="node", db_proxy=None, base_url="http://127.0.0.1:1", routes={}, answer=None)
    try:
        resilience._one_fault(ctx, live, "users", 20, "terminate")
    except _Started:
        pass
    assert set(seen["known_wrong"]) == {"created_at", CONTENT_TYPE}  # before: not passed, judged again


def test_load_spec_carries_no_field_nothing_reads():
    """LoadSpec.expected_rows was set for every cell and read by no engine: the rows of an answer are judged
    by pgarena's sampler against the whole expected answer (verify/checks.py), never by the generator."""
    from dataclasses import fields

    from pgarena.load.engines.base import LoadSpec

    assert "expected_rows" not in {f.name for f in fields(LoadSpec)}


def test_the_regression_gate_states_its_false_alarm_rate_in_help_and_docs():
    """compare --fail-on-regression tests every cell alone at α = 0.05 with no run-to-run drift in its
    variance; its help and docs/compare.md must say what that costs (issue 22: they promised a gate)."""
    from pathlib import Path

    from typer.testing import CliRunner

    from pgarena.cli import app

    help_text = " ".join(CliRunner().invoke(app, ["compare", "--help"], env={"COLUMNS": "200"}).output.split())
    assert "tested alone" in help_text and "40 %" in help_text and "drift" in help_text
    docs = (Path(__file__).resolve().parents[2] / "docs" / "compare.md").read_text(encoding="utf-8")
    assert "**Its false-alarm rate.**" in docs and "1 − 0.975^k" in docs
    assert round(1 - 0.975 ** 20, 2) == 0.40  # the figure both state for 20 cells
