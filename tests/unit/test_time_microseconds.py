"""Issue 22 item 10: every time value pgarena sends carries microseconds that no millisecond rounds to, so a
stack that cuts time values to milliseconds answers ❌ (tests/integration/test_verification.py runs one)."""

from __future__ import annotations

import datetime as dt
import re
from urllib.parse import parse_qs, urlsplit

import pytest

from pgarena.contract import workloads as wl
from pgarena.contract.values import Verdict, judge
from pgarena.verify.variants import PERF_TEST_VARIANTS, requests_for

TIME_PARAMETERS = [name for name, sql in wl.PERF_TEST_PARAMETERS if sql in ("time", "timestamp", "timestamptz")]


def _sent_requests() -> list[wl.Request]:
    """Every perf-test request pgarena sends with valid values: verification's cases and the load's variants."""
    cases = [wl.perf_test_request(1), wl.perf_test_request(3, wl.VARIED_PERF_TEST_VALUES)]
    return cases + requests_for(wl.PERF_TEST, 10) + [wl.load_request(wl.PERF_TEST, 10)]


def test_there_are_time_parameters_to_check():
    assert TIME_PARAMETERS == ["_timestamp", "_timestamptz"]
    assert len(requests_for(wl.PERF_TEST, 10)) == PERF_TEST_VARIANTS


@pytest.mark.parametrize("request_", _sent_requests(), ids=lambda r: r.path[-40:])
def test_every_time_parameter_sent_carries_microseconds_beyond_the_millisecond(request_):
    query = parse_qs(urlsplit(request_.path).query)
    for name in TIME_PARAMETERS:
        value = query[name][0]
        micros = dt.datetime.fromisoformat(value.replace("Z", "+00:00")).microsecond
        assert micros % 1000 != 0, f"{name}={value}: a millisecond cut would not change it"


def _cut_to_ms(value: str) -> str:
    return re.sub(r"(\.\d{3})\d+", r"\1", value)


def test_a_millisecond_answer_to_the_seed_request_is_wrong_on_timestamptz():
    """PostgreSQL's to_json of row 1's timestamptz_val (the seed's _timestamptz + 1 hour, UTC) against what a
    JavaScript Date makes of it."""
    sent = dt.datetime.fromisoformat(wl.SEED_PERF_TEST_VALUES["_timestamptz"].replace("Z", "+00:00"))
    expected = (sent + dt.timedelta(hours=1)).astimezone(dt.timezone.utc).isoformat()
    js_date = (sent + dt.timedelta(hours=1)).astimezone(dt.timezone.utc).isoformat(timespec="milliseconds")
    js_date = js_date.replace("+00:00", "Z")
    assert judge("timestamptz", expected, js_date)[0] is Verdict.WRONG  # before: whole seconds, ✅
    assert judge("timestamptz", expected, expected)[0] is Verdict.EXACT
    assert judge("timestamp", "2024-01-15T11:30:00.123457", _cut_to_ms("2024-01-15T11:30:00.123457"))[0] \
        is Verdict.WRONG
