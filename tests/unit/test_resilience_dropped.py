"""Issue 22 item 8: resilience figures count dropped iterations, and the report says each rank rests on
one fault window per stack.

A stack that hangs during a fault holds every connection, so k6's open model cannot start the iterations
due meanwhile (`dropped_iterations`); a stack that answers 503 at once fails them. Before, only the 503s
counted, so the hung stack showed fewer failures.
"""

from __future__ import annotations

import json

from pgarena.analysis.recovery import recovery
from pgarena.load.timeline import bin_requests, read_k6_timeline
from pgarena.report.resilience import ONE_WINDOW_NOTE, payload, section
from pgarena.results.models import FaultResult
from tests.unit.test_compare import make_cell, make_run
from tests.unit.test_rest_graphql import ranked
from tests.unit.test_timeline import K6_METRIC_LINE, ORIGIN, k6_file, k6_point

RATE_PER_BIN = 10  # 100 req/s in 100 ms bins
FAULT = (7.0, 10.0)


def _dropped_point(time: str) -> str:
    """One `dropped_iterations` line of k6's JSON output, as k6 1.1.0 writes it."""
    return json.dumps({"metric": "dropped_iterations", "type": "Point",
                       "data": {"time": time, "value": 1, "tags": {"scenario": "load"}}})


def test_k6_dropped_iterations_are_read_into_their_own_series(tmp_path):
    path = k6_file(tmp_path / "out.json.gz", [
        K6_METRIC_LINE, k6_point("2026-11-23T17:05:00.05Z", "200"),
        _dropped_point("2026-11-23T17:05:00.15Z"), _dropped_point("2026-11-23T17:05:00.16Z")])
    t = read_k6_timeline(path, origin_unix_s=ORIGIN, duration_s=0.3)
    assert t.dropped == (0, 2, 0) and t.failed() == [0, 2, 0]


def _window(during: str):
    """15 s at 100 req/s, a 3 s fault from 7 s: the stack either hangs (no answer: the due requests are
    dropped, ten in flight time out) or answers 503 at once."""
    events = []
    for k in range(150):
        t = ORIGIN + k * 0.1 + 0.05
        if not FAULT[0] <= k * 0.1 < FAULT[1]:
            events += [(t, "ok_2xx")] * RATE_PER_BIN
        elif during == "503":
            events += [(t, "non_2xx")] * RATE_PER_BIN
        else:
            events += [(t, "dropped")] * RATE_PER_BIN
    if during == "hang":
        events += [(ORIGIN + FAULT[0] + 1.0, "timeout")] * 10  # the requests in flight when it hung
    timeline = bin_requests(events, origin_unix_s=ORIGIN, duration_s=15.0, records_unanswered=True, engine="k6")
    return recovery(timeline, *FAULT)


def test_a_hung_stack_fails_as_many_requests_as_one_answering_503():
    hung, refusing = _window("hang"), _window("503")
    assert refusing.failed_requests == 300
    assert hung.errors_by_kind["dropped"] == 300 and hung.failed_requests == 310  # before: 10
    assert hung.unanswered == 10  # dropped requests were never sent: their outcome is known


def _fault(stack: str, after: float, failed: int, dropped: int = 0) -> FaultResult:
    return FaultResult(stack=stack, workload="users", parameter=20, fault="stall", description="SIGSTOP 3 s",
                       engine="k6", rate_rps=100, peak_rps=200, status="recovered", recovered_after_s=after,
                       failed_requests=failed, errors_by_kind={"dropped": dropped}, first_ok_after_s=0.1,
                       recovered_without_restart=True, fault_start_s=7.0, fault_end_s=10.0)


def test_the_report_says_the_rank_rests_on_one_window_and_shows_the_dropped():
    run = make_run("r", [ranked(make_cell("a", [100, 101, 99]))]).model_copy(update={"resilience": [
        _fault("hung", 0.4, 310, dropped=300), _fault("refusing", 0.3, 300)]})
    text = section(run)
    assert "one fault window per stack" in text and ONE_WINDOW_NOTE in text
    assert "310 (300 never sent)" in text
    assert payload(run)["note"] == ONE_WINDOW_NOTE
