"""Issue 22 item 14: verification's messages say what a stack answered in JSON's and the contract's words, not
Python's (`a JSON array: got NoneType` for a body of `null`; "HTTP 200 without a JSON body: null")."""

from __future__ import annotations

from decimal import Decimal

import httpx
import pytest

from pgarena.contract.answer import AnswerShape, AnswerShapeError
from pgarena.contract.values import json_kind, not_json, parse_json
from pgarena.results.models import Check
from pgarena.verify.badinput import CASES, _judge
from pgarena.verify.rows import ColumnTally, rows_case


@pytest.mark.parametrize(("value", "words"), [
    (None, "null"), (True, "true"), (False, "false"), (7, "a number (7)"), (Decimal("1.50"), "a number (1.50)"),
    ("x", 'a string ("x")'), ([1, 2], "an array of 2"), ({"error": "x"}, 'an object ({"error"})'),
    ({}, "an empty object"),
])
def test_json_values_are_named_in_jsons_words(value, words):
    assert json_kind(value) == words


def test_a_body_that_is_not_json_says_so_and_where():
    with pytest.raises(ValueError) as info:
        parse_json(b"<html>500</html>")
    assert not_json(info.value) == "not JSON: Expecting value at line 1 column 1"


def test_a_rows_answer_of_null_is_named_null():
    """The seed's Go app answers `null` with 200 when its query failed (it never reads rows.Err())."""
    client = httpx.Client(transport=httpx.MockTransport(
        lambda request: httpx.Response(200, content=b"null\n", headers={"content-type": "application/json"})),
        base_url="http://stack")
    checks: list[Check] = []
    rows_case(client, "/api/perf-many-params?_p1=a", [{"param_count": 1}], "varied values 2", ColumnTally(["x"]),
              checks, workload="perf-many-params")
    failed = [c for c in checks if not c.ok]
    assert [(c.name, c.detail) for c in failed] == [("varied values 2: a JSON array", "got null")]


def test_a_malformed_request_answered_200_says_success_not_missing_json():
    case = CASES["perf-many-params"][0]  # _p2=abc must be 400
    problem = _judge(case, httpx.Response(200, content=b"null", headers={"content-type": "application/json"}), 0.1)
    assert problem == "HTTP 200 (success) for a malformed request, expected 400 with a JSON error: null"
    assert "without a JSON body" not in problem
    server_error = _judge(case, httpx.Response(500, text="ERROR: invalid input syntax for type integer"), 0.1)
    assert server_error.startswith("HTTP 500 (server error) for a malformed request, expected 400 with a JSON error")
    plain = _judge(case, httpx.Response(400, text="bad request"), 0.1)
    assert plain == "HTTP 400 but its body is not JSON: bad request"


def test_an_envelope_missing_names_what_came_in_jsons_words():
    with pytest.raises(AnswerShapeError, match=r"not a JSON object with a member \"data\" but an array of 0"):
        AnswerShape(envelope="data").unwrap("perf-test", [])
