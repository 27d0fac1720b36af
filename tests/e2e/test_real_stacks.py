"""End to end: build the real stacks, verify them, run a short real load with both engines, render.

Slow (stack builds on a cold machine: ~1 min Go modules, ~20 s pip, ~5 s npm); the load itself is
about a minute. Numbers are not asserted (this machine is noisy); completeness and correctness are.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from pgarena.config.stackdef import load_stacks
from pgarena.contract.values import Verdict
from pgarena.contract.workloads import PERF_TEST_COLUMNS
from pgarena.load.engines import EngineUnavailable, get_engine
from pgarena.results.store import load
from tests.conftest import PROJECT_DIR, needs_postgres

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, needs_postgres]
STACKS = ["go-nethttp-pgx", "python-fastapi-asyncpg", "node-fastify-pg", "rust-actix-graphql"]
GRAPHQL_STACKS = {"rust-actix-graphql"}
# NOTE: nothing measured that these tests do not read (issue 23 item 4): one warm-up window per cell, no
# pgbench ceiling (tests/integration/test_ceiling.py measures it), no generator headroom (test_open_model.py)
BRIEF = ("--warmup-cap", "1", "--ceiling-seconds", "0", "--no-headroom")


def _engine_or_skip(name: str) -> None:
    try:
        get_engine(name).binary  # noqa: B018
    except EngineUnavailable as exc:
        pytest.skip(f"{name} not installed here ({exc}); `make test` installs it via scripts/setup.sh")


def _pgarena(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pgarena", *args], cwd=PROJECT_DIR, capture_output=True, text=True,
                          timeout=1800)


def test_every_stack_every_workload_with_oha(tmp_path):
    _engine_or_skip("oha")
    available = {s.id for s in load_stacks(PROJECT_DIR / "stacks")[0] if s.available}
    missing = [s for s in STACKS if s not in available]
    assert not missing, f"stacks unavailable on this machine: {missing}"
    done = _pgarena("run", "--stacks", ",".join(STACKS), "--engine", "oha", "--rows", "1,10", "--limits", "20",
                    "--workloads", "perf-test,users,static,tx,graphql", "--vus", "8", "--duration", "1",
                    "--warmup", "0.5", "--repetitions", "2", *BRIEF, "--results-dir", str(tmp_path), "--run-id", "e2e")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"Report:  {tmp_path / 'e2e' / 'report.md'}" in done.stdout
    results = load(tmp_path / "e2e")
    assert results.status == "complete"
    assert {s.id: s.status for s in results.stacks} == {s: "ok" for s in STACKS}
    for v in results.verifications:
        assert v.ok, (v.stack, v.workload, [c for c in v.checks if not c.ok])
        assert all(case.ok for case in v.bad_input), (v.stack, v.workload, v.bad_input)
        if v.workload == "perf-test":
            assert [c.column for c in v.columns] == list(PERF_TEST_COLUMNS)
            # the canonical decodings every one of these drivers gets right
            by_name = {c.column: c.verdict for c in v.columns}
            assert by_name["json_val"] is Verdict.EXACT and by_name["int_array_val"] is Verdict.EXACT, v.stack
        # every request reached the database, with no cache and no N+1 (extra statements are only ⚠️)
        assert v.accounting is not None and v.accounting.verdict is not Verdict.WRONG, (v.stack, v.accounting)
        if v.workload == "tx":
            assert v.tx_invariants.holds, v.tx_invariants
    per_stack = 2 + 1 + 1 + 1  # perf-test rows, users, static, tx (one VU level: test_pipeline.py runs four)
    assert len(results.cells) == len(STACKS) * per_stack + len(GRAPHQL_STACKS)
    for cell in results.cells:
        assert cell.status == "ok" and len(cell.repetitions) == 2, (cell.stack, cell.workload, cell.error)
        assert cell.summary.rps.median > 0 and cell.summary.failures_total == 0
        assert cell.summary.stack_cpu_us_per_request > 0 and cell.summary.db_cpu_us_per_request is not None
        if cell.workload != "static":
            assert cell.summary.db_cpu_us_per_request > 0  # the database did work
        # every workload's sampled answers compared whole, every window's statements matched its answers
        assert all(r.checks_total > 0 and r.checks_failed == 0 for r in cell.repetitions), (
            cell.stack, cell.workload, [r.check_failure for r in cell.repetitions])
        assert cell.window_accounting is Verdict.EXACT, (cell.stack, cell.workload, cell.window_accounting_reason)
        assert cell.variants == {"perf-test": 64, "tx": 100_000}.get(cell.workload, 1) and not cell.variants_failed
        if cell.workload == "tx":
            assert cell.tx_invariants.holds and cell.tx_invariants.answered_200 > 0, cell.tx_invariants
    assert results.environment.engine_versions["oha"].startswith("oha 1.16")

    report = (tmp_path / "e2e" / "report.md").read_text()
    results_part = report.split("## Verification")[0].split("## REST against GraphQL")[0]
    tables = re.split(r"^### ", results_part, flags=re.M)[1:]
    assert len(tables) == 6
    for table in tables:
        expected = GRAPHQL_STACKS if table.startswith("graphql") else STACKS
        for stack in expected:
            assert f"| {stack} |" in table, (stack, table[:80])
    assert report.count("✅ hold") == len(STACKS)
    graphql = report.split("## REST against GraphQL on the same stack")[1].split("## ")[0]
    assert graphql.count("| rust-actix-graphql |") == 1
    matrix = report.split("### perf-test columns")[1].split("###")[0]
    for stack in STACKS:
        row = next(line for line in matrix.splitlines() if line.startswith(f"| {stack} |"))
        assert row.count("|") == len(PERF_TEST_COLUMNS) + 2


def test_k6_engine_on_one_stack(tmp_path):
    _engine_or_skip("k6")
    done = _pgarena("run", "--stacks", "go-nethttp-pgx", "--workloads", "perf-test", "--engine", "k6", "--rows", "1",
                    "--vus", "4", "--duration", "1", "--warmup", "1", "--repetitions", "3", *BRIEF,
                    "--results-dir", str(tmp_path), "--run-id", "k6")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = load(tmp_path / "k6")
    (cell,) = results.cells
    assert cell.engine == "k6" and len(cell.repetitions) == 3 and cell.summary.rps.median > 0
    assert cell.summary.rps.min <= cell.summary.rps.median <= cell.summary.rps.max
    assert cell.variants == 64 and cell.window_accounting is Verdict.EXACT, cell.window_accounting_reason
    assert all(r.checks_total > 0 and r.checks_failed == 0 for r in cell.repetitions)
    assert results.environment.engine_versions["k6"].startswith("k6 v1.1.0")
    assert (tmp_path / "k6" / cell.repetitions[0].raw_output).name.endswith(".k6-summary.json")


@pytest.mark.parametrize("stack", ["python-fastapi-asyncpg", "node-fastify-pg"])
def test_forked_workers_share_the_pool_so_the_total_is_the_pool_size(tmp_path, stack):
    """3 workers over 10 connections: shares 4, 3, 3 (PGARENA_POOL_SIZES); PostgreSQL never sees more than 10
    and, under 50 VUs, sees all 10 (a floor of 3 each would have held 9)."""
    _engine_or_skip("oha")
    done = _pgarena("run", "--stacks", stack, "--engine", "oha", "--workloads", "users", "--limits", "20",
                    "--vus", "50", "--duration", "1", "--warmup", "0.5", "--repetitions", "1", "--workers", "3",
                    "--pool-size", "10", *BRIEF, "--results-dir", str(tmp_path), "--run-id", "shares")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = load(tmp_path / "shares")
    info = results.stack(stack)
    assert info.status == "ok" and info.peak_connections == 10, (info.peak_connections, info.flags)
    assert "pool-exceeded" not in info.flags and info.listen_addresses
    (cell,) = results.cells
    assert cell.peak_connections is not None and cell.peak_connections <= 10 and cell.warmup is not None


def test_copies_of_a_real_stack_are_never_ordered(tmp_path):
    """Issue 21, item 3: the A/A check with a real stack — three copies of go-nethttp-pgx under three ids,
    raced by the default schedule within a short budget: no order may be claimed among them (exit 0). One table,
    the headline's workload, within 3m (2026-11-28: with static beside it, 2m30s left the second table unmeasured
    in a CI run, and 4m took 185 s of CI; perf-test alone got 5 rounds in 2m30s, 95 s of the test).

    At the default 95 % a table of copies claims an order in up to 5 % of runs by design — a CI run failed on
    one (perf-test: 0.89, 0.80–0.99) — so this test asks for 99.9 %: a verdict that holds its level fails it in
    at most 0.1 % of CI runs; one that claims orders among copies at many times its level still fails it. The
    rate at the default level is what the simulation tests (tests/unit/test_verdict_simulation.py) and
    `pgarena calibrate` measure."""
    _engine_or_skip("oha")
    done = _pgarena("calibrate", "--stack", "go-nethttp-pgx", "--copies", "3", "--workloads", "perf-test",
                    "--vus", "50", "--budget", "3m", "--confidence", "0.999", "--results-dir", str(tmp_path),
                    "--run-id", "aa")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = load(tmp_path / "aa" / "run")
    assert results.config["confidence_level"] == 0.999
    assert {c.workload for c in results.cells if c.summary is not None} == {"perf-test"}
    from pgarena.analysis.verdicts import run_verdicts

    for verdict in run_verdicts(results).values():
        if verdict.inference is not None:
            assert not verdict.inference.claims_above(), "an order claimed among identical copies"
