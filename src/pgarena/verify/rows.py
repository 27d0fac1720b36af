"""Judging a stack's answers row by row: the column tally (worst verdict per column), content checks, one case."""

from __future__ import annotations

from typing import Any

import httpx

from pgarena.contract import workloads as wl
from pgarena.contract.answer import AnswerShape, AnswerShapeError
from pgarena.contract.values import Verdict, json_kind, judge, parse_json, worst
from pgarena.results.models import Check, ColumnVerdict
from pgarena.verify import http


class ColumnTally:
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
                current, current_reason = self.state[column]
                if worst(current, verdict) is not current or (verdict is current and current_reason is None
                                                              and reason is not None):
                    self.state[column] = (verdict, f"{case}, row {index + 1}: {reason}")

    def verdicts(self) -> list[ColumnVerdict]:
        return [
            ColumnVerdict(column=c, pg_type=self.columns[c], verdict=v, reason=r) for c, (v, r) in self.state.items()
        ]


def content_checks(response: httpx.Response, case: str, *, graphql: bool = False) -> list[Check]:
    """The answer's content is JSON, in no Content-Encoding the request did not accept."""
    content_type = response.headers.get("content-type")
    encoding = http.unrequested_encoding(response)
    return [
        Check(name=f"{case}: content type JSON", ok=wl.is_json_content_type(content_type, graphql=graphql),
              detail=content_type),
        Check(name=f"{case}: no content encoding the request did not accept", ok=encoding is None,
              detail=None if encoding is None else
              f"Content-Encoding: {encoding}, Accept-Encoding: {response.request.headers.get('accept-encoding')}"),
    ]


def send(client: httpx.Client, request: wl.Request) -> httpx.Response | str:
    """The answer, or what went wrong at the HTTP level."""
    try:
        return http.send(client, request)
    except httpx.HTTPError as exc:
        return f"no answer ({type(exc).__name__}): {exc}"


def get(client: httpx.Client, path: str) -> tuple[httpx.Response | None, str | None]:
    response = send(client, wl.Request("GET", path))
    return (None, response) if isinstance(response, str) else (response, None)


def answer_body(response: httpx.Response, workload: str, answer: AnswerShape | None, case: str,
                checks: list[Check]) -> tuple[bool, Any]:
    """(parsed, the contract's answer): the JSON body with the stack's declared `[answer]` shape undone
    (contract/answer.py). A body that is not JSON, or not in the declared shape, adds a failed check and
    gives (False, None)."""
    try:
        body = parse_json(response.content)
    except ValueError as exc:
        checks.append(Check(name=f"{case}: JSON body", ok=False, detail=str(exc)[:200]))
        return False, None
    if answer is None or not answer.applies_to(workload):
        return True, body
    try:
        return True, answer.unwrap(workload, body)
    except AnswerShapeError as exc:
        checks.append(Check(name=f"{case}: the declared answer shape ({answer.describe()})", ok=False,
                            detail=f"{exc}: {response.text[:120]}"))
        return False, None


def rows_case(client: httpx.Client, request: wl.Request | str, expected: list[dict], case: str, tally: ColumnTally,
              checks: list[Check], *, workload: str = "", answer: AnswerShape | None = None) -> None:
    """Send one request (a path: GET) and judge its answer as rows against `expected`, column by column
    (after undoing `answer`, the stack's declared shape, for `workload`)."""
    response = send(client, wl.Request("GET", request) if isinstance(request, str) else request)
    if isinstance(response, str):
        checks.append(Check(name=f"{case}: answer", ok=False, detail=response))
        return
    checks.append(Check(name=f"{case}: status 200", ok=response.status_code == 200, detail=str(response.status_code)))
    checks.extend(content_checks(response, case))
    parsed, body = answer_body(response, workload, answer, case, checks)
    if not parsed:
        return
    if not isinstance(body, list):
        checks.append(Check(name=f"{case}: a JSON array", ok=False, detail=f"got {json_kind(body)}"))
        return
    checks.append(
        Check(name=f"{case}: {len(expected)} rows", ok=len(body) == len(expected), detail=f"got {len(body)} rows")
    )
    tally.add(expected, body, case)
