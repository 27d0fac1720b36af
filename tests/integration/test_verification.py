"""Verification against running fixture stacks: a canonical one, and one with every fault injected."""

from __future__ import annotations

import pytest

from pgarena.config.stackdef import load_stacks
from pgarena.contract.values import Verdict
from pgarena.db.postgres import free_port
from pgarena.stack.launch import stack_environment, stack_values
from pgarena.system.process import ServerProcess, wait_until_healthy
from pgarena.verify.verification import verify_stack
from tests.conftest import FIXTURE_STACKS, needs_postgres

pytestmark = [pytest.mark.postgres, needs_postgres]


def _verify(stack_id, managed_db, tmp_path, fixture_env):
    from pgarena.config.profiles import build_config

    config = build_config(project_dir=tmp_path, overrides={"pool_size": 4, "workers": 1})
    stack = next(s for s in load_stacks(FIXTURE_STACKS)[0] if s.id == stack_id)
    port = free_port()
    values = stack_values(config, managed_db, stack, port)
    with ServerProcess(stack.definition.run.command, cwd=stack.directory,
                       env=stack_environment(values, stack.definition.run.env), log_path=tmp_path / "run.log") as srv:
        wait_until_healthy(srv, f"http://127.0.0.1:{port}/api/static", 30)
        results = verify_stack(f"http://127.0.0.1:{port}", stack_id, ["perf-test", "users", "static", "tx", "graphql"],
                               managed_db, perf_test_rows=[1, 10], users_limits=[20], timeout_s=10,
                               exit_code=srv.exit_code)
    return {v.workload: v for v in results}


def test_canonical_stack_is_exact_everywhere(managed_db, tmp_path, fixture_env):
    results = _verify("fixture-good", managed_db, tmp_path, fixture_env)
    assert all(v.ok for v in results.values()), [c for v in results.values() for c in v.checks if not c.ok]
    perf = results["perf-test"]
    assert len(perf.columns) == 23
    assert {c.verdict for c in perf.columns} == {Verdict.EXACT}
    numeric = next(c for c in perf.columns if c.column == "numeric_val")  # the matrix says which encoding
    assert "JSON number with PostgreSQL's digits" in numeric.reason
    cases = {c.name.split(":")[0] for c in perf.checks}  # answers whose float form drops trailing zeros
    assert {"_numeric 12.4999, 3 rows", "_numeric 99999999.9989, 3 rows"} <= cases
    for v in results.values():
        assert all(case.ok for case in v.bad_input), [c for c in v.bad_input if not c.ok]
    assert len(perf.bad_input) == 20 and len(results["tx"].bad_input) == 17
    echo = next(c for c in perf.bad_input if "echoed" in c.description)
    assert echo.status == 200  # an injection-shaped text is valid text, returned verbatim
    assert results["tx"].tx_invariants.holds
    assert results["tx"].tx_invariants.answered_200 == results["tx"].tx_invariants.history_rows_added > 0
    assert [c.verdict for c in results["graphql"].columns] == [Verdict.EXACT] * 3
    assert results["users"].accounting.workload_statements_per_request == 1
    assert results["static"].accounting.verdict is Verdict.EXACT


def test_every_injected_fault_is_caught_with_a_reason(managed_db, tmp_path, fixture_env):
    results = _verify("fixture-faulty", managed_db, tmp_path, fixture_env)
    columns = {c.column: c for c in results["perf-test"].columns}
    assert columns["json_val"].verdict is Verdict.WRONG and "escaped string" in columns["json_val"].reason
    assert columns["jsonb_val"].verdict is Verdict.WRONG
    assert columns["bigint_val"].verdict is Verdict.WRONG and "rounded" in columns["bigint_val"].reason
    assert columns["int_array_val"].verdict is Verdict.WRONG and "PostgreSQL text" in columns["int_array_val"].reason
    assert columns["numeric_val"].verdict is Verdict.WRONG and "other digits" in columns["numeric_val"].reason
    assert "12345.679 for 12345.6790" in columns["numeric_val"].reason  # the seed's first row
    assert columns["text_val"].verdict is Verdict.EXACT  # untouched columns stay exact
    assert results["perf-test"].ok  # wrong columns are loaded (and flagged), not skipped
    bad = [case for case in results["perf-test"].bad_input if case.description.startswith("_records")]
    assert bad and not any(case.ok for case in bad) and {case.status for case in bad} == {500}
    assert not any(case.ok for case in results["tx"].bad_input)
    users = results["users"]  # a cache: right answers, but not from the database
    assert users.accounting.verdict is Verdict.WRONG and "cache" in users.accounting.reason
    static = results["static"]
    assert not static.ok and any(c.name == "timestamp moves between requests" and not c.ok for c in static.checks)
    tx = results["tx"]  # every 10th write dropped, and the balance answered as a bare number
    assert not tx.ok and not tx.tx_invariants.holds and "lost" in tx.tx_invariants.problem
    shape = [c for c in tx.checks if c.name.endswith('the answer is {"abalance": n}')]
    assert len(shape) == 10 and not any(c.ok for c in shape), shape


def test_numeric_through_a_binary_float_is_wrong_and_nothing_else(managed_db, tmp_path, fixture_env):
    results = _verify("fixture-numeric-float", managed_db, tmp_path, fixture_env)
    perf = results["perf-test"]
    assert perf.ok  # loaded (and flagged columns-wrong), like any wrong column
    assert perf.wrong_columns == ["numeric_val"]
    reason = next(c.reason for c in perf.columns if c.column == "numeric_val")
    assert "same value, other digits" in reason, reason
    assert all(v.ok and not v.wrong_columns for w, v in results.items() if w != "perf-test")


def test_time_values_cut_to_milliseconds_are_wrong_on_every_time_column(managed_db, tmp_path, fixture_env,
                                                                       monkeypatch):
    """Issue 22: every time value pgarena sends carries microseconds, so a stack that cuts them to
    milliseconds (a JavaScript Date) gets ❌ on timestamptz too (the seed's whole seconds let it pass)."""
    monkeypatch.setenv("FIXTURE_FAULTS", "ms_times")
    perf = _verify("fixture-good", managed_db, tmp_path, fixture_env)["perf-test"]
    assert perf.wrong_columns == ["time_val", "timestamp_val", "timestamptz_val"]
    reason = next(c.reason for c in perf.columns if c.column == "timestamptz_val")
    assert "expected the instant" in reason, reason


def test_compressed_answers_nobody_asked_for_fail_verification(managed_db, tmp_path, fixture_env):
    results = _verify("fixture-gzip", managed_db, tmp_path, fixture_env)
    for workload, v in results.items():
        encoding = [c for c in v.checks if c.name.endswith("no content encoding the request did not accept")]
        assert encoding and not any(c.ok for c in encoding), (workload, encoding)
        assert "Content-Encoding: gzip" in encoding[0].detail
        assert not v.ok  # not loaded: the answers are not the work the benchmark measures
    # the bodies themselves are right (httpx decodes them): only the encoding is at fault
    assert {c.verdict for c in results["perf-test"].columns} == {Verdict.EXACT}


def test_verify_exits_1_and_names_each_failing_stack(tmp_path, fixture_env):
    """A ❌ column and a stack that died during verification (in the accounting burst) each fail
    `pgarena verify`; the dead one is `crashed` with its exit code, not a database-accounting verdict."""
    import subprocess
    import sys

    from pgarena.results.store import load
    from tests.conftest import PROJECT_DIR

    done = subprocess.run(
        [sys.executable, "-m", "pgarena", "verify", "--stacks-dir", str(FIXTURE_STACKS), "--results-dir",
         str(tmp_path), "--run-id", "v", "--stacks", "fixture-good,fixture-numeric-float,fixture-crash",
         "--workloads", "static,users,perf-test"],
        cwd=PROJECT_DIR, capture_output=True, text=True, timeout=600, env=fixture_env)
    assert done.returncode == 1, done.stdout + done.stderr
    failed = [line for line in done.stderr.splitlines() if line.startswith("FAILED ")]
    assert len(failed) == 2, done.stderr
    assert "FAILED fixture-numeric-float: perf-test: ❌ columns numeric_val" in failed[0] + failed[1]
    assert "FAILED fixture-crash: crashed: exited with code 7 during verification" in failed
    results = load(tmp_path / "v")
    assert results.stack("fixture-crash").status == "crashed"
    users = results.verification("fixture-crash", "users")
    assert users.accounting is None and "exited with code 7" in users.accounting_unavailable  # not "a cache?"
    assert results.verification("fixture-crash", "perf-test") is None  # not verified after the crash


SCENARIOS = ["perf-minimal", "perf-post", "perf-nested", "perf-large-payload", "perf-many-params"]


def _verify_scenarios(stack_id, managed_db, tmp_path):
    from pgarena.config.profiles import build_config
    from pgarena.config.run import workload_parameters
    from pgarena.db.data import load_workload_data

    load_workload_data(managed_db, SCENARIOS)
    config = build_config(project_dir=tmp_path, overrides={"pool_size": 4, "workers": 1})
    stack = next(s for s in load_stacks(FIXTURE_STACKS)[0] if s.id == stack_id)
    port = free_port()
    values = stack_values(config, managed_db, stack, port)
    with ServerProcess(stack.definition.run.command, cwd=stack.directory,
                       env=stack_environment(values, stack.definition.run.env), log_path=tmp_path / "run.log") as srv:
        wait_until_healthy(srv, f"http://127.0.0.1:{port}/api/static", 30)
        results = verify_stack(f"http://127.0.0.1:{port}", stack_id, SCENARIOS, managed_db, perf_test_rows=[1],
                               users_limits=[20], timeout_s=10, exit_code=srv.exit_code,
                               scenario_parameters={w: workload_parameters(config, w) for w in SCENARIOS})
    return {v.workload: v for v in results}


def test_the_five_scenarios_verify_exact_on_a_canonical_stack(managed_db, tmp_path, fixture_env):
    """Every scenario: exact columns against PostgreSQL's own answer, the bad-input battery, accounting."""
    results = _verify_scenarios("fixture-scenarios", managed_db, tmp_path)
    assert list(results) == SCENARIOS
    for workload, v in results.items():
        assert v.ok, (workload, [c for c in v.checks if not c.ok])
        assert v.columns and {c.verdict for c in v.columns} == {Verdict.EXACT}, (workload, v.columns)
        assert all(case.ok for case in v.bad_input), (workload, [c for c in v.bad_input if not c.ok])
        # the fixture's psycopg wraps each query in BEGIN/COMMIT: ⚠️ extra statements, never ❌
        assert v.accounting is not None and v.accounting.verdict is not Verdict.WRONG, (workload, v.accounting)
        assert v.accounting.workload_statements_per_request == 1
    post = results["perf-post"]
    assert any(c.name.startswith("varied payload 1") for c in post.checks)  # unicode, big integers, nesting
    assert len(results["perf-post"].bad_input) == 18 and len(results["perf-many-params"].bad_input) == 5
    assert results["perf-nested"].accounting.rows_per_request == 100  # 100 rows at the loaded depth


def test_scenario_faults_are_caught_column_by_column(managed_db, tmp_path, fixture_env):
    """A fixed echo, a stale now() and millisecond timestamps are ❌ columns; bad input answered 500 fails."""
    results = _verify_scenarios("fixture-scenarios-faulty", managed_db, tmp_path)
    echo = {c.column: c for c in results["perf-post"].columns}["echo"]
    assert echo.verdict is Verdict.WRONG
    minimal = results["perf-minimal"]
    ts = {c.column: c for c in minimal.columns}["ts"]
    assert ts.verdict is Verdict.WRONG
    assert any(c.name.endswith("ts is this request's now()") and not c.ok for c in minimal.checks)
    assert {c.column: c.verdict for c in results["perf-nested"].columns} == {"row_num": Verdict.EXACT,
                                                                            "nested": Verdict.EXACT}
    nested_bad = results["perf-nested"].bad_input
    assert nested_bad and not any(case.ok for case in nested_bad) and {case.status for case in nested_bad} == {500}


def test_millisecond_timestamps_alone_are_named_as_lost_microseconds(managed_db, tmp_path, fixture_env,
                                                                     monkeypatch):
    monkeypatch.setenv("FIXTURE_FAULTS", "ms_timestamps")
    results = _verify_scenarios("fixture-scenarios", managed_db, tmp_path)
    ts = {c.column: c for c in results["perf-minimal"].columns}["ts"]
    assert ts.verdict is Verdict.WRONG and "microseconds are lost" in ts.reason
    assert all(c.ok for c in results["perf-minimal"].checks)  # a fresh now() each time, only coarser


NESTED = ["users-posts", "graphql-nested"]


def _verify_nested(managed_db, tmp_path):
    from pgarena.config.profiles import build_config
    from pgarena.db.data import load_workload_data

    load_workload_data(managed_db, NESTED)
    config = build_config(project_dir=tmp_path, overrides={"pool_size": 4, "workers": 1})
    stack = next(s for s in load_stacks(FIXTURE_STACKS)[0] if s.id == "fixture-nested")
    port = free_port()
    values = stack_values(config, managed_db, stack, port)
    with ServerProcess(stack.definition.run.command, cwd=stack.directory,
                       env=stack_environment(values, stack.definition.run.env), log_path=tmp_path / "run.log") as srv:
        wait_until_healthy(srv, f"http://127.0.0.1:{port}/api/static", 30)
        results = verify_stack(f"http://127.0.0.1:{port}", "fixture-nested", NESTED, managed_db, perf_test_rows=[1],
                               users_limits=[20], timeout_s=10, exit_code=srv.exit_code)
    return {v.workload: v for v in results}


def test_the_nested_list_verifies_and_a_batched_stack_costs_constant_statements(managed_db, tmp_path, fixture_env):
    """graphql-nested and users-posts: exact users and posts, the bad-input battery, 2 statements at any limit."""
    results = _verify_nested(managed_db, tmp_path)
    for workload, v in results.items():
        assert v.ok, (workload, [c for c in v.checks if not c.ok])
        assert {c.column: c.verdict for c in v.columns} == dict.fromkeys(("id", "username", "posts"), Verdict.EXACT)
        assert v.bad_input and all(case.ok for case in v.bad_input), (workload, [c for c in v.bad_input if not c.ok])
        assert v.accounting is not None and v.accounting.statements_by_limit == {5: 2.0, 20: 2.0}, v.accounting
        assert v.accounting.n_plus_one is False and v.accounting.verdict is not Verdict.WRONG
    assert any("users(limit: 3) posts(limit: 2)" in c.name for c in results["graphql-nested"].checks)


def test_n_plus_one_is_flagged_with_its_counts_and_not_made_invalid(managed_db, tmp_path, fixture_env, monkeypatch):
    monkeypatch.setenv("FIXTURE_FAULTS", "n_plus_one")
    results = _verify_nested(managed_db, tmp_path)
    for workload, v in results.items():
        assert v.ok, (workload, [c for c in v.checks if not c.ok])  # the answers are right
        a = v.accounting
        assert a is not None and a.n_plus_one is True and a.statements_by_limit == {5: 6.0, 20: 21.0}, a
        assert a.verdict is Verdict.EQUIVALENT and a.reason.startswith("N+1: 6 statements per request at limit 5")


def _verify_enveloped(managed_db, tmp_path, *, declared: bool):
    """fixture-enveloped (FraiseQL's REST shape: {"data": rows, "meta": ...}, camelCase keys), verified with its
    stack.toml [answer] applied (declared) or without it (as if the stack had not declared it)."""
    from pgarena.config.profiles import build_config
    from pgarena.db.data import load_workload_data

    workloads = ["perf-test", "users", "graphql", "users-posts"]
    load_workload_data(managed_db, workloads)
    config = build_config(project_dir=tmp_path, overrides={"pool_size": 4, "workers": 1})
    stack = next(s for s in load_stacks(FIXTURE_STACKS)[0] if s.id == "fixture-enveloped")
    port = free_port()
    values = stack_values(config, managed_db, stack, port)
    with ServerProcess(stack.definition.run.command, cwd=stack.directory,
                       env=stack_environment(values, stack.definition.run.env), log_path=tmp_path / "run.log") as srv:
        wait_until_healthy(srv, f"http://127.0.0.1:{port}/api/static", 30)
        results = verify_stack(f"http://127.0.0.1:{port}", "fixture-enveloped", workloads, managed_db,
                               perf_test_rows=[1], users_limits=[20], timeout_s=10, exit_code=srv.exit_code,
                               answer=stack.answer if declared else None)
    return {v.workload: v for v in results}


def test_a_declared_answer_shape_is_undone_and_every_value_still_judged(managed_db, tmp_path, fixture_env):
    """stack.toml [answer]: the envelope opened and the keys mapped, then the same verdicts as for the canonical
    stack — every column exact, the bad-input battery (perf-test's echo case inside the envelope) right — and
    the mapping recorded on the row workloads only; without the declaration the same answers fail."""
    results = _verify_enveloped(managed_db, tmp_path, declared=True)
    for workload, v in results.items():
        assert v.ok, (workload, [c for c in v.checks if not c.ok])
        assert {c.verdict for c in v.columns} == {Verdict.EXACT}, (workload, v.columns)
        assert v.bad_input and all(case.ok for case in v.bad_input), (workload, [c for c in v.bad_input if not c.ok])
    assert {w: v.answer_mapping for w, v in results.items()} == {
        "perf-test": 'envelope "data", camelCase keys', "users": 'envelope "data", camelCase keys',
        "users-posts": 'envelope "data", camelCase keys', "graphql": None}
    assert len(results["perf-test"].columns) == 23 and results["users"].accounting.workload_statements_per_request == 1
    undeclared = _verify_enveloped(managed_db, tmp_path / "undeclared", declared=False)
    for workload in ("perf-test", "users", "users-posts"):
        v = undeclared[workload]
        assert not v.ok and v.answer_mapping is None
        assert any(c.name.endswith("a JSON array") and not c.ok for c in v.checks), v.checks
    assert undeclared["graphql"].ok
