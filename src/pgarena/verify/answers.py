"""One answer judged whole against its expected answer: the judge of answers sampled under load.

It applies the rules verification applies (verify.py, values.py) to a single answer:

- perf-test, users, graphql, graphql-nested, users-posts: status 200, a JSON content type, the expected number of rows, and every
  column of every row no worse than ⚠️ equivalent by values.judge against PostgreSQL's own JSON;
- static: `{"status": "ok", "timestamp": <int ms>}` with the timestamp between the request's send and
  receive times, ± STATIC_TOLERANCE_MS (a cached answer carries an old timestamp);
- perf-minimal: one row `{"status": "ok", "ts": ...}` whose ts lies in the request's own time, like static;
- the other scenarios (perf-post, perf-nested, perf-large-payload, perf-many-params): rows, like perf-test;
- tx: `{"abalance": <int>}`, equal to the expected balance when pgarena can predict it (checks.py).

A stack that declares its row answers' shape (stack.toml `[answer]`: an envelope, camelCase keys) has that
shape undone first (contract/answer.py); an answer not in the declared shape is wrong.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from typing import Any

from pgarena.contract import workloads as wl
from pgarena.contract.answer import AnswerShape, AnswerShapeError
from pgarena.contract.flags import CONTENT_TYPE
from pgarena.contract.values import Verdict, json_kind, judge, parse_json

STATIC_TOLERANCE_MS = 1000
"""How far a static timestamp may lie outside the request's own send → receive interval."""


def _columns(workload: str) -> dict[str, str]:
    if workload in wl.COLUMNS:
        return wl.COLUMNS[workload]
    return {field: pg_type for field, (_, pg_type) in wl.GRAPHQL_FIELDS.items()}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def judge_rows(workload: str, expected: list[dict], body: Any, known_wrong: Collection[str] = ()) -> str | None:
    """None if a parsed answer holds the expected rows (every column exact or equivalent), else why not.

    NOTE: `known_wrong` are the columns verification already judged ❌ for this stack (its cells carry
    `columns-wrong` and are ranked among all stacks only); they are not judged again here, so a stack's
    known inexactness (e.g. JavaScript's millisecond timestamps) is reported once, not turned into failed
    checks under load. Every other column still must be exact or equivalent."""
    rows = body
    if wl.is_graphql(workload):
        try:
            rows = body["data"]["users"]
        except (KeyError, TypeError):
            return "no data.users in the answer"
    if not isinstance(rows, list):
        return f"not a JSON array but {json_kind(rows)}"
    if len(rows) != len(expected):
        return f"{len(rows)} rows, expected {len(expected)}"
    columns = _columns(workload)
    for index, (want, got) in enumerate(zip(expected, rows)):
        for column, pg_type in columns.items():
            if not isinstance(got, dict) or column not in got:
                return f"row {index + 1}: column {column} missing"
            verdict, reason = judge(pg_type, want[column], got[column])
            if verdict is Verdict.WRONG and column not in known_wrong:
                return f"row {index + 1}, {column}: {reason}"
    return None


def judge_answer(workload: str, expected: Any, *, status: int, content_type: str | None, body: bytes,
                 sent_ms: float, received_ms: float, known_wrong: Collection[str] = (),
                 answer: AnswerShape | None = None) -> str | None:
    """None if one HTTP answer is right, else a one-line reason. `sent_ms`/`received_ms` are the
    request's wall-clock send and receive times in milliseconds since the epoch (static only). `answer` is
    the stack's declared answer shape (stack.toml `[answer]`), undone before the rows are judged: an answer
    not in that shape is wrong."""
    if status != 200:
        return f"status {status}"
    if CONTENT_TYPE not in known_wrong and not wl.is_json_content_type(content_type, graphql=wl.is_graphql(workload)):
        return f"content type {content_type!r}"
    try:
        parsed = parse_json(body)
    except ValueError:
        return f"not JSON: {body[:80]!r}"
    if answer is not None:
        try:
            parsed = answer.unwrap(workload, parsed)
        except AnswerShapeError as exc:
            return str(exc)
    if workload == wl.STATIC:
        stamp = parsed.get("timestamp") if isinstance(parsed, dict) else None
        if not isinstance(parsed, dict) or parsed.get("status") != "ok" or not _is_int(stamp):
            return f"not {{status: ok, timestamp: int ms}}: {body[:80]!r}"
        return _outside_request_time(f"timestamp {stamp}", stamp, sent_ms, received_ms)
    if workload == wl.PERF_MINIMAL:
        return _judge_minimal(parsed, body, sent_ms, received_ms, known_wrong)
    if workload == wl.TX:
        balance = parsed.get("abalance") if isinstance(parsed, dict) else None
        if not isinstance(parsed, dict) or set(parsed) != {"abalance"} or not _is_int(balance):
            return f"not {{\"abalance\": <integer>}}: {body[:80]!r}"
        if expected is not None and balance != expected["abalance"]:
            return f"abalance {balance}, expected {expected['abalance']}"
        return None
    return judge_rows(workload, expected, parsed, known_wrong)


def _judge_minimal(parsed: Any, body: bytes, sent_ms: float, received_ms: float,
                   known_wrong: Collection[str]) -> str | None:
    """`[{"status": "ok", "ts": <ISO 8601 with offset>}]` with ts within the request's own send → receive
    interval ± STATIC_TOLERANCE_MS (the database's now() of this request; a cached answer is older)."""
    row = parsed[0] if isinstance(parsed, list) and len(parsed) == 1 and isinstance(parsed[0], dict) else None
    if row is None or row.get("status") != "ok":
        return f"not [{{status: ok, ts}}]: {body[:80]!r}"
    if "ts" in known_wrong:
        return None
    try:
        stamp = dt.datetime.fromisoformat(str(row.get("ts")).strip())
    except ValueError:
        return f"ts {row.get('ts')!r} is not an ISO 8601 timestamp"
    if stamp.tzinfo is None:
        return f"ts {row.get('ts')!r} has no offset"
    return _outside_request_time(f"ts {row.get('ts')}", stamp.timestamp() * 1000, sent_ms, received_ms)


def _outside_request_time(what: str, stamp_ms: float, sent_ms: float, received_ms: float) -> str | None:
    """Why a clock reading in an answer is not this request's (None: it lies within the request's send →
    receive interval ± STATIC_TOLERANCE_MS; a cached answer carries an older one)."""
    if sent_ms - STATIC_TOLERANCE_MS <= stamp_ms <= received_ms + STATIC_TOLERANCE_MS:
        return None
    return f"{what} outside the request's time {sent_ms:.0f}–{received_ms:.0f} ms"
