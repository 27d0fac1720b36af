"""Issue 22 item 7: an open-model window's dropped requests count in the latency, at the timeout.

Near saturation a stack that drops requests (oha: not sent or not finished by the window's end; k6:
`dropped_iterations`) showed only its answered requests' p99, so it ranked ahead of a stack that answered
every request late. Each dropped request now counts like one without an answer: at the timeout, last.
"""

from __future__ import annotations

import pytest

from pgarena.load.engines.k6 import parse_k6_summary
from pgarena.load.engines.latency import fold_dropped, from_durations
from pgarena.load.engines.oha import parse_oha_json
from pgarena.load.merge import PlaceOutput, merge
from tests.unit.test_engines import fixture
from tests.unit.test_merge import _counts as counts

TIMEOUT_S = 10.0


def _oha(answered: int) -> dict:
    """oha's JSON of a window with `answered` 200 answers (the durations come from its per-request file)."""
    data = fixture("oha_ok")
    data["statusCodeDistribution"] = {"200": answered}
    data["errorDistribution"] = {}
    return data


def test_oha_a_stack_that_drops_no_longer_beats_one_that_answers_late():
    # both offered 1,000 requests: "late" answered all, ten of them at 900 ms; "drops" answered 990 and
    # dropped ten (1 %, the most a valid cell may drop)
    late = parse_oha_json(_oha(1000), timeout_s=TIMEOUT_S, durations_ms=[10.0] * 990 + [900.0] * 10, offered=1000)
    drops = parse_oha_json(_oha(990), timeout_s=TIMEOUT_S, durations_ms=[10.0] * 990, offered=1000)
    assert late.latency.p99_ms == pytest.approx(18.9)
    assert drops.latency.p99_ms > late.latency.p99_ms  # before: 10 ms, ranked first
    assert drops.latency.p99_ms == pytest.approx(10 + 0.01 * (TIMEOUT_S * 1000 - 10))
    assert "p99_ms" in drops.latency.censored and "p50_ms" not in drops.latency.censored
    assert drops.requests == 990  # the dropped ones stay out of the request count (reported as dropped)


def test_oha_closed_model_has_nothing_to_fold():
    out = parse_oha_json(_oha(990), timeout_s=TIMEOUT_S, durations_ms=[10.0] * 990)
    assert out.latency.p99_ms == 10.0 and out.latency.censored == []


def _k6(dropped: int) -> dict:
    data = fixture("k6_ok")
    values = data["metrics"]["http_req_duration"]["values"]
    values.update({"p(99.5)": 4.0, "p(99.9)": 5.0, "p(99.99)": 6.0})
    data["metrics"]["pgarena_latency"] = {"type": "trend", "contains": "time", "values": dict(values)}
    if dropped:
        data["metrics"]["dropped_iterations"] = {"type": "counter", "contains": "default",
                                                 "values": {"count": dropped, "rate": 1.0}}
    return data


def test_k6_dropped_iterations_count_in_the_latency_at_the_timeout():
    kept = parse_k6_summary(_k6(0), timeout_s=TIMEOUT_S)
    answered = kept.requests
    dropped = parse_k6_summary(_k6(max(1, answered // 200)), timeout_s=TIMEOUT_S)  # 0.5 %
    assert dropped.dropped == max(1, answered // 200)
    assert dropped.latency.p99_ms > kept.latency.p99_ms  # before: equal, the drops left out
    assert 3.9 < dropped.latency.p99_ms <= 4.0  # about p99.5 of the answered requests (0.49 % dropped)
    assert dropped.latency.max_ms == TIMEOUT_S * 1000 and "max_ms" in dropped.latency.censored
    assert kept.latency.p50_ms <= dropped.latency.p50_ms < 1.01 * kept.latency.p50_ms  # moved by 0.25 % in rank


def test_fold_comes_close_to_the_exact_distribution():
    answered = [float(i) for i in range(1, 1001)]
    exact = from_durations(answered, 30, 5000.0)
    base = from_durations(answered, 0, 5000.0)
    listed = {0.5: base.p50_ms, 0.9: base.p90_ms, 0.95: base.p95_ms, 0.99: base.p99_ms, 1.0: base.max_ms}
    folded = fold_dropped(base, listed, counted=1000, responses=1000, unanswered=0, dropped=30, timeout_ms=5000.0)
    assert folded.p99_ms == exact.p99_ms == 5000.0  # 3 % dropped: p99 reads dropped requests only
    assert folded.avg_ms == pytest.approx(exact.avg_ms)
    for name in ("p50_ms", "p90_ms", "p95_ms"):  # interpolated between listed quantiles of a uniform spread
        assert getattr(folded, name) == pytest.approx(getattr(exact, name), rel=0.002)
    assert set(folded.censored) == set(exact.censored)


def test_merged_generators_fold_their_dropped_iterations():
    parts = [PlaceOutput(f"g{i}", counts(answered=99, dropped=1), [10.0] * 99) for i in range(2)]
    assert merge(parts).outcome.latency.p99_ms == 10.0
    folded = merge(parts, timeout_ms=TIMEOUT_S * 1000).outcome.latency
    assert folded.p99_ms > 10.0 and "p99_ms" in folded.censored
