"""Verification of issue 13's nested list: graphql-nested and its REST twin users-posts.

Each answer must hold the first `limit` users by id with, for each, its first posts by id — values from
PostgreSQL's own JSON (db.expected.expected_users_posts). Besides the load request (20 users × 5 posts) a
second case with other limits (3 users; GraphQL also 2 posts each) catches a stack that answers a fixed
document. How many statements a request costs is measured separately (accounting.measure_nested): the
answer is right whether a stack batches or not.
"""

from __future__ import annotations

import httpx

from pgarena.contract import workloads as wl
from pgarena.contract.answer import AnswerShape
from pgarena.contract.values import json_kind, not_json, parse_json
from pgarena.db.expected import expected_users_posts
from pgarena.db.postgres import Database
from pgarena.results.models import Check, WorkloadVerification
from pgarena.verify.rows import ColumnTally, answer_body, content_checks
from pgarena.verify.rows import send as send_request

VARIED_LIMIT = 3
VARIED_POSTS_LIMIT = 2


def cases(workload: str) -> list[tuple[wl.Request, int, int, str]]:
    """(request, users limit, posts limit, case name) of one nested workload's verification."""
    if workload == wl.GRAPHQL_NESTED:
        return [(wl.graphql_nested_request(), wl.NESTED_LIMIT, wl.NESTED_POSTS_LIMIT,
                 f"users(limit: {wl.NESTED_LIMIT}) posts(limit: {wl.NESTED_POSTS_LIMIT})"),
                (wl.graphql_nested_request(VARIED_LIMIT, VARIED_POSTS_LIMIT), VARIED_LIMIT, VARIED_POSTS_LIMIT,
                 f"users(limit: {VARIED_LIMIT}) posts(limit: {VARIED_POSTS_LIMIT})")]
    return [(wl.users_posts_request(limit), limit, wl.NESTED_POSTS_LIMIT, f"limit {limit}")
            for limit in (wl.NESTED_LIMIT, VARIED_LIMIT)]


def users_of(body: object, workload: str) -> object:
    """The list of users in a parsed answer (GraphQL: data.users); raises KeyError/TypeError if absent."""
    return body["data"]["users"] if wl.is_graphql(workload) else body  # type: ignore[index]


def verify_nested(client: httpx.Client, db: Database, workload: str,
                  answer: AnswerShape | None = None) -> WorkloadVerification:
    """Both cases of one nested workload, users and their posts value by value (users-posts: after undoing the
    stack's declared answer shape, `answer`; GraphQL's own envelope is its contract)."""
    checks: list[Check] = []
    tally = ColumnTally(wl.NESTED_COLUMNS)
    graphql = wl.is_graphql(workload)
    for request, limit, posts_limit, case in cases(workload):
        response = send_request(client, request)
        if isinstance(response, str):
            checks.append(Check(name=f"{case}: answer", ok=False, detail=response))
            continue
        checks.append(Check(name=f"{case}: status 200", ok=response.status_code == 200,
                            detail=str(response.status_code)))
        checks.extend(content_checks(response, case, graphql=graphql))
        if graphql:
            try:
                users = users_of(parse_json(response.content), workload)
            except (ValueError, KeyError, TypeError) as exc:
                checks.append(Check(name=f"{case}: data.users", ok=False,
                                    detail=(not_json(exc) if isinstance(exc, ValueError) else "no data.users member")
                                    + f": {response.text[:200]}"))
                continue
        else:
            parsed, users = answer_body(response, workload, answer, case, checks)
            if not parsed:
                continue
        if not isinstance(users, list):
            checks.append(Check(name=f"{case}: a JSON array", ok=False, detail=f"got {json_kind(users)}"))
            continue
        expected = expected_users_posts(db, limit, posts_limit)
        checks.append(Check(name=f"{case}: {len(expected)} users", ok=len(users) == len(expected),
                            detail=f"got {len(users)}"))
        tally.add(expected, users, case)
    return WorkloadVerification(stack="", workload=workload, ok=all(c.ok for c in checks), checks=checks,
                                columns=tally.verdicts())
