"""`pgarena verify`'s verdict per stack: which stacks failed and the one line saying why."""

from __future__ import annotations

from pgarena.contract.values import Verdict
from pgarena.results.models import DbAccounting
from pgarena.verify.verification import failed_stacks, failure_reasons
from tests.fixtures.report_run import sample_results


def test_failed_stacks_name_every_reason_and_skip_passing_and_unavailable_ones():
    results = sample_results()
    failing = failed_stacks(results)
    assert sorted(failing) == ["node-wrong", "py-steady"]  # go-fast passed; dotnet-missing is unavailable
    assert failing["py-steady"] == "tx: tx: status 200: got 500"
    assert "❌ columns timestamp_val" in failing["node-wrong"]
    assert "bad input 1/2 (first wrong: _int not a number)" in failing["node-wrong"]
    assert "\n" not in "".join(failing.values())  # one line per stack


def test_equivalent_verdicts_do_not_fail_verification():
    results = sample_results()
    py_perf = next(v for v in results.verifications if v.stack == "py-steady" and v.workload == "perf-test")
    assert py_perf.accounting.verdict is Verdict.EQUIVALENT and failure_reasons(py_perf) == []


def test_a_wrong_accounting_verdict_fails_verification():
    results = sample_results()
    go_perf = next(v for v in results.verifications if v.stack == "go-fast" and v.workload == "perf-test")
    go_perf.accounting = DbAccounting(
        requests=20, workload_statements_per_request=0.05, rows_per_request=1.0, other_statements_per_request=0,
        expected_statements_per_request=1, allowed_other_statements_per_request=0, verdict=Verdict.WRONG,
        reason="0.05 workload statements per request, expected 1: answers not from the database (a cache?)")
    assert failed_stacks(results)["go-fast"].startswith("perf-test: ❌ database accounting: 0.05 workload")


def test_a_stack_that_did_not_run_fails_with_its_status_and_reason():
    results = sample_results()
    go = results.stack("go-fast")
    go.status, go.reason = "crashed", "exited with code 7 during verification"
    assert failed_stacks(results)["go-fast"] == "crashed: exited with code 7 during verification"
