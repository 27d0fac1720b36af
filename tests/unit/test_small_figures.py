"""Issue 22 item 11: the small known holes — the Profile line's budget, the interleaved warm-up's peak
connections, the resilience cell's known-wrong columns, LoadSpec.expected_rows, compare's gate honesty."""

from __future__ import annotations

from types import SimpleNamespace

from pgarena.pipeline import interleaved
from pgarena.report.markdown import render_markdown
from pgarena.results.models import Cell, Warmup
from tests.fixtures.report_run import sample_results


def test_the_profile_line_states_the_cell_budget_stored_in_seconds():
    results = sample_results()
    results.config.update({"repetitions": 3, "max_repetitions": 10, "target_rel_half_width": 0.02,
                           "cell_budget_seconds": 40.0})
    results.config.pop("cell_budget_s", None)
    text = render_markdown(results)
    assert "or 40.0 s measured" in text and "None s measured" not in text


class _Poller:
    """A connection poller whose peak over the warm-up is 7."""

    active = False

    def __init__(self) -> None:
        self.peaks = [0, 7]

    def take_peak(self) -> int:
        return self.peaks.pop(0)


def test_the_interleaved_warm_up_peak_counts_in_the_cell_peak(monkeypatch):
    cell = Cell(stack="s", workload="users", parameter_name="limit", parameter=20, vus=4, engine="oha",
                warmup_seconds=1, duration_seconds=1, pool_size=5)
    live = SimpleNamespace(
        id="s", warmed=set(), crashed=lambda: False, use_network=lambda _cell: None, connections=_Poller(),
        stack=SimpleNamespace(definition=SimpleNamespace(run=SimpleNamespace(min_warmup_s=0.0))),
        info=SimpleNamespace(warmup_seconds=None, warmup_steady=None))
    config = SimpleNamespace(warmup_s=1.0, pool_size=5)
    run = SimpleNamespace(ctx=SimpleNamespace(config=config, engine=None, db=None, log=lambda _line: None),
                          lives={"s": live}, _cell_run=lambda _live, _cell: None)
    monkeypatch.setattr(interleaved, "warm_until_steady", lambda *a, **k: Warmup(
        seconds=3.0, steady=True, minimum_seconds=1.0, cap_seconds=10.0, windows_rps=[10.0, 10.0, 10.0]))
    interleaved.InterleavedRun._warm_stacks(run, interleaved._Phase("headline", {("s", "users"): cell}))
    assert cell.warmup is not None and cell.warmup.peak_connections == 7
    assert cell.peak_connections == 7  # before: None until a window, and never the warm-up's
    assert "pool-exceeded" in cell.flags  # 7 connections against a pool of 5, during the warm-up
