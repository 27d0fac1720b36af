"""Checks during load: a sample of answers inside the measured window is verified.

k6 checks its own sample in the script (every CHECK_EVERY-th iteration of each VU reads the body and
counts the rows). oha cannot inspect bodies, so pgarena samples beside it: a thread sends one request
every SAMPLE_INTERVAL_S during the window and checks status and row count. Both record
checks_total / checks_failed per repetition; a cell with more than 1 % failed checks is invalid.
Every request's status is checked by the generator itself in both cases.
"""

from __future__ import annotations

import threading

import httpx

from pgarena import workloads as wl
from pgarena.values import parse_json

CHECK_EVERY = 50
"""k6: check one iteration in this many, per VU."""
SAMPLE_INTERVAL_S = 0.25
"""oha: pgarena's sampler sends one request this often during the window."""


def rows_in(body: object, workload: str) -> int | None:
    """How many rows an answer holds (GraphQL: data.users)."""
    if workload == wl.GRAPHQL:
        try:
            body = body["data"]["users"]  # type: ignore[index]
        except (KeyError, TypeError):
            return None
    return len(body) if isinstance(body, list) else None


def answer_ok(response: httpx.Response, workload: str, expected_rows: int | None) -> bool:
    """A correct answer under load: status 200 and, where rows are expected, that many rows."""
    if response.status_code != 200:
        return False
    if expected_rows is None:
        return True
    try:
        return rows_in(parse_json(response.content), workload) == expected_rows
    except ValueError:
        return False


class AnswerSampler:
    """Samples answers in a background thread for the duration of a `with` block (bounded by it)."""

    def __init__(self, base_url: str, request: wl.Request, workload: str, expected_rows: int, timeout_s: float,
                 routes: dict[str, str] | None = None):
        self._client = wl.http_client(base_url, timeout_s, routes or {})
        self._request = request
        self._workload = workload
        self._expected = expected_rows
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="pgarena-checks", daemon=True)
        self.total = 0
        self.failed = 0

    def _check_once(self) -> bool:
        try:
            return answer_ok(wl.send(self._client, self._request), self._workload, self._expected)
        except httpx.HTTPError:
            return False

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            ok = self._check_once()
            self.total += 1
            self.failed += not ok

    def __enter__(self) -> AnswerSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._client.close()
