"""Two runs agree on the ranking wherever both claim an order (pgarena.analysis.rankcheck)."""

from __future__ import annotations

import pytest

from pgarena.analysis.rankcheck import ranking_agreement
from pgarena.config.profiles import build_config
from pgarena.load.summary import summarize
from pgarena.results.models import Cell, Errors, Latency, Repetition
from tests.unit.test_compare import make_run


@pytest.fixture
def config(tmp_path, monkeypatch):
    monkeypatch.setattr("pgarena.config.profiles.default_cpu_sets", lambda: ([0], [1]))
    return build_config(profile="quick", project_dir=tmp_path)  # ±10 % target


def measured(stack: str, rps: list[float], config, vus: int = 50, engine: str = "oha") -> Cell:
    reps = [Repetition(index=i, requests=int(r * 2), duration_seconds=2, rps=r,
                       latency=Latency(avg_ms=1, p50_ms=1, p90_ms=1, p95_ms=1, p99_ms=1, max_ms=1), errors=Errors(),
                       status_codes={"200": int(r * 2)}, stack_cpu_seconds=1, db_cpu_seconds=1,
                       stack_rss_peak_bytes=None, generator_cpu_seconds=1, raw_output="x")
            for i, r in enumerate(rps, 1)]
    cell = Cell(stack=stack, workload="perf-test", parameter_name="rows", parameter=1, vus=vus, engine=engine,
                warmup_seconds=1, duration_seconds=2, repetitions=reps)
    summarize(cell, config)
    return cell


def test_same_order_agrees_and_ties_are_not_contradictions(config):
    a = make_run("a", [measured("go", [9000, 9100, 9050], config), measured("py", [1000, 1010, 1005], config),
                       measured("node", [3000, 3020, 3010], config)])
    b = make_run("b", [measured("go", [8800, 8900, 8850], config), measured("py", [1020, 1000, 1010], config),
                       measured("node", [3050, 2990, 3000], config)])
    result = ranking_agreement(a, b)
    assert (result.ordered_in_both, result.agree, result.disagreements) == (3, 3, [])
    assert "3 agree, 0 disagree" in result.summary()


def test_a_swapped_order_is_a_disagreement(config):
    a = make_run("a", [measured("go", [9000, 9100, 9050], config), measured("py", [1000, 1010, 1005], config)])
    b = make_run("b", [measured("go", [900, 910, 905], config), measured("py", [1000, 1010, 1005], config)])
    result = ranking_agreement(a, b)
    assert result.ordered_in_both == 1 and len(result.disagreements) == 1
    assert "A has go above py, B has py above go" in result.disagreements[0]


def test_overlap_in_one_run_is_a_tie_not_a_contradiction_and_noisy_cells_take_part(config):
    a = make_run("a", [measured("go", [1000, 1010, 1005], config), measured("py", [1003, 1012, 1001], config),
                       measured("noisy", [500, 2000, 3000], config)])
    b = make_run("b", [measured("go", [1500, 1510, 1505], config), measured("py", [1000, 1010, 1005], config),
                       measured("noisy", [100, 110, 105], config)])
    result = ranking_agreement(a, b)
    # go/py: overlap in A, ordered in B; noisy's wide A interval overlaps both, B's tight one is below both
    assert (result.ordered_in_both, result.ordered_in_one, result.disagreements) == (0, 3, [])


def open_cell(stack: str, rps: list[float], p99: list[float], config, spec: str) -> Cell:
    cell = measured(stack, rps, config)
    for rep, value in zip(cell.repetitions, p99):
        rep.latency = Latency(avg_ms=1, p50_ms=1, p90_ms=1, p95_ms=1, p99_ms=value, max_ms=value)
    cell.model, cell.vus, cell.arrival_rate_spec = "open", 100, spec
    cell.arrival_rate = 2000.0 if not spec.endswith("%") else rps[0]
    summarize(cell, config)
    return cell


def test_shared_rate_tables_are_checked_on_p99_and_relative_ones_not_at_all(config):
    """Issue 10 item 6: at a rate shared by every stack the order is p99's; at a share of each stack's
    own peak there is no order to agree on."""
    a = make_run("a", [open_cell("go", [2000, 2000, 2001], [2, 2.1, 2.05], config, "2000"),
                       open_cell("py", [1999, 2000, 2000], [9, 9.2, 9.1], config, "2000"),
                       open_cell("go", [9000, 9100, 9050], [5, 5, 5], config, "90%"),
                       open_cell("py", [1000, 1010, 1005], [5, 5, 5], config, "90%")])
    b = make_run("b", [open_cell("go", [2000, 2000, 2001], [12, 12.1, 12.05], config, "2000"),
                       open_cell("py", [1999, 2000, 2000], [9, 9.2, 9.1], config, "2000"),
                       open_cell("go", [1000, 1010, 1005], [5, 5, 5], config, "90%"),
                       open_cell("py", [9000, 9100, 9050], [5, 5, 5], config, "90%")])
    result = ranking_agreement(a, b)
    assert result.ordered_in_both == 1, "only the shared-rate pair; the 90 % tables rank nothing"
    assert "A has go above py, B has py above go" in result.disagreements[0]


def test_pairs_measured_with_different_engines_are_ignored(config):
    """A stack pair ordered one way under oha and the other way under k6 is no disagreement: the engines'
    tables are different tables (they never share a rank)."""
    a = make_run("a", [measured("go", [9000, 9100, 9050], config), measured("py", [1000, 1010, 1005], config)])
    b = make_run("b", [measured("go", [900, 910, 905], config, engine="k6"),
                       measured("py", [1000, 1010, 1005], config, engine="k6")])
    result = ranking_agreement(a, b)
    assert (result.ordered_in_both, result.ordered_in_one, result.disagreements) == (0, 0, [])


def in_rounds(stack: str, rps: list[float], config) -> Cell:
    """A cell measured in interleaved rounds 1, 2, ... (one repetition per round)."""
    cell = measured(stack, rps, config)
    cell.repetitions = [r.model_copy(update={"round": i}) for i, r in enumerate(cell.repetitions, 1)]
    return cell


def test_paired_tables_are_checked_with_the_paired_order_the_report_shows(config):
    """Issue 11 item 6: both runs drift, so the stacks' own intervals overlap (no order by them), but within
    each round go is 1.5× py: both runs order the pair, and they agree; a run that swaps them disagrees."""
    drift_a, drift_b = [1.0, 0.8, 1.2, 0.9], [1.1, 0.7, 1.0, 1.3]
    a = make_run("a", [in_rounds("go", [9000 * d for d in drift_a], config),
                       in_rounds("py", [6000 * d * (1 + i / 500) for i, d in enumerate(drift_a)], config)])
    b = make_run("b", [in_rounds("go", [9000 * d * (1 - i / 400) for i, d in enumerate(drift_b)], config),
                       in_rounds("py", [6000 * d for d in drift_b], config)])
    cells = {c.stack: c for c in a.cells}
    assert cells["go"].summary.rps_interval.low < cells["py"].summary.rps_interval.high, "own intervals overlap"
    result = ranking_agreement(a, b)
    assert (result.ordered_in_both, result.disagreements) == (1, [])
    swapped = make_run("c", [in_rounds("go", [6000 * d for d in drift_b], config),
                             in_rounds("py", [9000 * d * (1 + i / 300) for i, d in enumerate(drift_b)], config)])
    result = ranking_agreement(a, swapped)
    assert result.ordered_in_both == 1 and "A has go above py, B has py above go" in result.disagreements[0]


def test_wrong_columns_take_part_in_the_agreement(config):
    """A stack with ❌ columns is ranked among all stacks, so its order is checked too."""
    a = make_run("a", [measured("go", [9000, 9100, 9050], config), measured("node", [1000, 1010, 1005], config)])
    b = make_run("b", [measured("go", [9000, 9100, 9050], config), measured("node", [1000, 1010, 1005], config)])
    for run in (a, b):
        run.cells[1].flags.append("columns-wrong")
    assert ranking_agreement(a, b).ordered_in_both == 1
