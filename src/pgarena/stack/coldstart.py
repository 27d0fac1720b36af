"""A stack's cold start: process start → first correct answer, and the latency of its first requests.

Right after the health path first answers, pgarena sends `count` sequential requests of the stack's first
read workload (perf-test, users, static or graphql — never tx, which writes) and times each one. JIT
runtimes, lazy connection pools and first-use compilation show up here and nowhere else: the load cells
start only after a warm-up (TechEmpower issue #4861 asked for exactly these figures).
"""

from __future__ import annotations

import time

import httpx

from pgarena.contract import workloads as wl
from pgarena.contract.answer import AnswerShape
from pgarena.results.models import ColdStart
from pgarena.verify import http
from pgarena.verify.checks import answer_ok

READ_WORKLOADS = (wl.PERF_TEST, wl.USERS, wl.STATIC, wl.GRAPHQL, wl.PERF_MINIMAL, wl.PERF_NESTED,
                  wl.PERF_LARGE_PAYLOAD, wl.PERF_MANY_PARAMS, wl.USERS_POSTS, wl.GRAPHQL_NESTED)


def cold_start_workload(workloads: list[str]) -> str | None:
    """The first read workload of the run that the stack serves, or None."""
    return next((w for w in workloads if w in READ_WORKLOADS), None)


def measure_cold_start(base_url: str, *, workload: str, parameter: int | None, healthy_seconds: float,
                       healthy_at: float, count: int, timeout_s: float, routes: dict[str, str],
                       answer: AnswerShape | None = None) -> ColdStart:
    """Time `count` sequential requests sent straight after the stack became healthy (a correct answer: status
    200 and the expected rows, in the stack's declared `answer` shape).

    `healthy_at` is the time.monotonic() reading when the health answer arrived and `healthy_seconds` the
    seconds from process start to it; the first correct answer's end is expressed from process start.
    """
    request = wl.load_request(workload, parameter)
    expected = wl.expected_rows(workload, parameter)
    latencies: list[float] = []
    failed = 0
    first_correct: float | None = None
    with http.http_client(base_url, timeout_s, routes) as client:
        for _ in range(count):
            started = time.monotonic()
            try:
                ok = answer_ok(http.send(client, request), workload, expected, answer)
            except httpx.HTTPError:
                ok = False
            ended = time.monotonic()
            latencies.append(round((ended - started) * 1000, 3))
            if ok and first_correct is None:
                first_correct = healthy_seconds + (ended - healthy_at)
            failed += not ok
    return ColdStart(healthy_seconds=round(healthy_seconds, 3),
                     first_correct_seconds=round(first_correct, 3) if first_correct is not None else None,
                     request=f"{request.method} {wl.routed(request.path, routes)}", first_requests_ms=latencies,
                     failed=failed)
