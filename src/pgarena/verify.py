"""Verification before load: every answer compared with the database's own, value by value.

For each workload a stack declares: status and content type, the shape (a list of the right length with
the right keys), a verdict per column (values.py), and the bad-input contract (400 + JSON). A workload
whose status or shape is wrong is not loaded; one with wrong columns is loaded and flagged.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from typing import Any

import httpx

from pgarena import workloads as wl
from pgarena.postgres import Database
from pgarena.results import BadInputCase, Check, ColumnVerdict, WorkloadVerification
from pgarena.values import Verdict, judge, parse_json, worst

STATIC_CLOCK_TOLERANCE_MS = 5 * 60 * 1000
"""How far the static timestamp may be from pgarena's clock (same machine: generous)."""

VARIED_CASE_ROWS = 3


def _seed_query(records: str) -> dict[str, str]:
    return {"_records": records, **wl.SEED_PERF_TEST_VALUES}


def _perf_path(query: dict[str, str]) -> str:
    from urllib.parse import urlencode

    return f"{wl.PERF_TEST_PATH}?{urlencode(query)}"


BAD_INPUT: dict[str, list[tuple[str, str]]] = {
    wl.PERF_TEST: [
        ("_records missing", _perf_path(wl.SEED_PERF_TEST_VALUES)),
        ("_records empty", _perf_path(_seed_query(""))),
        ("_records not a number", _perf_path(_seed_query("abc"))),
        ("_records negative", _perf_path(_seed_query("-1"))),
        ("_records zero", _perf_path(_seed_query("0"))),
        ("_records above 1000", _perf_path(_seed_query("1001"))),
        ("_records fractional", _perf_path(_seed_query("1.5"))),
    ],
    wl.USERS: [
        ("limit missing", wl.USERS_PATH),
        ("limit empty", f"{wl.USERS_PATH}?limit="),
        ("limit not a number", f"{wl.USERS_PATH}?limit=abc"),
        ("limit negative", f"{wl.USERS_PATH}?limit=-5"),
        ("limit zero", f"{wl.USERS_PATH}?limit=0"),
        ("limit above 10000", f"{wl.USERS_PATH}?limit=10001"),
        ("limit fractional", f"{wl.USERS_PATH}?limit=2.5"),
    ],
    wl.STATIC: [],
}
"""The documented bad-input cases per workload (docs/verification.md): each must get 400 + JSON."""


def is_json_content_type(value: str | None) -> bool:
    return bool(value) and value.split(";")[0].strip().lower() == "application/json"


class _ColumnTally:
    """Worst verdict per column over every compared row, keeping the first reason of that verdict."""

    def __init__(self, columns: dict[str, str]) -> None:
        self.columns = columns
        self.state: dict[str, tuple[Verdict, str | None]] = {c: (Verdict.EXACT, None) for c in columns}

    def add(self, expected: list[dict], actual: list[Any], case: str) -> None:
        for index, (want, got) in enumerate(zip(expected, actual)):
            for column, pg_type in self.columns.items():
                if not isinstance(got, dict) or column not in got:
                    verdict, reason = Verdict.WRONG, "column missing from the answer"
                else:
                    verdict, reason = judge(pg_type, want[column], got[column])
                current = self.state[column][0]
                if worst(current, verdict) is not current:
                    self.state[column] = (verdict, f"{case}, row {index + 1}: {reason}")

    def verdicts(self) -> list[ColumnVerdict]:
        return [
            ColumnVerdict(column=c, pg_type=self.columns[c], verdict=v, reason=r) for c, (v, r) in self.state.items()
        ]


def _get(client: httpx.Client, path: str) -> tuple[httpx.Response | None, str | None]:
    try:
        return client.get(path), None
    except httpx.HTTPError as exc:
        return None, f"{type(exc).__name__}: {exc}"


def _rows_case(
    client: httpx.Client, path: str, expected: list[dict], case: str, tally: _ColumnTally, checks: list[Check]
) -> None:
    response, error = _get(client, path)
    if response is None:
        checks.append(Check(name=f"{case}: answer", ok=False, detail=error))
        return
    checks.append(Check(name=f"{case}: status 200", ok=response.status_code == 200, detail=str(response.status_code)))
    content_type = response.headers.get("content-type")
    checks.append(Check(name=f"{case}: content type JSON", ok=is_json_content_type(content_type), detail=content_type))
    try:
        body = parse_json(response.content)
    except ValueError as exc:
        checks.append(Check(name=f"{case}: JSON body", ok=False, detail=str(exc)[:200]))
        return
    if not isinstance(body, list):
        checks.append(Check(name=f"{case}: a JSON array", ok=False, detail=f"got {type(body).__name__}"))
        return
    checks.append(
        Check(name=f"{case}: {len(expected)} rows", ok=len(body) == len(expected), detail=f"got {len(body)} rows")
    )
    tally.add(expected, body, case)


def verify_perf_test(client: httpx.Client, db: Database, rows: Sequence[int]) -> WorkloadVerification:
    checks: list[Check] = []
    tally = _ColumnTally(wl.PERF_TEST_COLUMNS)
    for records in sorted(set(rows)):
        request = wl.perf_test_request(records)
        _rows_case(client, request.path, wl.expected_perf_test(db, records), f"seed values, {records} rows", tally, checks)
    varied = wl.perf_test_request(VARIED_CASE_ROWS, wl.VARIED_PERF_TEST_VALUES)
    expected = wl.expected_perf_test(db, VARIED_CASE_ROWS, wl.VARIED_PERF_TEST_VALUES)
    _rows_case(client, varied.path, expected, f"varied values, {VARIED_CASE_ROWS} rows", tally, checks)
    return WorkloadVerification(stack="", workload=wl.PERF_TEST, ok=all(c.ok for c in checks), checks=checks,
                                columns=tally.verdicts())


def verify_users(client: httpx.Client, db: Database, limits: Sequence[int]) -> WorkloadVerification:
    checks: list[Check] = []
    tally = _ColumnTally(wl.USERS_COLUMNS)
    for limit in sorted(set(limits)):
        _rows_case(client, wl.users_request(limit).path, wl.expected_users(db, limit), f"limit {limit}", tally, checks)
    return WorkloadVerification(stack="", workload=wl.USERS, ok=all(c.ok for c in checks), checks=checks,
                                columns=tally.verdicts())


def verify_static(client: httpx.Client) -> WorkloadVerification:
    checks: list[Check] = []
    stamps: list[int] = []
    for attempt in (1, 2):
        response, error = _get(client, wl.STATIC_PATH)
        if response is None:
            checks.append(Check(name=f"request {attempt}: answer", ok=False, detail=error))
            break
        checks.append(Check(name=f"request {attempt}: status 200", ok=response.status_code == 200,
                            detail=str(response.status_code)))
        content_type = response.headers.get("content-type")
        checks.append(Check(name=f"request {attempt}: content type JSON", ok=is_json_content_type(content_type),
                            detail=content_type))
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


def check_bad_input(client: httpx.Client, workload: str) -> list[BadInputCase]:
    """Send each documented bad request; each must get 400 with a JSON body."""
    cases = []
    for description, path in BAD_INPUT[workload]:
        response, error = _get(client, path)
        if response is None:
            cases.append(BadInputCase(description=description, path=path, status=None, ok=False, detail=error))
            continue
        json_ok = is_json_content_type(response.headers.get("content-type"))
        try:
            parse_json(response.content)
        except ValueError:
            json_ok = False
        ok = response.status_code == 400 and json_ok
        detail = None if ok else f"HTTP {response.status_code}: {response.text[:120]}"
        cases.append(BadInputCase(description=description, path=path, status=response.status_code, ok=ok, detail=detail))
    return cases


def verify_stack(
    base_url: str,
    stack_id: str,
    workloads: Sequence[str],
    db: Database,
    *,
    perf_test_rows: Sequence[int],
    users_limits: Sequence[int],
    timeout_s: float,
) -> list[WorkloadVerification]:
    """Verify every workload of one running stack; the stack must still be healthy afterwards."""
    results = []
    with httpx.Client(base_url=base_url, timeout=timeout_s) as client:
        for workload in workloads:
            if workload == wl.PERF_TEST:
                verification = verify_perf_test(client, db, perf_test_rows)
            elif workload == wl.USERS:
                verification = verify_users(client, db, users_limits)
            else:
                verification = verify_static(client)
            verification.bad_input = check_bad_input(client, workload)
            response, error = _get(client, wl.STATIC_PATH if wl.STATIC in workloads else wl.load_request(
                workload, 1).path)
            alive = response is not None and response.status_code == 200
            verification.checks.append(Check(name="still healthy after bad input", ok=alive,
                                             detail=error or (response and str(response.status_code))))
            verification.ok = verification.ok and alive
            verification.stack = stack_id
            results.append(verification)
    return results
