"""Checks during load: a sample of answers inside every measured window is compared whole.

Beside either engine (oha and k6 alike) a pgarena thread sends one request every SAMPLE_INTERVAL_S
during the window, cycling through the cell's variants (variants.py), with exactly the headers the
generator sends (Engine.request_headers), so a stack cannot tell the sampler from the load. It only
records each answer; after the window every recorded answer is judged whole by answers.judge_answer
against the expected answer computed before the load, so judging costs the measured stack nothing.
Each repetition records checks_total / checks_failed; a cell whose failed checks show a failure rate
above 1 % (the one-sided exact binomial test at level 1 %, load/summary.py) is invalid. Every request's status is checked by the generator itself.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Collection
from dataclasses import dataclass

import httpx

from pgarena.contract import workloads as wl
from pgarena.contract.answer import AnswerShape, AnswerShapeError
from pgarena.contract.values import parse_json
from pgarena.verify import http
from pgarena.verify.answers import judge_answer
from pgarena.verify.variants import Variant

SAMPLE_INTERVAL_S = 0.25
"""pgarena's sampler sends one request this often during the window."""


def rows_in(body: object, workload: str, answer: AnswerShape | None = None) -> int | None:
    """How many rows an answer holds (GraphQL: data.users; a stack's declared `answer` shape undone first)."""
    if answer is not None:
        try:
            body = answer.unwrap(workload, body)
        except AnswerShapeError:
            return None
    if wl.is_graphql(workload):
        try:
            body = body["data"]["users"]  # type: ignore[index]
        except (KeyError, TypeError):
            return None
    return len(body) if isinstance(body, list) else None


def answer_ok(response: httpx.Response, workload: str, expected_rows: int | None,
              answer: AnswerShape | None = None) -> bool:
    """A plausible answer (cold start): status 200 and, where rows are expected, that many rows (in the
    stack's declared `answer` shape)."""
    if response.status_code != 200:
        return False
    if expected_rows is None:
        return True
    try:
        return rows_in(parse_json(response.content), workload, answer) == expected_rows
    except ValueError:
        return False


def bare_client(base_url: str, timeout_s: float, routes: dict[str, str]) -> httpx.Client:
    """A client without httpx's default headers (Accept, Accept-Encoding, Connection, User-Agent)."""
    client = http.http_client(base_url, timeout_s, routes)
    for name in list(client.headers.keys()):
        del client.headers[name]
    return client


def fill_headers(template: list[tuple[str, str | None]], netloc: str, body: bytes | None) -> list[tuple[str, str]]:
    """A request's headers from an engine's template (Engine.request_headers): Host is `netloc`,
    Content-Length the body's length and left out without a body."""
    headers = []
    for name, value in template:
        if name.lower() == "host":
            headers.append((name, netloc))
        elif name.lower() == "content-length":
            if body is not None:
                headers.append((name, str(len(body))))
        elif value is not None:
            headers.append((name, value))
    return headers


@dataclass(frozen=True)
class Sample:
    """One recorded answer (status None: the request failed at the HTTP level)."""

    variant: Variant
    status: int | None
    content_type: str | None
    body: bytes
    sent_ms: float
    received_ms: float
    error: str | None = None


class AnswerSampler:
    """Records answers in a background thread for the duration of a `with` block (bounded by it), then
    judges them whole. `reuse=False` sends each variant at most once (tx: every body changes a balance)."""

    def __init__(self, base_url: str, workload: str, variants: list[Variant],
                 headers: list[tuple[str, str | None]], timeout_s: float, routes: dict[str, str] | None = None, *,
                 reuse: bool = True, known_wrong: Collection[str] = (), answer: AnswerShape | None = None):
        self._client = bare_client(base_url, timeout_s, routes or {})
        self._headers = headers
        self._netloc = httpx.URL(base_url).netloc.decode()
        self._workload = workload
        self._variants = variants
        self._reuse = reuse
        self._known_wrong = frozenset(known_wrong)
        """Columns verification already judged ❌ (answers.judge_rows): not judged again."""
        self._answer = answer
        """The stack's declared answer shape (stack.toml `[answer]`), undone before every answer is judged."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="pgarena-checks", daemon=True)
        self.samples: list[Sample] = []

    def send(self, variant: Variant) -> Sample:
        """Send one variant now and record its answer (not judged yet)."""
        request = variant.request
        sent = time.time() * 1000
        try:
            response = self._client.request(request.method, request.path, content=request.body,
                                            headers=fill_headers(self._headers, self._netloc, request.body))
        except httpx.HTTPError as exc:
            return Sample(variant, None, None, b"", sent, time.time() * 1000, f"{type(exc).__name__}: {exc}")
        return Sample(variant, response.status_code, response.headers.get("content-type"), response.content, sent,
                      time.time() * 1000)

    def _loop(self) -> None:
        index = 0
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            if index >= len(self._variants) and not self._reuse:
                return
            self.samples.append(self.send(self._variants[index % len(self._variants)]))
            index += 1

    def __enter__(self) -> AnswerSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.close()

    def close(self) -> None:
        """Close the sampler's HTTP client."""
        self._client.close()

    @property
    def answered_2xx(self) -> int:
        """Sampled requests answered with a 2xx status (they reached the stack like any other)."""
        return sum(1 for s in self.samples if s.status is not None and 200 <= s.status < 300)

    @property
    def unknown(self) -> int:
        """Sampled requests whose effect on the database is unknown (HTTP errors, non-2xx)."""
        return len(self.samples) - self.answered_2xx

    def judge(self) -> tuple[int, int, str | None]:
        """(checked, failed, first failure: reason and request) over the recorded answers."""
        failed, first = 0, None
        for sample in self.samples:
            reason = sample.error or judge_answer(
                self._workload, sample.variant.expected, status=sample.status or 0, content_type=sample.content_type,
                body=sample.body, sent_ms=sample.sent_ms, received_ms=sample.received_ms, known_wrong=self._known_wrong,
                answer=self._answer)
            if reason is not None:
                failed += 1
                if first is None:
                    request = sample.variant.request
                    first = f"{reason} — {request.method} {request.path}"[:400]
        return len(self.samples), failed, first


def check_variants(base_url: str, workload: str, variants: list[Variant], headers: list[tuple[str, str | None]],
                   timeout_s: float, routes: dict[str, str] | None = None,
                   known_wrong: Collection[str] = (), answer: AnswerShape | None = None) -> tuple[int, str | None]:
    """Send every variant once, one at a time, before the load and judge each answer whole:
    (wrong answers, the first one's reason and request)."""
    sampler = AnswerSampler(base_url, workload, variants, headers, timeout_s, routes, known_wrong=known_wrong,
                            answer=answer)
    try:
        sampler.samples = [sampler.send(variant) for variant in variants]
    finally:
        sampler.close()
    _, failed, first = sampler.judge()
    return failed, first
