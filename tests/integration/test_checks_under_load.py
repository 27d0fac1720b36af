"""Checks that hold during load (issue 10, items 1–3), through the real pipeline with short windows:
per-window database accounting, request variants and whole-answer sampling with the generator's headers."""

from __future__ import annotations

import pytest

from pgarena.analysis.ranking import UNRANKED, throughput_ranks
from pgarena.config.profiles import build_config
from pgarena.contract.values import Verdict
from pgarena.load.engines import EngineUnavailable, get_engine
from pgarena.pipeline import runner
from pgarena.results.store import load
from pgarena.verify.variants import PERF_TEST_VARIANTS
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres

pytestmark = [pytest.mark.postgres, needs_postgres, pytest.mark.usefixtures("no_wire")]
ENGINES = ["oha", "k6"]


def _run(tmp_path, engine: str, stack: str, workloads: list[str], **overrides):
    try:
        get_engine(engine).binary  # noqa: B018
    except EngineUnavailable as exc:
        pytest.skip(f"{engine} not installed: {exc}")
    config = build_config(project_dir=tmp_path, overrides={
        "stacks_dir": FIXTURE_STACKS, "results_dir": tmp_path, "run_id": f"{stack}-{engine}", "stacks": [stack],
        "workloads": workloads, "users_limits": [5], "perf_test_rows": [2], "vus": [4], "repetitions": 1,
        "warmup_s": 1.0, "duration_s": 1.5, "engine": engine, "cold_start_requests": 1,
        # nothing measured that no assertion here reads: one warm-up window, no pgbench ceiling, no headroom
        "warmup_cap_s": 1.0, "ceiling_s": 0, "headroom": False, **overrides})
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="test", log=lambda _: None)
    return run_dir, load(run_dir)


def _unranked(cell) -> bool:
    return dict((id(c), rank) for c, rank in throughput_ranks([cell]))[id(cell)] == UNRANKED


@pytest.mark.parametrize("engine", ENGINES)
def test_a_stack_that_caches_after_30_answers_is_caught_per_window(tmp_path, fixture_env, engine):
    run_dir, results = _run(tmp_path, engine, "fixture-cache-after-30", ["users"])
    verification = results.verification("fixture-cache-after-30", "users")
    # fewer than 30 answers before the load: verification and its accounting burst see the database
    assert verification.ok and verification.accounting.verdict is not Verdict.WRONG
    (cell,) = results.cells
    rep = cell.repetitions[0]
    assert rep.accounting is not None and rep.accounting.verdict is Verdict.WRONG
    assert rep.accounting.workload_statement_calls < rep.accounting.expected_calls_low
    assert rep.accounting.answered_2xx > 30
    assert cell.window_accounting is Verdict.WRONG and "queries-wrong" in cell.flags and _unranked(cell)
    assert rep.checks_total > 0 and rep.checks_failed == 0  # its cached answers are right: only the database sees it
    assert "❌ window 1:" in (run_dir / "report.md").read_text()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_stack_that_caches_for_the_generator_only_is_caught(tmp_path, fixture_env, engine):
    run_dir, results = _run(tmp_path, engine, "fixture-cache-for-load", ["users"])
    assert results.verification("fixture-cache-for-load", "users").accounting.verdict is not Verdict.WRONG
    (cell,) = results.cells
    rep = cell.repetitions[0]
    # the sampler sends the generator's User-Agent, so it is served from the same cache: the window's
    # statements are a handful for thousands of answers
    assert rep.accounting.workload_statement_calls <= 2 < rep.accounting.answered_2xx // 10
    assert cell.window_accounting is Verdict.WRONG and "queries-wrong" in cell.flags and _unranked(cell)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_honest_stack_passes_every_window_with_varied_requests(tmp_path, fixture_env, engine):
    run_dir, results = _run(tmp_path, engine, "fixture-good", ["perf-test", "users", "static", "graphql"],
                            repetitions=2)
    cells = {c.workload: c for c in results.cells}
    assert cells["perf-test"].variants == PERF_TEST_VARIANTS and cells["perf-test"].variants_failed == 0
    assert cells["users"].variants == cells["static"].variants == cells["graphql"].variants == 1
    for cell in results.cells:
        assert cell.status == "ok" and cell.window_accounting is Verdict.EXACT, (cell.workload,
                                                                                 cell.window_accounting_reason)
        assert not {"queries-wrong", "variants-wrong", "checks-failed>1%"} & set(cell.flags), cell.flags
        for rep in cell.repetitions:
            assert rep.checks_total > 0 and rep.checks_failed == 0, rep.check_failure
            a = rep.accounting
            assert a.expected_calls_low <= a.workload_statement_calls <= a.expected_calls_high
    # the URL file holds the 64 distinct perf-test requests oha drew from
    urls = (run_dir / "raw" / "fixture-good" / "perf-test-rows2-vus4.urls").read_text().splitlines()
    assert len(set(urls)) == PERF_TEST_VARIANTS
    report = (run_dir / "report.md").read_text()
    assert "| Variants | Window accounting |" in report and "| 64 | ✅ |" in report


def test_columns_wrong_at_verification_are_named_once_not_judged_again_under_load(tmp_path, fixture_env):
    # fixture-faulty rounds perf-test's bigint through a double (and more): verification names those ❌
    # columns (columns-wrong: ranked among all stacks only); the variants and the samples under load judge
    # every other column, and find nothing more — so the cell is not made invalid a second time
    _, results = _run(tmp_path, "oha", "fixture-faulty", ["perf-test"])
    (cell,) = results.cells
    assert "bigint_val" in results.verification("fixture-faulty", "perf-test").wrong_columns
    assert "columns-wrong" in cell.flags
    assert cell.variants == PERF_TEST_VARIANTS and cell.variants_failed == 0 and "variants-wrong" not in cell.flags
    rep = cell.repetitions[0]
    assert rep.checks_total > 0 and rep.checks_failed == 0, rep.check_failure


def test_tx_windows_are_accounted_and_sampled_balances_predicted(tmp_path, fixture_env):
    _, results = _run(tmp_path, "oha", "fixture-good", ["tx"])
    (cell,) = results.cells
    rep = cell.repetitions[0]
    assert cell.status == "ok" and cell.tx_invariants.holds  # the sampler's commits are counted too
    assert cell.variants == len(set((tmp_path / "fixture-good-oha" / "raw" / "fixture-good" / "tx-vus4.bodies")
                                    .read_bytes().split(b"\n")) - {b""})
    # each sampled transaction went to an account of its own: its balance was predicted exactly
    assert rep.checks_total > 0 and rep.checks_failed == 0, rep.check_failure
    assert rep.accounting.statements_per_request == 5 and cell.window_accounting is Verdict.EXACT
