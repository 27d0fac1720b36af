"""Verification before load: every answer compared with the database's own, value by value.

For each workload a stack declares: status and content type, the shape (a list of the right length with
the right keys), a verdict per column (values.py), and the bad-input contract (400 + JSON). A workload
whose status or shape is wrong is not loaded; one with wrong columns is loaded and flagged. A shape the
stack's stack.toml `[answer]` declares (an envelope, camelCase keys) is undone before the values are judged;
its workloads are loaded and flagged `answer-mapped`.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable, Sequence

import httpx

from pgarena.contract import workloads as wl
from pgarena.contract.answer import AnswerShape
from pgarena.contract.values import Verdict, json_kind, not_json, parse_json
from pgarena.db import accounting
from pgarena.db.expected import expected_perf_test, expected_users
from pgarena.db.postgres import Database
from pgarena.results.models import Check, RunResults, WorkloadVerification
from pgarena.system.wireobserver import WireObserver
from pgarena.verify import badinput, http, txcheck, wire
from pgarena.verify.nested import verify_nested
from pgarena.verify.rows import ColumnTally, content_checks, get, rows_case
from pgarena.verify.rows import send as send_request
from pgarena.verify.scenarios import verify_scenario
from pgarena.verify.windowcheck import rows_per_request

STATIC_CLOCK_TOLERANCE_MS = 5 * 60 * 1000
"""How far the static timestamp may be from pgarena's clock (same machine: generous)."""

VARIED_CASE_ROWS = 3
TX_VERIFY_CASES = 10
TX_VERIFY_SEED = 20240115
NUMERIC_CASE_VALUES = ("12.4999", "99999999.9989")
"""`_numeric` values of extra perf-test cases (the seed's other values, 3 rows each): row 1 is 12.5000
and 99999999.9990, whose trailing zeros a binary float drops (12.5, 99999999.999); the seed's own first
row, 12345.6790, is another. No zero: exact decimal types may write 0.0000 as 0 too (pgx does), so a
zero cannot tell a float from a decimal (values.py judges it ⚠️)."""


def verify_perf_test(client: httpx.Client, db: Database, rows: Sequence[int],
                     answer: AnswerShape | None = None) -> WorkloadVerification:
    checks: list[Check] = []
    tally = ColumnTally(wl.PERF_TEST_COLUMNS)
    shape = {"workload": wl.PERF_TEST, "answer": answer}
    for records in sorted(set(rows)):
        request = wl.perf_test_request(records)
        rows_case(client, request.path, expected_perf_test(db, records), f"seed values, {records} rows", tally, checks,
                  **shape)
    varied = wl.perf_test_request(VARIED_CASE_ROWS, wl.VARIED_PERF_TEST_VALUES)
    expected = expected_perf_test(db, VARIED_CASE_ROWS, wl.VARIED_PERF_TEST_VALUES)
    rows_case(client, varied.path, expected, f"varied values, {VARIED_CASE_ROWS} rows", tally, checks, **shape)
    for numeric in NUMERIC_CASE_VALUES:
        values = {**wl.SEED_PERF_TEST_VALUES, "_numeric": numeric}
        request = wl.perf_test_request(VARIED_CASE_ROWS, values)
        rows_case(client, request.path, expected_perf_test(db, VARIED_CASE_ROWS, values),
                  f"_numeric {numeric}, {VARIED_CASE_ROWS} rows", tally, checks, **shape)
    return WorkloadVerification(stack="", workload=wl.PERF_TEST, ok=all(c.ok for c in checks), checks=checks,
                                columns=tally.verdicts())


def verify_users(client: httpx.Client, db: Database, limits: Sequence[int],
                 answer: AnswerShape | None = None) -> WorkloadVerification:
    checks: list[Check] = []
    tally = ColumnTally(wl.USERS_COLUMNS)
    for limit in sorted(set(limits)):
        rows_case(client, wl.users_request(limit).path, expected_users(db, limit), f"limit {limit}", tally, checks,
                  workload=wl.USERS, answer=answer)
    return WorkloadVerification(stack="", workload=wl.USERS, ok=all(c.ok for c in checks), checks=checks,
                                columns=tally.verdicts())


def verify_static(client: httpx.Client) -> WorkloadVerification:
    checks: list[Check] = []
    stamps: list[int] = []
    for attempt in (1, 2):
        response, error = get(client, wl.STATIC_PATH)
        if response is None:
            checks.append(Check(name=f"request {attempt}: answer", ok=False, detail=error))
            break
        checks.append(Check(name=f"request {attempt}: status 200", ok=response.status_code == 200,
                            detail=str(response.status_code)))
        checks.extend(content_checks(response, f"request {attempt}"))
        try:
            body = parse_json(response.content)
        except ValueError as exc:
            checks.append(Check(name=f"request {attempt}: JSON body", ok=False, detail=str(exc)[:200]))
            break
        stamp = body.get("timestamp") if isinstance(body, dict) else None
        shape_ok = (
            isinstance(body, dict)
            and body.get("status") == "ok"
            and isinstance(stamp, int)
            and not isinstance(stamp, bool)
        )
        checks.append(Check(name=f"request {attempt}: shape {{status: ok, timestamp: int ms}}", ok=shape_ok,
                            detail=str(body)[:200]))
        if not shape_ok:
            break
        now_ms = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
        checks.append(Check(name=f"request {attempt}: timestamp is now (ms)",
                            ok=abs(stamp - now_ms) <= STATIC_CLOCK_TOLERANCE_MS, detail=f"{stamp} vs {now_ms}"))
        stamps.append(stamp)
        time.sleep(0.02)
    if len(stamps) == 2:
        checks.append(Check(name="timestamp moves between requests", ok=stamps[1] > stamps[0],
                            detail=f"{stamps[0]} → {stamps[1]}"))
    return WorkloadVerification(stack="", workload=wl.STATIC, ok=bool(checks) and all(c.ok for c in checks),
                                checks=checks)


def verify_tx(client: httpx.Client, db: Database, cases: int = TX_VERIFY_CASES) -> tuple[WorkloadVerification, int]:
    """Each answer must be the balance the database holds after the transaction; returns (result, 200s)."""
    checks: list[Check] = []
    answered_200 = 0
    for index, body in enumerate(wl.random_tx_bodies(cases, seed=TX_VERIFY_SEED)):
        fields = json.loads(body)
        before = _account_balance(db, fields["aid"])
        response = send_request(client, wl.tx_request(body))
        if isinstance(response, str):
            checks.append(Check(name=f"tx {index + 1}: answer", ok=False, detail=response))
            continue
        answered_200 += response.status_code == 200
        checks.append(Check(name=f"tx {index + 1}: status 200", ok=response.status_code == 200,
                            detail=str(response.status_code)))
        checks.extend(content_checks(response, f"tx {index + 1}"))
        try:
            answer = parse_json(response.content)
        except ValueError:
            answer = None
        expected = before + fields["delta"]
        shaped = isinstance(answer, dict) and "abalance" in answer
        checks.append(Check(name=f"tx {index + 1}: the answer is {{\"abalance\": n}}", ok=shaped,
                            detail=None if shaped else f"got {response.text[:200]!r}"))
        if not shaped:  # a bare number (or anything else) is not the contract's answer
            continue
        got = answer["abalance"]
        checks.append(Check(name=f"tx {index + 1}: abalance is the balance after the update",
                            ok=isinstance(got, int) and not isinstance(got, bool) and got == expected,
                            detail=f"got {got!r}, expected {expected} (database now {_account_balance(db, fields['aid'])})"))
    return WorkloadVerification(stack="", workload=wl.TX, ok=all(c.ok for c in checks), checks=checks), answered_200


def _account_balance(db: Database, aid: int) -> int:
    with db.connect() as conn:
        return conn.execute("SELECT abalance FROM pgbench_accounts WHERE aid = %s", [aid]).fetchone()[0]


def verify_graphql(client: httpx.Client, db: Database) -> WorkloadVerification:
    """The GraphQL answer must hold the same users as the REST one, field by field."""
    checks: list[Check] = []
    columns = {field: pg_type for field, (_, pg_type) in wl.GRAPHQL_FIELDS.items()}
    tally = ColumnTally(columns)
    response = send_request(client, wl.graphql_request())
    if isinstance(response, str):
        checks.append(Check(name="graphql: answer", ok=False, detail=response))
        return WorkloadVerification(stack="", workload=wl.GRAPHQL, ok=False, checks=checks)
    checks.append(Check(name="graphql: status 200", ok=response.status_code == 200, detail=str(response.status_code)))
    checks.extend(content_checks(response, "graphql", graphql=True))
    try:
        body = parse_json(response.content)
        users = body["data"]["users"]
    except (ValueError, KeyError, TypeError) as exc:
        checks.append(Check(name="graphql: data.users", ok=False, detail=(
            not_json(exc) if isinstance(exc, ValueError) else "no data.users member") + f": {response.text[:200]}"))
        return WorkloadVerification(stack="", workload=wl.GRAPHQL, ok=False, checks=checks)
    expected = [{field: row[column] for field, (column, _) in wl.GRAPHQL_FIELDS.items()}
                for row in expected_users(db, wl.GRAPHQL_LIMIT)]
    ok_list = isinstance(users, list)
    checks.append(Check(name=f"graphql: {wl.GRAPHQL_LIMIT} users", ok=ok_list and len(users) == len(expected),
                        detail=f"got {len(users) if ok_list else json_kind(users)}"))
    if ok_list:
        tally.add(expected, users, f"users(limit: {wl.GRAPHQL_LIMIT})")
    return WorkloadVerification(stack="", workload=wl.GRAPHQL, ok=all(c.ok for c in checks), checks=checks,
                                columns=tally.verdicts())


def loadable(checks: Sequence[Check]) -> bool:
    """Every check passed but perhaps the content type: an answer with the right JSON under a wrong or missing
    Content-Type is loaded and measured, flagged `content-type-wrong` and ranked among all stacks only (its
    JSON is judged like any other; the header is the client's problem, not the work's)."""
    return all(c.ok or c.name.endswith(": content type JSON") for c in checks)


def _nested_sender(client: httpx.Client, workload: str) -> Callable[[int, int], None]:
    """Sends one request of the N+1 probe at a users limit (posts: the load's 5 per user)."""
    def send(limit: int, index: int) -> None:
        send_request(client, wl.graphql_nested_request(limit) if workload == wl.GRAPHQL_NESTED
                     else wl.users_posts_request(limit))

    return send


def verify_stack(
    base_url: str,
    stack_id: str,
    workloads: Sequence[str],
    db: Database,
    *,
    perf_test_rows: Sequence[int],
    users_limits: Sequence[int],
    timeout_s: float,
    health_path: str = wl.STATIC_PATH,
    routes: dict[str, str] | None = None,
    exit_code: Callable[[], int | None] | None = None,
    scenario_parameters: dict[str, list[int | None]] | None = None,
    answer: AnswerShape | None = None,
    observer: WireObserver | None = None,
) -> list[WorkloadVerification]:
    """Verify every workload of one running stack: answers, bad input, database accounting.

    The stack must still be healthy after each workload's battery; tx verification also checks the
    TPC-B invariants over all its requests and that the battery wrote nothing. `exit_code()` is the
    stack process's exit code once it has died (None while it runs): a stack that died during a
    workload gets a failed "still running" check instead of verdicts about answers it never gave (a
    burst of refused requests is not "a cache"), and the workloads after it are not verified.
    `answer` is the stack's declared answer shape (stack.toml `[answer]`): undone before the values of its
    row workloads are judged, and recorded as their `answer_mapping`. `observer`: the wire observer the
    stack's database connections go through; each loadable workload then gets its `wire` profile (verify/wire.py).
    """
    results = []
    scenario_params = scenario_parameters or {}
    accounting_off = accounting.available(db)
    with http.http_client(base_url, timeout_s, routes or {}) as client:
        for workload in workloads:
            tx_before = txcheck.snapshot(db) if workload == wl.TX else None
            tx_200 = 0
            if workload == wl.PERF_TEST:
                verification = verify_perf_test(client, db, perf_test_rows, answer)
            elif workload == wl.USERS:
                verification = verify_users(client, db, users_limits, answer)
            elif workload == wl.TX:
                verification, tx_200 = verify_tx(client, db)
            elif workload == wl.GRAPHQL:
                verification = verify_graphql(client, db)
            elif workload in wl.NESTED_LISTS:
                verification = verify_nested(client, db, workload, answer)
            elif workload in wl.SCENARIOS:
                verification = verify_scenario(client, db, workload, scenario_params.get(workload, [None]), answer)
            else:
                verification = verify_static(client)
            if answer is not None and answer.applies_to(workload):
                verification.answer_mapping = answer.describe()
            users_before = _users_count(db) if workload in (wl.USERS, wl.PERF_TEST, *wl.NESTED_LISTS) else None
            battery_before = txcheck.snapshot(db) if workload == wl.TX else None
            verification.bad_input, battery_200 = badinput.run_battery(client, workload, answer)
            if battery_before is not None:
                untouched = txcheck.snapshot(db) == battery_before
                verification.checks.append(Check(name="bad tx bodies wrote nothing", ok=untouched,
                                                 detail=None if untouched else f"{battery_200} answered 200"))
                tx_200 += battery_200
            if users_before is not None:
                after = _users_count(db)
                verification.checks.append(Check(name="bad input left the users table intact",
                                                 ok=after == users_before, detail=f"{users_before} → {after} rows"))
            alive = get(client, health_path)[0]
            verification.checks.append(Check(name="still healthy after bad input",
                                             ok=alive is not None and alive.status_code == 200,
                                             detail=None if alive is None else str(alive.status_code)))
            parameter = wire.burst_parameter(workload, perf_test_rows, users_limits, scenario_params)
            if accounting_off:
                verification.accounting_unavailable = accounting_off
            elif loadable(verification.checks) and workload in wl.NESTED_LISTS:
                verification.accounting = accounting.measure_nested(db, workload, _nested_sender(client, workload))
            elif loadable(verification.checks):
                burst, answered = wire.burst_sender(client, workload, parameter, count=accounting.ACCOUNTING_REQUESTS,
                                                    seed=TX_VERIFY_SEED + 1)
                verification.accounting = accounting.measure(
                    db, workload, burst, rows_per_request=rows_per_request(workload, parameter))
                tx_200 += answered[0]
            if observer is not None and loadable(verification.checks):
                tx_200 += wire.observe_into(verification, client, parameter, observer, seed=TX_VERIFY_SEED + 2)
            if tx_before is not None:
                verification.tx_invariants = txcheck.check(tx_before, txcheck.snapshot(db), tx_200)
                verification.checks.append(Check(name="TPC-B invariants over the verification requests",
                                                 ok=verification.tx_invariants.holds,
                                                 detail=verification.tx_invariants.problem))
            died = exit_code() if exit_code else None
            if died is not None:
                verification.checks.append(Check(name="the stack process is still running", ok=False,
                                                 detail=f"exited with code {died}"))
                if verification.accounting is not None:
                    verification.accounting = None
                    verification.accounting_unavailable = f"the stack exited with code {died} during the burst"
            verification.ok = loadable(verification.checks)
            verification.stack = stack_id
            results.append(verification)
            if died is not None:
                break
    return results


def failure_reasons(verification: WorkloadVerification) -> list[str]:
    """Why one workload's verification counts as failed (empty: it passed): a failed check, a ❌ column,
    answers in a declared other shape (`answer-mapped`), a ❌ database accounting, bad-input cases answered
    wrongly. ⚠️ verdicts are not failures."""
    reasons = []
    failed = [c for c in verification.checks if not c.ok]
    if failed:
        first = failed[0]
        more = f" (+{len(failed) - 1} more checks)" if len(failed) > 1 else ""
        reasons.append(f"{first.name}: {first.detail}{more}" if first.detail else f"{first.name}{more}")
    if verification.wrong_columns:
        reasons.append("❌ columns " + ", ".join(verification.wrong_columns))
    if verification.answer_mapping:
        reasons.append(f"not the contract's answer shape: {verification.answer_mapping} (stack.toml [answer]; "
                       "loaded, flagged answer-mapped)")
    if verification.accounting is not None and verification.accounting.verdict is Verdict.WRONG:
        reasons.append(f"❌ database accounting: {verification.accounting.reason}")
    bad = [case for case in verification.bad_input if not case.ok]
    if bad:
        reasons.append(f"bad input {len(verification.bad_input) - len(bad)}/{len(verification.bad_input)} "
                       f"(first wrong: {bad[0].description})")
    return reasons


def failed_stacks(results: RunResults) -> dict[str, str]:
    """stack id → one line saying why it failed verification, for every stack that did.

    A stack fails when it did not run (config error, build or start failed, crashed — with its exit
    code) or when any of its workloads has a reason in `failure_reasons`. Unavailable stacks (a tool
    missing on this machine) are skipped, not failed.
    """
    lines: dict[str, str] = {}
    for stack in results.stacks:
        if stack.status not in ("ok", "unavailable"):
            lines[stack.id] = f"{stack.status}: {stack.reason}" if stack.reason else stack.status
            continue
        parts = [f"{v.workload}: {'; '.join(reasons)}" for v in results.verifications
                 if v.stack == stack.id and (reasons := failure_reasons(v))]
        if parts:
            lines[stack.id] = " | ".join(parts)
    return lines


def _users_count(db: Database) -> int | None:
    with db.connect() as conn:
        exists = conn.execute("SELECT to_regclass('pgarena.users') IS NOT NULL").fetchone()[0]
        return conn.execute("SELECT count(*) FROM users").fetchone()[0] if exists else None
