"""The history store, its series, Otava's change points on a series built from real windows, and the page."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

from pgarena.history.changes import change_points
from pgarena.history.page import render_history
from pgarena.history.points import Point, machine_fingerprint, run_points
from pgarena.history.store import DEFAULT_HISTORY_FILE, open_store, series
from tests.fixtures.report_run import sample_results

pytest.importorskip("otava.analysis", reason="Apache Otava is not installed: pip install --no-deps apache-otava==0.8.0")

REAL = json.loads((Path(__file__).parents[1] / "fixtures" / "history" / "real_windows.json").read_text())
STEP_AT = 12
STEP = 0.80


def real_noise() -> list[float]:
    """24 relative deviations measured on this machine: each stack's real window over the geometric mean of
    both stacks' windows of the same round (the machine's drift, which a history of run medians does not
    carry, taken out), over its median. They scatter by about 6 %, more than medians of several windows do."""
    a, b = REAL["windows_rps"].values()
    out = []
    for mine in (a, b):
        relative = [x / math.sqrt(p * q) for x, p, q in zip(mine, a, b)]
        middle = statistics.median(relative)
        out += [v / middle for v in relative]
    return out


def _series(step: float | None, ceiling_step: float | None = None) -> list[Point]:
    points = []
    for i, noise in enumerate(real_noise()):
        after = i >= STEP_AT
        rps = 2500 * noise * (step if step and after else 1)
        points.append(Point(run_id=f"run-{i:02d}", recorded_at=f"2026-11-{1 + i:02d}T00:00:00+00:00",
                            run_stack="s", stack="s", version=f"1.{i}", cell="users limit=20 @ 50 VUs (oha)",
                            machine="m", rps_median=rps, rps_low=rps * 0.95, rps_high=rps * 1.05,
                            db_ceiling_tps=9000 * (ceiling_step if ceiling_step and after else 1) * (1 + 0.01 * (i % 3)),
                            headroom_rps=None))
    return points


def test_a_step_in_the_middle_is_found_at_its_place_with_its_size():
    found = change_points(_series(STEP))
    assert [c.index for c in found] == [STEP_AT]
    change = found[0]
    assert (change.before_version, change.after_version) == ("1.11", "1.12")
    assert change.low < STEP < change.high and change.step < 0.9
    assert not change.environment
    assert "between 1.11 and 1.12" in change.text()


def test_a_series_without_a_step_has_no_change_point():
    assert change_points(_series(None)) == []


def test_a_step_the_database_ceiling_also_took_is_the_environment():
    found = change_points(_series(STEP, ceiling_step=STEP))
    assert [c.index for c in found] == [STEP_AT] and found[0].environment
    assert "environment" in found[0].text()


def test_store_records_replaces_and_reads_back(tmp_path):
    results = sample_results()
    points = run_points(results)
    assert points and all(p.machine == machine_fingerprint(results) for p in points)
    assert {p.version for p in points if p.stack == "go-fast"} == {
        f"{s.framework_version} / {s.driver_version}" for s in results.stacks if s.id == "go-fast"}
    store = open_store(tmp_path)
    assert store.record(points) == len(points)
    assert store.record(points) == len(points)  # again: replaced, not doubled
    assert store.points() == sorted(points, key=lambda p: (p.recorded_at, p.run_id, p.stack, p.cell))
    assert {p.stack for p in store.points("go-fast")} == {"go-fast"}
    store.close()
    assert (tmp_path / DEFAULT_HISTORY_FILE).is_file()


def test_ab_sides_are_recorded_under_the_stack_with_their_versions(tmp_path):
    results = sample_results()
    names = {"go-fast": ("go", "v1 (base)"), "py-steady": ("go", "v2 (head)")}
    points = run_points(results, names)
    go = [p for p in points if p.stack == "go"]
    assert {p.version for p in go} == {"v1 (base)", "v2 (head)"}
    assert {p.run_stack for p in go} == {"go-fast", "py-steady"}
    store = open_store(tmp_path, str(tmp_path / "h.sqlite"))
    store.record(points)  # both sides of one run and cell: distinct rows
    assert len(store.points("go")) == len(go)


def test_series_are_per_stack_cell_and_machine():
    points = _series(None)
    other = [Point(**{**p.__dict__, "machine": "other"}) for p in points[:3]]
    grouped = series(points + other)
    assert [len(v) for v in grouped.values()] == [len(points), 3]


def test_history_page_has_a_chart_per_series_with_the_band_and_the_step():
    html = render_history(_series(STEP), store="history.sqlite", stack="s")
    figures = json.loads(html.split('<script id="pgarena-figures" type="application/json">')[1].split("</script>")[0])
    assert len(figures) == 1
    band, median = figures[0]["data"][1], figures[0]["data"][2]
    assert band["fill"] == "tonexty" and len(median["y"]) == 24
    assert median["x"][STEP_AT] == f"{STEP_AT + 1}. 1.{STEP_AT}"
    assert [s["x0"] for s in figures[0]["layout"]["shapes"]] == [STEP_AT - 0.5]
    assert "between 1.11 and 1.12" in html and "Plotly" in html
    assert math.isclose(figures[0]["data"][0]["y"][0], _series(STEP)[0].rps_high)


def _saved_run(tmp_path):
    from pgarena.results.store import save

    run_dir = tmp_path / "results" / "run-1"
    run_dir.mkdir(parents=True)
    results = sample_results()
    save(results, run_dir)
    return run_dir, results


def test_a_finished_run_is_recorded_in_the_default_store(tmp_path):
    from pgarena.cli.history import record_history

    run_dir, results = _saved_run(tmp_path)
    record_history(run_dir, None)
    store = open_store(tmp_path / "results")
    assert len(store.points()) == len(run_points(results)) > 0
    store.close()


def test_history_command_lists_series_and_writes_the_page(tmp_path):
    from typer.testing import CliRunner

    from pgarena.cli import app

    run_dir, _ = _saved_run(tmp_path)
    results_dir = tmp_path / "results"
    done = CliRunner().invoke(app, ["history", "--record", str(run_dir), "--results-dir", str(results_dir)])
    assert done.exit_code == 0, done.output
    assert "go-fast · perf-test rows=1 @ 50 VUs (oha)" in done.output
    assert (results_dir / "history.html").is_file()
    missing = CliRunner().invoke(app, ["history", "nope", "--results-dir", str(results_dir)])
    assert missing.exit_code == 2 and "no run recorded" in missing.output
