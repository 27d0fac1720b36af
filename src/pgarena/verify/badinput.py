"""The bad-input battery: hostile requests per workload and what a robust stack answers.

Most cases must get **400 with a JSON body**. Two kinds are different on purpose:
- an SQL-injection-shaped string in a *text* parameter is valid text: the stack must answer 200 and
  return it verbatim (proof that it binds parameters instead of pasting them), quickly (no pg_sleep);
- GraphQL reports bad input as an `errors` array (status 200 or 400), per the GraphQL convention; a
  request that is not even JSON may also get a plain 400 with a JSON body (GraphQL over HTTP).
The battery is listed in docs/verification.md; each stack's score is shown in the reports.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlencode

import httpx

from pgarena.contract import workloads as wl
from pgarena.contract.answer import AnswerShape, AnswerShapeError
from pgarena.contract.values import parse_json
from pgarena.results.models import BadInputCase
from pgarena.verify import http

INJECTION_SLEEP = "'||pg_sleep(5)--"
INJECTION_DROP = "1;drop table users"
SLOW_ANSWER_S = 4.0
"""An answer slower than this to the pg_sleep(5) string means the string reached SQL as code."""

Expect = Literal["400", "echo", "graphql-error"]


@dataclass(frozen=True)
class Case:
    """One hostile request and the answer it must get."""

    description: str
    method: str
    path: str
    body: bytes | None = None
    content_type: str | None = None
    expect: Expect = "400"


def _query(path: str, **query: str | None) -> str:
    """`path` with the given query parameters (None: left out)."""
    return f"{path}?{urlencode({k: v for k, v in query.items() if v is not None})}" if query else path


def _perf(**changes: str | None) -> str:
    return _query(wl.PERF_TEST_PATH, **{"_records": "1", **wl.SEED_PERF_TEST_VALUES, **changes})


def _users(limit: str | None, path: str = wl.USERS_PATH) -> str:
    return path if limit is None else f"{path}?{urlencode({'limit': limit})}"


def _limit_cases(path: str) -> list[Case]:
    """The `limit` battery of users and users-posts (1..10000, required, an integer)."""
    return [
        Case("limit missing", "GET", _users(None, path)),
        Case("limit empty", "GET", _users("", path)),
        Case("limit not a number", "GET", _users("abc", path)),
        Case("limit negative", "GET", _users("-5", path)),
        Case("limit zero", "GET", _users("0", path)),
        Case("limit above 10000", "GET", _users("10001", path)),
        Case("limit huge", "GET", _users("99999999999999999999", path)),
        Case("limit fractional", "GET", _users("2.5", path)),
        Case("limit SQL-shaped", "GET", _users(INJECTION_DROP, path)),
        Case("limit pg_sleep-shaped", "GET", _users(INJECTION_SLEEP, path)),
    ]


_MISSING = object()


def _json_fields(valid: dict[str, object], changes: dict[str, object]) -> bytes:
    """A JSON body: the valid fields with `changes` applied (a value of _MISSING leaves the field out)."""
    fields = {**valid, **changes}
    return json.dumps({key: value for key, value in fields.items() if value is not _MISSING}).encode()


def _body_case(workload: str, path: str, body: bytes | str, content_type: str | None, what: str,
               expect: Expect = "400") -> Case:
    data = body.encode() if isinstance(body, str) else body
    return Case(f"{workload}: {what}", "POST", path, data, content_type, expect)


def _tx(body: bytes | str, content_type: str | None = wl.JSON_CONTENT_TYPE, what: str = "") -> Case:
    return _body_case("tx", wl.TX_PATH, body, content_type, what)


def _tx_fields(**changes: object) -> bytes:
    return _json_fields({"aid": 1, "tid": 1, "bid": 1, "delta": 1}, changes)


def _post(body: bytes | str, content_type: str | None = wl.JSON_CONTENT_TYPE, what: str = "",
          expect: Expect = "400") -> Case:
    return _body_case("perf-post", wl.PERF_POST_PATH, body, content_type, what, expect)


def _post_fields(**changes: object) -> bytes:
    return _json_fields({"_records": 1, "_payload": {"a": 1}}, changes)


def _nested(records: str | None = "1", depth: str | None = "1") -> str:
    return _query(wl.PERF_NESTED_PATH, _records=records, _depth=depth)


def _large(size_kb: str | None) -> str:
    return _query(wl.PERF_LARGE_PAYLOAD_PATH, _size_kb=size_kb)


def _many(**changes: str | None) -> str:
    return _query(wl.PERF_MANY_PARAMS_PATH, **{**wl.SEED_MANY_PARAMS, **changes})


def _graphql(body: bytes | str, what: str, content_type: str = wl.JSON_CONTENT_TYPE,
             workload: str = wl.GRAPHQL) -> Case:
    return _body_case(workload, wl.GRAPHQL_PATH, body, content_type, what, "graphql-error")


def _graphql_nested(query: str, what: str) -> Case:
    return _graphql(json.dumps({"query": query}), what, workload=wl.GRAPHQL_NESTED)


CASES: dict[str, list[Case]] = {
    wl.PERF_TEST: [
        Case("_records missing", "GET", _perf(_records=None)),
        Case("_records empty", "GET", _perf(_records="")),
        Case("_records not a number", "GET", _perf(_records="abc")),
        Case("_records negative", "GET", _perf(_records="-1")),
        Case("_records zero", "GET", _perf(_records="0")),
        Case("_records above 1000", "GET", _perf(_records="1001")),
        Case("_records huge", "GET", _perf(_records="99999999999999999999")),
        Case("_records fractional", "GET", _perf(_records="1.5")),
        Case("_records SQL-shaped", "GET", _perf(_records=INJECTION_DROP)),
        Case("_int out of range", "GET", _perf(_int="2147483648")),
        Case("_bigint not a number", "GET", _perf(_bigint="12x")),
        Case("_date malformed", "GET", _perf(_date="2024-13-45")),
        Case("_timestamptz malformed", "GET", _perf(_timestamptz="yesterday at noon")),
        Case("_uuid malformed", "GET", _perf(_uuid="not-a-uuid")),
        Case("_json malformed", "GET", _perf(_json="{bad json")),
        Case("_int_array malformed", "GET", _perf(_int_array="{1,2")),
        Case("_text_array malformed", "GET", _perf(_text_array="{a,b")),
        Case("_text of 10,000 characters", "GET", _perf(_text="x" * 10_000)),
        Case("_uuid missing", "GET", _perf(_uuid=None)),
        Case("_text SQL-shaped (must be echoed)", "GET", _perf(_text=INJECTION_SLEEP), expect="echo"),
    ],
    wl.USERS: _limit_cases(wl.USERS_PATH),
    wl.USERS_POSTS: _limit_cases(wl.USERS_POSTS_PATH),
    wl.GRAPHQL_NESTED: [
        _graphql_nested(wl.GRAPHQL_NESTED_QUERY % (20, 0), "posts limit zero"),
        _graphql_nested(wl.GRAPHQL_NESTED_QUERY % (20, 101), "posts limit above 100"),
        _graphql_nested(wl.GRAPHQL_NESTED_QUERY % (0, 5), "users limit zero"),
        _graphql_nested("{ users(limit: 5) { id posts { id } } }", "posts limit missing"),
        _graphql_nested('{ users(limit: 5) { id posts(limit: "x") { id } } }', "posts limit a string"),
        _graphql_nested("{ users(limit: 5) { id posts(limit: 5) { nope } } }", "unknown post field"),
        _graphql("{", "malformed JSON", workload=wl.GRAPHQL_NESTED),
    ],
    wl.STATIC: [],
    wl.TX: [
        _tx(_tx_fields(aid=_MISSING), what="aid missing"),
        _tx(_tx_fields(delta=_MISSING), what="delta missing"),
        _tx(_tx_fields(aid="5"), what="aid as a string"),
        _tx(_tx_fields(tid=1.5), what="tid fractional"),
        _tx(_tx_fields(bid=None), what="bid null"),
        _tx(_tx_fields(delta=True), what="delta boolean"),
        _tx(_tx_fields(aid=0), what="aid zero"),
        _tx(_tx_fields(aid=1_000_001), what="aid above range"),
        _tx(_tx_fields(tid=101), what="tid above range"),
        _tx(_tx_fields(bid=11), what="bid above range"),
        _tx(_tx_fields(delta=5001), what="delta above range"),
        _tx(_tx_fields(aid=99999999999999999999), what="aid huge"),
        _tx(_tx_fields(aid=INJECTION_DROP), what="aid SQL-shaped"),
        _tx("{", what="malformed JSON"),
        _tx("", what="empty body"),
        _tx("[1, 1, 1, 1]", what="a JSON array"),
        _tx(_tx_fields(), content_type="text/plain", what="wrong content type"),
    ],
    wl.GRAPHQL: [
        _graphql(wl.graphql_body(0), "limit zero"),
        _graphql(wl.graphql_body(10001), "limit above 10000"),
        _graphql(json.dumps({"query": '{ users(limit: "abc") { id } }'}), "limit a string"),
        _graphql(json.dumps({"query": "{ users { id } }"}), "limit missing"),
        _graphql(json.dumps({"query": "{ users(limit: 5) { nope } }"}), "unknown field"),
        _graphql("{", "malformed JSON"),
    ],
    wl.PERF_MINIMAL: [],
    wl.PERF_POST: [
        _post(_post_fields(), content_type="text/plain", what="wrong content type"),
        _post(_post_fields(), content_type=None, what="no content type"),
        _post("{", what="malformed JSON"),
        _post("", what="empty body"),
        _post("[1, 2]", what="a JSON array"),
        _post(_post_fields(_records=_MISSING), what="_records missing"),
        _post(_post_fields(_records="5"), what="_records as a string"),
        _post(_post_fields(_records=1.5), what="_records fractional"),
        _post(_post_fields(_records=True), what="_records boolean"),
        _post(_post_fields(_records=None), what="_records null"),
        _post(_post_fields(_records=0), what="_records zero"),
        _post(_post_fields(_records=1001), what="_records above 1000"),
        _post(_post_fields(_records=99999999999999999999), what="_records huge"),
        _post(_post_fields(_payload=_MISSING), what="_payload missing"),
        _post(_post_fields(_payload=None), what="_payload null"),
        _post(_post_fields(_payload=[1, 2]), what="_payload an array"),
        _post(_post_fields(_payload="text"), what="_payload a string"),
        _post(_post_fields(_payload={"q": INJECTION_SLEEP}), what="SQL-shaped text in the payload (must be echoed)",
              expect="echo"),
    ],
    wl.PERF_NESTED: [
        Case("_records missing", "GET", _nested(records=None)),
        Case("_records not a number", "GET", _nested(records="abc")),
        Case("_records zero", "GET", _nested(records="0")),
        Case("_records above 1000", "GET", _nested(records="1001")),
        Case("_records fractional", "GET", _nested(records="1.5")),
        Case("_records huge", "GET", _nested(records="99999999999999999999")),
        Case("_depth missing", "GET", _nested(depth=None)),
        Case("_depth zero", "GET", _nested(depth="0")),
        Case("_depth above 3", "GET", _nested(depth="4")),
        Case("_depth not a number", "GET", _nested(depth="deep")),
    ],
    wl.PERF_LARGE_PAYLOAD: [
        Case("_size_kb missing", "GET", _large(None)),
        Case("_size_kb empty", "GET", _large("")),
        Case("_size_kb not a number", "GET", _large("abc")),
        Case("_size_kb zero", "GET", _large("0")),
        Case("_size_kb negative", "GET", _large("-1")),
        Case("_size_kb above 1024", "GET", _large("1025")),
        Case("_size_kb fractional", "GET", _large("1.5")),
        Case("_size_kb huge", "GET", _large("99999999999999999999")),
    ],
    wl.PERF_MANY_PARAMS: [
        Case("_p2 (int) not a number", "GET", _many(_p2="abc")),
        Case("_p3 (bool) not a boolean", "GET", _many(_p3="maybe")),
        Case("_p4 (numeric) not a number", "GET", _many(_p4="x")),
        Case("_p7 (int) out of range", "GET", _many(_p7="2147483648")),
        Case("_p1 SQL-shaped (must be bound)", "GET", _many(_p1=INJECTION_SLEEP), expect="echo"),
    ],
}
"""Every workload's hostile requests (docs/verification.md lists them)."""


def bad_input_problem(status: int, is_json: bool, content_type: str | None, text: str) -> str:
    """What is wrong with the answer to a malformed request, in the contract's words (it must be 400 with a
    JSON body): a success (200 for a request that cannot be served: often a database error answered as
    success), a server error, or a 400 whose body is not JSON."""
    shown = " ".join(text.split())[:100] or "(empty body)"
    if 200 <= status < 300:
        return f"HTTP {status} (success) for a malformed request, expected 400 with a JSON error: {shown}"
    if status >= 500:
        return f"HTTP {status} (server error) for a malformed request, expected 400 with a JSON error: {shown}"
    if status == 400:
        what = "not JSON" if not is_json else f"Content-Type {content_type or 'missing'}, not application/json"
        return f"HTTP 400 but its body is {what}: {shown}"
    return f"HTTP {status}, expected 400 with a JSON error: {shown}"


def _judge(case: Case, response: httpx.Response, elapsed_s: float, workload: str = "",
           answer: AnswerShape | None = None) -> str | None:
    """None if the answer is the robust one, else what was wrong. An "echo" answer is rows: the stack's
    declared answer shape (`answer`) is undone first; error answers are judged as sent."""
    try:
        body, is_json = parse_json(response.content), True
    except ValueError:
        body, is_json = None, False
    json_ok = is_json and wl.is_json_content_type(response.headers.get("content-type"), graphql=True)
    if case.expect == "400":
        if response.status_code == 400 and json_ok:
            return None
        return bad_input_problem(response.status_code, is_json, response.headers.get("content-type"),
                                 response.text)
    if case.expect == "graphql-error":
        no_users = not (isinstance(body, dict) and isinstance(body.get("data"), dict) and body["data"].get("users"))
        if response.status_code in (200, 400) and isinstance(body, dict) and body.get("errors") and no_users:
            return None
        if response.status_code == 400 and json_ok and no_users:  # GraphQL over HTTP: unparseable request
            return None
        return f"HTTP {response.status_code}, expected a GraphQL error: {response.text[:100]}"
    if elapsed_s > SLOW_ANSWER_S:
        return f"answered after {elapsed_s:.1f} s: the string ran as SQL"
    if answer is not None and body is not None:
        try:
            body = answer.unwrap(workload, body)
        except AnswerShapeError as exc:
            return f"HTTP {response.status_code}, {exc}"
    rows_ok = isinstance(body, list) and body and isinstance(body[0], dict)
    if response.status_code == 200 and rows_ok and _echoed(case.path, body[0]):
        return None
    return f"HTTP {response.status_code}, expected 200 echoing the text: {response.text[:100]}"


def _echoed(path: str, row: dict) -> bool:
    """The injection-shaped text came back as data: perf-test's text_val, perf-post's echo, or (perf-many-params,
    whose answer is a checksum) a complete answer."""
    if path.startswith(wl.PERF_POST_PATH):
        return isinstance(row.get("echo"), dict) and row["echo"].get("q") == INJECTION_SLEEP
    if path.startswith(wl.PERF_MANY_PARAMS_PATH):
        return row.get("param_count") == 20 and isinstance(row.get("checksum"), str)
    return str(row.get("text_val", "")).startswith(INJECTION_SLEEP)


def run_battery(client: httpx.Client, workload: str,
                answer: AnswerShape | None = None) -> tuple[list[BadInputCase], int]:
    """Send every case of `workload`; return the verdicts and how many answers were 200 (tx writes).
    `answer`: the stack's declared answer shape, undone in the answers that must echo rows."""
    results, answered_200 = [], 0
    for case in CASES[workload]:
        started = time.monotonic()
        try:
            response = http.send(client, wl.Request(case.method, case.path, case.body, case.content_type))
        except httpx.HTTPError as exc:
            results.append(BadInputCase(description=case.description, path=case.path, status=None, ok=False,
                                        detail=f"{type(exc).__name__}: {exc}"))
            continue
        answered_200 += response.status_code == 200
        problem = _judge(case, response, time.monotonic() - started, workload, answer)
        results.append(BadInputCase(description=case.description, path=case.path[:200],
                                    status=response.status_code, ok=problem is None, detail=problem))
    return results, answered_200
