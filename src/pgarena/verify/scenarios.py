"""Verification of seed 000's newer scenarios, value by value against PostgreSQL's own answer.

Each answer is compared with `json_agg` over the same function call (db/expected.py): the echoed payload
exactly (unicode, big integers, nesting), the nested objects at their depth, the large text's length
and bytes, the checksum over the parameters. Inputs vary, so a stack answering a fixed response fails.

perf-minimal's `ts` is the database's `now()` of the stack's own query, which no second query can
reproduce: it must lie between the database's clock read just before the request and just after it.
A stack that keeps only milliseconds (JavaScript's Date) cannot show the microseconds PostgreSQL has:
when every answer ends in 000 µs the column is ❌, as perf-test's timestamps are for the same stacks.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import httpx

from pgarena.contract import workloads as wl
from pgarena.contract.answer import AnswerShape
from pgarena.contract.values import Verdict, parse_json
from pgarena.db.expected import (
    expected_perf_large_payload,
    expected_perf_many_params,
    expected_perf_nested,
    expected_perf_post,
)
from pgarena.db.postgres import Database
from pgarena.results.models import Check, ColumnVerdict, WorkloadVerification
from pgarena.verify.rows import ColumnTally, answer_body, content_checks, rows_case, send

MINIMAL_CASES = 3
"""perf-minimal answers compared with the database's clock (all three ending in 000 µs: precision lost)."""
POST_RECORDS = (1, 3)
"""perf-post rows per case: one row, and several that must all echo the same payload."""
NESTED_CASE_RECORDS = 5
LARGE_PAYLOAD_CASES_KB = (1, 100)
"""perf-large-payload sizes verified (the load sizes are verified too, see verify_scenario)."""


def _verification(workload: str, checks: list[Check], tally: ColumnTally) -> WorkloadVerification:
    return WorkloadVerification(stack="", workload=workload, ok=all(c.ok for c in checks), checks=checks,
                                columns=tally.verdicts())


def _database_now(db: Database) -> dt.datetime:
    with db.connect() as conn:
        return conn.execute("SELECT clock_timestamp()").fetchone()[0]


def _pg_json_timestamptz(db: Database, instant: dt.datetime) -> str:
    """PostgreSQL's own JSON text of a timestamptz (what a stack that passes it through writes)."""
    with db.connect() as conn:
        return parse_json(conn.execute("SELECT to_json(%s::timestamptz)::text", [instant]).fetchone()[0])


def verify_perf_minimal(client: httpx.Client, db: Database, answer: AnswerShape | None = None) -> WorkloadVerification:
    """`[{"status": "ok", "ts": <the database's now() of this request>}]`, MINIMAL_CASES times."""
    checks: list[Check] = []
    tally = ColumnTally(wl.PERF_MINIMAL_COLUMNS)
    whole_milliseconds = 0
    compared = 0
    for case in range(1, MINIMAL_CASES + 1):
        name = f"answer {case}"
        before = _database_now(db)
        response = send(client, wl.perf_minimal_request())
        after = _database_now(db)
        if isinstance(response, str):
            checks.append(Check(name=f"{name}: answer", ok=False, detail=response))
            continue
        checks.append(Check(name=f"{name}: status 200", ok=response.status_code == 200,
                            detail=str(response.status_code)))
        checks.extend(content_checks(response, name))
        parsed, body = answer_body(response, wl.PERF_MINIMAL, answer, name, checks)
        if not parsed:
            continue
        shaped = isinstance(body, list) and len(body) == 1 and isinstance(body[0], dict)
        checks.append(Check(name=f"{name}: 1 row", ok=shaped, detail=None if shaped else response.text[:100]))
        if not shaped:
            continue
        stamp = _parse_instant(body[0].get("ts"))
        # the instant the answer claims, if it is this request's; else the bracket's start (judged ❌)
        in_bracket = stamp is not None and before - dt.timedelta(milliseconds=1) <= stamp <= after
        expected_instant = stamp if in_bracket else before
        expected = [{"status": "ok", "ts": _pg_json_timestamptz(db, expected_instant)}]
        if stamp is not None and not in_bracket:
            checks.append(Check(name=f"{name}: ts is this request's now()", ok=False,
                                detail=f"{body[0].get('ts')} outside the database's clock {before} … {after}"))
        tally.add(expected, body, name)
        compared += 1
        whole_milliseconds += stamp is not None and stamp.microsecond % 1000 == 0
    verification = _verification(wl.PERF_MINIMAL, checks, tally)
    if compared == MINIMAL_CASES and whole_milliseconds == MINIMAL_CASES:
        _mark(verification, "ts", f"all {MINIMAL_CASES} answers end in 000 µs: the database's microseconds "
                                  "are lost (a millisecond clock type)")
    return verification


def _parse_instant(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _mark(verification: WorkloadVerification, column: str, reason: str) -> None:
    verification.columns = [
        ColumnVerdict(column=c.column, pg_type=c.pg_type, verdict=Verdict.WRONG, reason=reason)
        if c.column == column and c.verdict is not Verdict.WRONG else c
        for c in verification.columns
    ]


def verify_perf_post(client: httpx.Client, db: Database, records: list[int],
                     answer: AnswerShape | None = None) -> WorkloadVerification:
    checks: list[Check] = []
    tally = ColumnTally(wl.PERF_POST_COLUMNS)
    shape = {"workload": wl.PERF_POST, "answer": answer}
    for count in sorted(set(records) | set(POST_RECORDS)):
        rows_case(client, wl.perf_post_request(count), expected_perf_post(db, count),
                  f"seed payload, {count} rows", tally, checks, **shape)
    for index, payload in enumerate(wl.VARIED_POST_PAYLOADS, start=1):
        rows_case(client, wl.perf_post_request(POST_RECORDS[-1], payload),
                  expected_perf_post(db, POST_RECORDS[-1], payload), f"varied payload {index}", tally, checks, **shape)
    return _verification(wl.PERF_POST, checks, tally)


def verify_perf_nested(client: httpx.Client, db: Database, depths: list[int],
                       answer: AnswerShape | None = None) -> WorkloadVerification:
    checks: list[Check] = []
    tally = ColumnTally(wl.PERF_NESTED_COLUMNS)
    shape = {"workload": wl.PERF_NESTED, "answer": answer}
    for depth in range(wl.DEPTH_RANGE[0], wl.DEPTH_RANGE[1] + 1):
        rows_case(client, wl.perf_nested_request(depth, NESTED_CASE_RECORDS),
                  expected_perf_nested(db, depth, NESTED_CASE_RECORDS), f"depth {depth}, {NESTED_CASE_RECORDS} rows",
                  tally, checks, **shape)
    for depth in sorted(set(depths)):
        rows_case(client, wl.perf_nested_request(depth), expected_perf_nested(db, depth),
                  f"depth {depth}, {wl.NESTED_RECORDS} rows", tally, checks, **shape)
    return _verification(wl.PERF_NESTED, checks, tally)


def verify_perf_large_payload(client: httpx.Client, db: Database, sizes_kb: list[int],
                              answer: AnswerShape | None = None) -> WorkloadVerification:
    checks: list[Check] = []
    tally = ColumnTally(wl.PERF_LARGE_PAYLOAD_COLUMNS)
    for size_kb in sorted(set(sizes_kb) | set(LARGE_PAYLOAD_CASES_KB)):
        rows_case(client, wl.perf_large_payload_request(size_kb), expected_perf_large_payload(db, size_kb),
                  f"{size_kb} KiB ({size_kb * 1024} characters)", tally, checks, workload=wl.PERF_LARGE_PAYLOAD,
                  answer=answer)
    return _verification(wl.PERF_LARGE_PAYLOAD, checks, tally)


def verify_perf_many_params(client: httpx.Client, db: Database,
                            answer: AnswerShape | None = None) -> WorkloadVerification:
    checks: list[Check] = []
    tally = ColumnTally(wl.PERF_MANY_PARAMS_COLUMNS)
    shape = {"workload": wl.PERF_MANY_PARAMS, "answer": answer}
    rows_case(client, wl.perf_many_params_request(), expected_perf_many_params(db), "seed values", tally, checks,
              **shape)
    for index, values in enumerate(wl.VARIED_MANY_PARAMS, start=1):
        rows_case(client, wl.perf_many_params_request(values), expected_perf_many_params(db, values),
                  f"varied values {index} ({len(values)} of 20 given)", tally, checks, **shape)
    return _verification(wl.PERF_MANY_PARAMS, checks, tally)


def verify_scenario(client: httpx.Client, db: Database, workload: str, parameters: list[int | None],
                    answer: AnswerShape | None = None) -> WorkloadVerification:
    """Verify one of the five scenarios at the parameters its cells will load (and fixed extra cases); `answer`:
    the stack's declared answer shape, undone before judging."""
    given = [p for p in parameters if p is not None]
    if workload == wl.PERF_MINIMAL:
        return verify_perf_minimal(client, db, answer)
    if workload == wl.PERF_POST:
        return verify_perf_post(client, db, given, answer)
    if workload == wl.PERF_NESTED:
        return verify_perf_nested(client, db, given, answer)
    if workload == wl.PERF_LARGE_PAYLOAD:
        return verify_perf_large_payload(client, db, given, answer)
    return verify_perf_many_params(client, db, answer)
