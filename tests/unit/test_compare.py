"""pgarena compare on crafted pairs of runs: Welch's test, verdicts, environment checks, renderings."""

from __future__ import annotations

import datetime as dt
import io
import math

import pytest

from pgarena.analysis.compare import compare_figure, compare_runs, welch_test
from pgarena.report.compare import render_html, render_markdown, summary_text, terminal_lines
from pgarena.results.models import (
    Cell,
    CellSummary,
    DatabaseInfo,
    Environment,
    Errors,
    Latency,
    Repetition,
    RunResults,
    Spread,
    StackInfo,
)


def make_cell(stack: str, rps: list[float], p99_ms: list[float] | None = None, *, workload: str = "perf-test",
              rows: int = 10, vus: int = 50, status: str = "ok", cpu_us: float = 100.0, engine: str = "oha") -> Cell:
    """A closed-model cell whose repetitions have the given RPS (and p99 ms; 10 ms each by default)."""
    p99_ms = p99_ms or [10.0] * len(rps)
    reps = [Repetition(index=i, requests=int(r * 10), duration_seconds=10, rps=r,
                       latency=Latency(avg_ms=p / 4, p50_ms=p / 4, p90_ms=p / 2, p95_ms=p / 1.5, p99_ms=p, max_ms=p * 2),
                       errors=Errors(), status_codes={"200": int(r * 10)}, stack_cpu_seconds=1.0, db_cpu_seconds=1.0,
                       stack_rss_peak_bytes=None, generator_cpu_seconds=1.0, raw_output=f"raw/{stack}-{i}.json")
            for i, (r, p) in enumerate(zip(rps, p99_ms, strict=True))]
    summary = None
    if status == "ok":
        summary = CellSummary(rps=Spread.of(rps), latency_avg_ms=Spread.of([p / 4 for p in p99_ms]),
                              latency_p99_ms=Spread.of(p99_ms), requests_total=sum(r.requests for r in reps),
                              failures_total=0, failure_rate=0.0, stack_cpu_us_per_request=cpu_us * 0.6,
                              db_cpu_us_per_request=cpu_us * 0.4)
    return Cell(stack=stack, workload=workload, parameter_name="rows", parameter=rows, vus=vus, engine=engine,
                warmup_seconds=2, duration_seconds=10, repetitions=reps if status == "ok" else [], summary=summary,
                status=status, error=None if status == "ok" else "stack crashed")


def make_stack(stack_id: str, framework_version: str = "1.0") -> StackInfo:
    return StackInfo(id=stack_id, title=stack_id, language="python", framework="fw", framework_version=framework_version,
                     driver="psycopg", driver_version="3.2", server="uvicorn", pooler="psycopg_pool",
                     prepared_statements=True, workloads=["perf-test"], notes=[], status="ok")


def make_run(run_id: str, cells: list[Cell], *, config: dict | None = None, stacks: list[StackInfo] | None = None,
             **environment) -> RunResults:
    """A complete run around `cells`; keyword arguments override Environment fields."""
    env = dict(hostname="bench-1", cpu_model="AMD EPYC 7763", cpu_count=4, memory_bytes=8 * 2**30, kernel="6.1",
               os="Linux", python="3.11.9", pgarena_version="0.1.0", pgarena_git_revision="abc123",
               postgres_version="17.2", engine_versions={"oha": "1.8.0"}, generator_cpus=[0], server_cpus=[1, 2, 3],
               cpu_sets_shared=False)
    env.update(environment)
    base_config = dict(profile="quick", duration_s=10.0, warmup_s=2.0, vus=[50], pool_size=10, workers=3, engine="oha")
    base_config.update(config or {})
    return RunResults(
        run_id=run_id, command="pgarena run", kind="run", status="complete",
        started_at=dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc), config=base_config,
        environment=Environment(**env),
        database=DatabaseInfo(mode="managed", version="17.2", settings_profile="pgarena-default",
                              settings={"shared_buffers": "256MB"}, url="postgresql://pgarena@localhost/pgarena"),
        stacks=stacks or [make_stack(s) for s in sorted({c.stack for c in cells})], cells=cells)


def spread_around(centre: float, rel: float) -> list[float]:
    """Three repetitions: centre × (1 - rel), centre, centre × (1 + rel)."""
    return [centre * (1 - rel), centre, centre * (1 + rel)]


# --- Welch's test ---------------------------------------------------------------------------------------------

def test_welch_statistic_matches_a_hand_computed_example() -> None:
    # A: mean 100, s² = 4, n = 3 → s²/n = 4/3.  B: mean 93, s² = 20/3, n = 4 → s²/n = 5/3.
    # se² = 3, t = -7/√3 = -4.0415; df = 3² / ((4/3)²/2 + (5/3)²/3) = 243/49 = 4.959 → t*(0.95, 4) = 2.776.
    test = welch_test([100, 102, 98], [90, 94, 92, 96])
    assert test.t == pytest.approx(-7 / math.sqrt(3))
    assert test.df == pytest.approx(243 / 49)
    assert test.t_star == pytest.approx(2.7764, abs=1e-4)
    assert test.significant
    assert (test.diff_low, test.diff_high) == pytest.approx((-7 - 2.7764 * math.sqrt(3), -7 + 2.7764 * math.sqrt(3)),
                                                            abs=1e-3)
    assert test.diff_high < 0  # equivalently: the interval on the difference excludes 0


def test_welch_edge_cases() -> None:
    assert not welch_test([5, 5], [5, 5, 5]).significant
    assert welch_test([5, 5], [6, 6]).t == math.inf
    with pytest.raises(ValueError):
        welch_test([1.0], [1.0, 2.0])


# --- Verdicts -----------------------------------------------------------------------------------------------

def test_a_real_regression_is_flagged() -> None:
    a = make_run("a", [make_cell("s1", spread_around(10_000, 0.01))])
    b = make_run("b", [make_cell("s1", spread_around(8_000, 0.01))])
    comparison = compare_runs(a, b)
    (cell,) = comparison.cells
    assert cell.rps.verdict == "regression"
    assert cell.rps.significant and cell.rps.test is not None
    assert cell.rps.change == pytest.approx(-0.2)
    assert cell.rps.low_a is not None and cell.rps.low_a < 10_000 < cell.rps.high_a
    assert comparison.regressions(0.05) == [cell]
    assert comparison.regressions(0.25) == []
    assert not comparison.differences


def test_a_change_within_the_spread_is_noise() -> None:
    a = make_run("a", [make_cell("s1", spread_around(10_000, 0.08))])
    b = make_run("b", [make_cell("s1", spread_around(9_800, 0.08))])
    (cell,) = compare_runs(a, b).cells
    assert cell.rps.change == pytest.approx(-0.02)
    assert not cell.rps.significant
    assert cell.rps.verdict == "within noise"
    assert compare_runs(a, b).regressions(0.0) == []


def test_a_significant_change_below_the_minimum_effect_is_not_a_regression() -> None:
    figure = compare_figure([10_000, 10_001, 9_999], [9_900, 9_901, 9_899], higher_is_better=True)
    assert figure.significant and figure.change == pytest.approx(-0.01, abs=1e-4)
    assert figure.verdict == "within noise"
    assert compare_figure([10_000, 10_001, 9_999], [9_900, 9_901, 9_899], higher_is_better=True,
                          min_change=0.005).verdict == "regression"


def test_improvement_and_latency_direction() -> None:
    a = make_run("a", [make_cell("s1", spread_around(10_000, 0.01), [10.0, 10.1, 9.9])])
    b = make_run("b", [make_cell("s1", spread_around(12_000, 0.01), [20.0, 20.2, 19.8])])
    (cell,) = compare_runs(a, b).cells
    assert cell.rps.verdict == "improvement"
    assert cell.p99_ms.verdict == "regression"  # a higher p99 is worse
    assert cell.p99_ms.change == pytest.approx(1.0)
    assert cell.cpu_change == pytest.approx(0.0)


def test_fewer_than_two_repetitions_fall_back_to_overlap() -> None:
    disjoint = compare_figure([10_000], [8_000], higher_is_better=True)
    assert disjoint.test is None and disjoint.significant and disjoint.verdict == "regression"
    assert disjoint.method == "ranges disjoint"
    inside = compare_figure([9_600, 10_000, 10_400], [9_900], higher_is_better=True)
    assert inside.test is None and not inside.significant and inside.verdict == "within noise"
    assert inside.method == "ranges overlap"


# --- Matching -----------------------------------------------------------------------------------------------

def test_cells_on_one_side_only_are_listed() -> None:
    a = make_run("a", [make_cell("s1", [100, 101]), make_cell("s2", [100, 101]), make_cell("s3", [100, 101])])
    b = make_run("b", [make_cell("s1", [100, 101]), make_cell("s3", [], status="failed"),
                       make_cell("s4", [100, 101]), make_cell("s1", [100, 101], vus=100)])
    comparison = compare_runs(a, b)
    assert [c.a.stack for c in comparison.cells] == ["s1"]
    assert comparison.only_a == [("s2 · perf-test rows=10 · 50 VUs", "not in B"),
                                 ("s3 · perf-test rows=10 · 50 VUs", "failed in B: stack crashed")]
    assert comparison.failed_in_b == ["s3 · perf-test rows=10 · 50 VUs"], "a crash must fail the CI gate"
    assert [label for label, _ in comparison.only_b] == ["s4 · perf-test rows=10 · 50 VUs",
                                                        "s1 · perf-test rows=10 · 100 VUs"]
    markdown = render_markdown(comparison)
    assert "## Only in A" in markdown and "failed in B: stack crashed" in markdown
    assert "## Only in B" in markdown and "s4 · perf-test rows=10 · 50 VUs (not in A)" in markdown


def test_cells_of_different_engines_are_never_paired() -> None:
    """oha and k6 measure different RPS against the same server: a cell measured with each is reported as
    not comparable, not judged as a regression or improvement."""
    a = make_run("a", [make_cell("s1", [1500, 1510, 1505]), make_cell("s2", [900, 905, 910])])
    b = make_run("b", [make_cell("s1", [2100, 2110, 2105], engine="k6"), make_cell("s2", [900, 905, 910])],
                 config={"engine": "k6"}, engine_versions={"oha": "1.8.0", "k6": "1.1.0"})
    comparison = compare_runs(a, b)
    assert [c.a.stack for c in comparison.cells] == ["s2"], "only the same-engine pair is judged"
    assert comparison.not_comparable == [("s1 · perf-test rows=10 · 50 VUs", "not comparable: oha vs k6")]
    assert comparison.count("improvement") == 0 and comparison.only_a == [] and comparison.only_b == []
    assert "1 not comparable (different load generators)" in summary_text(comparison)
    assert "s1 · perf-test rows=10 · 50 VUs (not comparable: oha vs k6)" in render_markdown(comparison)
    assert "not comparable: oha vs k6" in render_html(comparison)


# --- Environment ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("overrides", "what"), [
    ({"cpu_model": "Intel Xeon E5"}, "cpu_model"),
    ({"config": {"profile": "full"}}, "config.profile"),
    ({"server_cpus": [1]}, "server_cpus"),
    ({"engine_versions": {"oha": "1.9.0"}}, "engine_versions.oha"),
    ({"stacks": [make_stack("s1", framework_version="2.0")]}, "stack s1: framework_version"),
])
def test_environment_differences_that_matter_are_warned(overrides: dict, what: str) -> None:
    a = make_run("a", [make_cell("s1", [100, 101])])
    b = make_run("b", [make_cell("s1", [100, 101])], **overrides)
    comparison = compare_runs(a, b)
    assert [d.what for d in comparison.differences] == [what]
    assert "WARNING: the environments differ" in render_markdown(comparison)
    assert "WARNING: the environments differ" in render_html(comparison)


def test_host_and_revision_differences_are_information_only() -> None:
    a = make_run("a", [make_cell("s1", [100, 101])])
    b = make_run("b", [make_cell("s1", [100, 101])], hostname="bench-2", pgarena_git_revision="def456",
                 engine_versions={"oha": "1.8.0", "k6": "1.1.0"})  # k6 was not used by any compared cell
    comparison = compare_runs(a, b)
    assert comparison.differences == []
    assert [d.what for d in comparison.info] == ["hostname", "pgarena_git_revision"]
    markdown = render_markdown(comparison)
    assert "WARNING" not in markdown and "information only" in markdown


# --- Renderings ----------------------------------------------------------------------------------------------

def test_renderings_carry_the_verdicts_and_method() -> None:
    a = make_run("run-a", [make_cell("s1", spread_around(10_000, 0.01)), make_cell("s2", spread_around(10_000, 0.08))])
    b = make_run("run-b", [make_cell("s1", spread_around(8_000, 0.01)), make_cell("s2", spread_around(9_800, 0.08))])
    comparison = compare_runs(a, b)
    markdown = render_markdown(comparison)
    rows = {line.split(" | ")[0].strip("| "): line for line in markdown.splitlines() if line.startswith("| s")}
    assert "| regression |" in rows["s1 · perf-test rows=10 · 50 VUs"]
    assert "-20.0%" in rows["s1 · perf-test rows=10 · 50 VUs"]
    assert "| within noise |" in rows["s2 · perf-test rows=10 · 50 VUs"]
    assert "Welch" in markdown and "α = 0.05" in markdown
    assert "1 regression(s), 0 improvement(s), 1 within noise" in markdown
    html = render_html(comparison)
    assert html.startswith("<!DOCTYPE html>") and "<script src" not in html and "<link" not in html
    assert '<td class="regression">regression</td>' in html
    assert '<td class="within-noise">within noise</td>' in html
    lines = terminal_lines(comparison)
    assert len(lines) == 2 and "regression" in lines[0] and "within noise" in lines[1]


def test_html_escapes_run_content() -> None:
    a = make_run("a", [make_cell("<b>x</b>", [100, 101])])
    b = make_run("b", [make_cell("<b>x</b>", [100, 101])])
    html = render_html(compare_runs(a, b))
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html


def test_terminal_table_shows_every_column_at_its_minimum_width() -> None:
    from rich.console import Console

    from pgarena.report.compare import TERMINAL_TABLE_MIN_WIDTH, terminal_table

    a = make_run("a", [make_cell("pg-fastapi-asyncpg", spread_around(110_000, 0.01), [1234.5, 1200, 1210])])
    b = make_run("b", [make_cell("pg-fastapi-asyncpg", spread_around(80_000, 0.01), [1334.5, 1300, 1310])])
    b.cells[0].flags.append("failures>1%")
    console = Console(width=TERMINAL_TABLE_MIN_WIDTH, file=io.StringIO())
    console.print(terminal_table(compare_runs(a, b)))
    text = console.file.getvalue()
    for expected in ("110,000", "[107,267–112,733]", "-27.3%", "regression", "1,310", "+8.2%", "100 → 100",
                     "B: failures>1%"):
        assert expected in text, expected


def test_drift_is_the_median_change_and_quick_runs_get_a_noise_note() -> None:
    from pgarena.report.compare import noise_warning

    a = make_run("a", [make_cell("s1", [100, 101, 99]), make_cell("s2", [200, 202, 198]),
                       make_cell("s3", [300, 303, 297])])
    b = make_run("b", [make_cell("s1", [110, 111, 109]), make_cell("s2", [180, 182, 178]),
                       make_cell("s3", [303, 306, 300])])
    comparison = compare_runs(a, b)
    assert comparison.drift == pytest.approx(0.10)
    assert "run-to-run drift): 10.0%" in render_markdown(comparison)
    assert noise_warning(comparison) and "'standard' or 'full'" in noise_warning(comparison)
    full = compare_runs(make_run("a", a.cells, config={"profile": "full"}), make_run("b", b.cells,
                                                                                      config={"profile": "full"}))
    assert noise_warning(full) is None
