"""The load-generator adapters (oha, k6) against real captured output (tests/fixtures/engines/)."""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from dataclasses import replace
from importlib import resources
from pathlib import Path

import pytest

from pgarena.load.engines import ENGINES, EngineUnavailable, LoadSpec, get_engine
from pgarena.load.engines.base import EngineOutputError
from pgarena.load.engines.k6 import K6Engine, parse_k6_summary
from pgarena.load.engines.oha import OhaEngine, classify_oha_errors, parse_oha_json

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "engines"
REPO = Path(__file__).resolve().parents[2]


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


# ---------------------------------------------------------------- oha: parsing real output


def test_oha_ok_counts_and_no_errors():
    out = parse_oha_json(fixture("oha_ok"))
    assert out.requests == 17871  # the 3 "aborted due to deadline" are not counted
    assert out.status_codes == {"200": 17871}
    assert out.errors.total == 0
    assert out.duration_seconds == 1.501700353


def test_oha_latency_is_converted_from_seconds_to_ms():
    data = fixture("oha_ok")
    out = parse_oha_json(data)
    pct, summary = data["latencyPercentiles"], data["summary"]
    assert out.latency.p99_ms == pytest.approx(1000 * pct["p99"])
    assert out.latency.p99_ms == pytest.approx(0.842716)
    assert out.latency.p50_ms == pytest.approx(1000 * pct["p50"])
    assert out.latency.p90_ms == pytest.approx(1000 * pct["p90"])
    assert out.latency.p95_ms == pytest.approx(1000 * pct["p95"])
    assert out.latency.avg_ms == pytest.approx(1000 * summary["average"])
    assert out.latency.max_ms == pytest.approx(1000 * summary["slowest"])
    assert out.latency.p50_ms <= out.latency.p90_ms <= out.latency.p95_ms <= out.latency.p99_ms <= out.latency.max_ms


def test_oha_rps_is_counted_requests_over_duration():
    data = fixture("oha_ok")
    out = parse_oha_json(data)
    assert out.rps == pytest.approx(17871 / 1.501700353)
    # oha's own figure includes the requests aborted at the deadline; pgarena's must not.
    assert out.rps < data["summary"]["requestsPerSec"]


def test_oha_mixed_counts_500s_as_non_2xx():
    data = fixture("oha_mixed")
    out = parse_oha_json(data)
    assert out.status_codes == {"200": 10900, "500": 5450}
    assert out.requests == 16350
    assert out.errors.non_2xx == 5450
    assert (out.errors.connect, out.errors.timeout, out.errors.other) == (0, 0, 0)
    # rps is answered work (2xx/s); every completed request per second is beside it
    assert out.rps == pytest.approx(10900 / data["summary"]["total"])
    assert out.requests_per_second_all == pytest.approx(16350 / data["summary"]["total"])
    assert out.latency.p99_ms == pytest.approx(1000 * data["latencyPercentiles"]["p99"])
    assert out.latency.censored == []  # a 500 is an answer with a latency of its own


def test_oha_timeouts_are_requests_and_timeout_errors():
    data = fixture("oha_timeout")
    assert data["errorDistribution"] == {"aborted due to deadline": 4, "timeout": 20}
    out = parse_oha_json(data)
    assert out.requests == 72 + 20
    assert out.errors.timeout == 20
    assert (out.errors.non_2xx, out.errors.connect, out.errors.other) == (0, 0, 0)
    assert out.status_codes == {"200": 72}
    assert out.rps == pytest.approx(72 / data["summary"]["total"])
    assert out.requests_per_second_all == pytest.approx(92 / data["summary"]["total"])


def test_oha_timeouts_count_in_the_latency_at_the_timeout():
    """Issue 10 item 4: oha's own p99 (2.8 ms) leaves out the 20 of 92 requests that timed out at 250 ms."""
    data = fixture("oha_timeout")
    assert data["latencyPercentiles"]["p99"] * 1000 < 3  # what oha itself reports
    out = parse_oha_json(data, timeout_s=0.25)
    # f = 20/92 ≈ 22 %: p90, p95, p99 and max read timed-out requests only: at least the timeout
    assert out.latency.p99_ms == out.latency.p95_ms == out.latency.p90_ms == out.latency.max_ms == 250
    assert {"p90_ms", "p95_ms", "p99_ms", "max_ms", "avg_ms"} <= set(out.latency.censored)
    # p50 reads answered requests only: the answered ones' quantile at 0.5 / (1 − 20/92) ≈ 0.64, which oha
    # does not list; the next listed one (p75) is taken, never understating
    assert "p50_ms" not in out.latency.censored
    assert out.latency.p50_ms == pytest.approx(1000 * data["latencyPercentiles"]["p75"])
    # avg counts each timed-out request at 250 ms
    assert out.latency.avg_ms == pytest.approx((72 * 1000 * data["summary"]["average"] + 20 * 250) / 92)


def test_oha_timeouts_with_per_request_durations_are_exact():
    """With oha's per-request file (--db-url) the percentiles are computed over every request."""
    data = fixture("oha_timeout")
    durations = [1.0] * 72  # 72 answered requests at 1 ms
    out = parse_oha_json(data, timeout_s=0.25, durations_ms=durations)
    assert out.latency.p50_ms == 1.0 and "p50_ms" not in out.latency.censored
    assert out.latency.p99_ms == 250 and "p99_ms" in out.latency.censored
    assert out.latency.avg_ms == pytest.approx((72 * 1 + 20 * 250) / 92)
    # a file that does not match the JSON's answers is not used (the summary rule applies)
    fallback = parse_oha_json(data, timeout_s=0.25, durations_ms=durations[:10])
    assert fallback.latency.p50_ms == pytest.approx(1000 * data["latencyPercentiles"]["p75"])


def test_oha_per_request_file_is_read_and_removed(tmp_path):
    import sqlite3

    engine = OhaEngine()
    (tmp_path / "w.stdout").write_text(json.dumps(fixture("oha_timeout")))
    with sqlite3.connect(tmp_path / "w.db") as conn:
        conn.execute("CREATE TABLE oha (duration REAL NOT NULL)")
        conn.executemany("INSERT INTO oha VALUES (?)", [(0.002,)] * 72)
    out = engine.parse(tmp_path, "w", timeout_s=0.25)
    assert out.latency.p50_ms == pytest.approx(2.0)
    assert out.latency.p99_ms == 250
    assert not (tmp_path / "w.db").exists()


def test_oha_refused_is_connect_errors_and_no_response():
    data = fixture("oha_refused")
    errors, aborted = classify_oha_errors(data["errorDistribution"])
    assert errors.connect == 81005
    assert (errors.timeout, errors.other, errors.non_2xx) == (0, 0, 0)
    assert aborted == 4
    with pytest.raises(EngineOutputError, match="no response"):
        parse_oha_json(data)


def test_oha_deadline_aborts_are_neither_requests_nor_errors():
    base = parse_oha_json(fixture("oha_ok"))
    data = fixture("oha_ok")
    data["errorDistribution"] = {"aborted due to deadline": 500}
    many_aborted = parse_oha_json(data)
    data["errorDistribution"] = {}
    none_aborted = parse_oha_json(data)
    assert many_aborted.requests == none_aborted.requests == base.requests == 17871
    assert many_aborted.errors.total == none_aborted.errors.total == 0
    assert many_aborted.rps == pytest.approx(base.rps)


def test_oha_real_errors_next_to_deadline_aborts_are_counted():
    data = fixture("oha_mixed")
    data["errorDistribution"] = {
        "aborted due to deadline": 4,
        "Connection refused (os error 111)": 7,
        "timeout": 3,
        "some protocol error": 2,
    }
    out = parse_oha_json(data)
    assert out.requests == 16350 + 7 + 3 + 2
    assert (out.errors.non_2xx, out.errors.connect, out.errors.timeout, out.errors.other) == (5450, 7, 3, 2)
    assert out.errors.total == 5450 + 12


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("aborted due to deadline", "aborted"),
        ("timeout", "timeout"),
        ("operation timed out", "timeout"),
        ("Connection refused (os error 111)", "connect"),
        ("error trying to connect: tcp connect error", "connect"),
        ("Connection reset by peer (os error 104)", "connect"),
        ("invalid HTTP version parsed", "other"),
    ],
)
def test_classify_oha_errors_by_message(message, kind):
    errors, aborted = classify_oha_errors({message: 5})
    got = {"aborted": aborted, "timeout": errors.timeout, "connect": errors.connect, "other": errors.other}
    assert got == {k: (5 if k == kind else 0) for k in got}
    assert errors.non_2xx == 0


def test_classify_oha_errors_sums_messages_of_one_kind():
    errors, aborted = classify_oha_errors({"Connection refused": 2, "connection reset": 3, "timeout": 1, "x": 4})
    assert (errors.connect, errors.timeout, errors.other, aborted) == (5, 1, 4, 0)


def test_oha_parse_without_status_distribution_is_no_response():
    data = fixture("oha_ok")
    del data["statusCodeDistribution"]
    with pytest.raises(EngineOutputError):
        parse_oha_json(data)


@pytest.mark.parametrize("drop", ["summary", "latencyPercentiles"])
def test_oha_json_missing_sections_raise_engine_output_error(drop):
    data = fixture("oha_ok")
    del data[drop]
    with pytest.raises(EngineOutputError, match=drop):
        parse_oha_json(data)


def test_oha_summary_without_total_raises_engine_output_error():
    # Engine.parse's contract: unusable output is EngineOutputError, never a bare KeyError
    data = fixture("oha_ok")
    del data["summary"]["total"]
    with pytest.raises(EngineOutputError, match="total"):
        parse_oha_json(data)


def test_oha_engine_parse_reads_stdout_file(tmp_path):
    engine = OhaEngine()
    assert engine.raw_output(tmp_path, "cell-rep1") == tmp_path / "cell-rep1.stdout"
    (tmp_path / "cell-rep1.stdout").write_text((FIXTURES / "oha_mixed.json").read_text())
    out = engine.parse(tmp_path, "cell-rep1")
    assert out.requests == 16350
    assert out.errors.non_2xx == 5450


@pytest.mark.parametrize("content", [None, "", "oha: error: connection refused\n", '{"summary": '])
def test_oha_engine_parse_unusable_output(tmp_path, content):
    if content is not None:
        (tmp_path / "w.stdout").write_text(content)
    with pytest.raises(EngineOutputError, match="w.stdout"):
        OhaEngine().parse(tmp_path, "w")


# ---------------------------------------------------------------- k6: parsing real output


def test_k6_ok_counts_latency_and_rps():
    data = fixture("k6_ok")
    out = parse_k6_summary(data)
    trend = data["metrics"]["http_req_duration"]["values"]
    assert data["metrics"]["pgarena_2xx"]["values"]["count"] == 6497 == data["metrics"]["http_reqs"]["values"]["count"]
    assert out.requests == 6497
    assert out.errors.total == 0
    assert out.status_codes == {"2xx": 6497, "non-2xx": 0}
    assert out.duration_seconds == pytest.approx(1.501900291)
    # k6 already reports milliseconds: taken over unchanged
    assert out.latency.p99_ms == trend["p(99)"] == pytest.approx(2.9895606)
    assert out.latency.p50_ms == trend["med"]
    assert out.latency.p90_ms == trend["p(90)"]
    assert out.latency.p95_ms == trend["p(95)"]
    assert out.latency.avg_ms == trend["avg"]
    assert out.latency.max_ms == trend["max"]
    assert out.rps == pytest.approx(6497 / 1.501900291)
    # no request was cut off in this window, so k6's own rate agrees
    assert out.rps == pytest.approx(data["metrics"]["http_reqs"]["values"]["rate"], rel=1e-6)


def test_k6_mixed_500s_are_non_2xx():
    data = fixture("k6_mixed")
    metrics = data["metrics"]
    # the script classifies by status first: k6's error_code 1500 on a 500 does not make it "other"
    assert metrics["pgarena_non_2xx"]["values"]["count"] == 3079 == metrics["http_req_failed"]["values"]["passes"]
    assert "pgarena_other_errors" not in metrics
    out = parse_k6_summary(data)
    assert out.errors.non_2xx == 3079
    assert (out.errors.connect, out.errors.timeout, out.errors.other) == (0, 0, 0)
    assert out.errors.total == 3079
    assert out.requests == 6158 + 3079 == 9237
    assert out.status_codes == {"2xx": 6158, "non-2xx": 3079}
    assert out.rps == pytest.approx(6158 / out.duration_seconds)
    assert out.requests_per_second_all == pytest.approx(9237 / out.duration_seconds)


def test_k6_timeouts_are_classified_by_the_script():
    data = fixture("k6_timeout")
    out = parse_k6_summary(data)
    assert out.requests == 90
    assert out.errors.timeout == 20
    assert (out.errors.non_2xx, out.errors.connect, out.errors.other) == (0, 0, 0)
    assert out.status_codes == {"2xx": 70, "non-2xx": 0}
    assert out.rps == pytest.approx(70 / out.duration_seconds)
    assert out.requests_per_second_all == pytest.approx(90 / out.duration_seconds)
    # k6's http_req_duration includes the requests cut at the 250 ms timeout
    assert out.latency.max_ms == pytest.approx(253.671291)


def test_k6_timeouts_count_in_the_latency_like_oha():
    """k6 keeps a timed-out request in http_req_duration at about the timeout: p90/p95/p99 ≥ 250 ms, and
    pgarena marks them as lower bounds exactly as for oha (20 of 90 failed)."""
    out = parse_k6_summary(fixture("k6_timeout"), timeout_s=0.25)
    assert out.latency.p99_ms >= 250 and out.latency.p90_ms >= 250
    assert {"p90_ms", "p95_ms", "p99_ms", "max_ms", "avg_ms"} <= set(out.latency.censored)
    assert "p50_ms" not in out.latency.censored
    assert out.latency.p50_ms < 5


def test_k6_refused_requests_are_raised_to_the_timeout():
    """A refused connection is ~0 ms in http_req_duration; pgarena counts it at the timeout at least."""
    data = fixture("k6_timeout")
    values = data["metrics"]["http_req_duration"]["values"]
    values.update({"p(90)": 0.1, "p(95)": 0.1, "p(99)": 0.1, "max": 0.2})  # failed requests at ~0 ms
    data["metrics"]["pgarena_connect_errors"] = data["metrics"].pop("pgarena_timeouts")
    out = parse_k6_summary(data, timeout_s=0.25)
    assert out.latency.p99_ms == out.latency.p95_ms == out.latency.p90_ms == out.latency.max_ms == 250


def test_k6_pgarena_latency_trend_is_preferred():
    data = fixture("k6_timeout")
    trend = dict(data["metrics"]["http_req_duration"]["values"], **{"p(99)": 260.0})
    data["metrics"]["pgarena_latency"] = {"type": "trend", "contains": "time", "values": trend}
    out = parse_k6_summary(data, timeout_s=0.25)
    assert out.latency.p99_ms == 260.0 and "p99_ms" in out.latency.censored


def test_k6_script_counts_unanswered_requests_at_the_timeout():
    script = resources.files("pgarena.load.engines").joinpath("k6_script.js").read_text(encoding="utf-8")
    assert "new Trend('pgarena_latency', true)" in script
    assert "Math.max(res.timings.duration, timeoutMs)" in script


def test_k6_refused_is_connect_errors_only():
    metrics = fixture("k6_refused")["metrics"]
    # every classified request is a connect error; the 2 requests of iterations interrupted at the
    # deadline are in http_reqs but were never classified (as oha's "aborted due to deadline")
    assert metrics["pgarena_connect_errors"]["values"]["count"] == 17036 == metrics["iterations"]["values"]["count"]
    assert metrics["http_reqs"]["values"]["count"] == 17038
    assert metrics["http_req_failed"]["values"]["fails"] == 0  # k6 saw no successful request
    assert not any(name in metrics for name in ("pgarena_2xx", "pgarena_non_2xx", "pgarena_timeouts",
                                                 "pgarena_other_errors"))


def test_k6_refused_raises_like_oha():
    # k6 1.1.0 still emits http_req_duration (every statistic 0) when no request got a response
    data = fixture("k6_refused")
    assert data["metrics"]["http_req_duration"]["values"]["p(99)"] == 0
    with pytest.raises(EngineOutputError, match="no HTTP response") as info:
        parse_k6_summary(data)
    assert "connect errors 17036" in str(info.value)


def test_k6_only_non_2xx_answers_still_parse():
    # a window where every answer is a 500 is a (bad) measurement, not missing output
    data = fixture("k6_mixed")
    data["metrics"]["pgarena_non_2xx"]["values"]["count"] += data["metrics"].pop("pgarena_2xx")["values"]["count"]
    out = parse_k6_summary(data)
    assert out.status_codes == {"2xx": 0, "non-2xx": 9237}
    assert out.requests == out.errors.non_2xx == 9237


def test_k6_requests_cut_off_at_the_deadline_are_not_counted():
    base = parse_k6_summary(fixture("k6_ok"))
    data = fixture("k6_ok")
    data["metrics"]["http_reqs"]["values"]["count"] += 500  # in http_reqs, never classified by the script
    many_cut = parse_k6_summary(data)
    del data["metrics"]["http_reqs"]
    no_http_reqs = parse_k6_summary(data)
    assert many_cut.requests == no_http_reqs.requests == base.requests == 6497
    assert many_cut.errors.total == no_http_reqs.errors.total == 0
    assert many_cut.rps == pytest.approx(base.rps)


def test_k6_counters_absent_mean_zero():
    data = fixture("k6_ok")
    assert [name for name in data["metrics"] if name.startswith("pgarena_")] == ["pgarena_2xx"]
    out = parse_k6_summary(data)
    assert (out.errors.non_2xx, out.errors.connect, out.errors.timeout, out.errors.other) == (0, 0, 0, 0)


def test_k6_crafted_counters_map_to_error_kinds():
    data = fixture("k6_ok")
    for name, count in [("pgarena_non_2xx", 4), ("pgarena_connect_errors", 3),
                        ("pgarena_timeouts", 2), ("pgarena_other_errors", 1)]:
        data["metrics"][name] = {"type": "counter", "contains": "default", "values": {"count": count, "rate": 1.0}}
    out = parse_k6_summary(data)
    assert (out.errors.non_2xx, out.errors.connect, out.errors.timeout, out.errors.other) == (4, 3, 2, 1)
    assert out.requests == 6497 + 10
    assert out.status_codes == {"2xx": 6497, "non-2xx": 4}


@pytest.mark.parametrize("drop", ["pgarena_2xx", "http_req_duration"])
def test_k6_summary_without_response_metrics_raises(drop):
    data = fixture("k6_ok")
    del data["metrics"][drop]
    with pytest.raises(EngineOutputError, match="no HTTP response"):
        parse_k6_summary(data)


def test_k6_engine_parse_reads_summary_file(tmp_path):
    engine = K6Engine()
    path = engine.raw_output(tmp_path, "cell-rep2")
    assert path == tmp_path / "cell-rep2.k6-summary.json"
    path.write_text((FIXTURES / "k6_timeout.json").read_text())
    out = engine.parse(tmp_path, "cell-rep2")
    assert (out.requests, out.errors.timeout) == (90, 20)


@pytest.mark.parametrize("content", [None, "not json"])
def test_k6_engine_parse_unusable_output(tmp_path, content):
    if content is not None:
        (tmp_path / "w.k6-summary.json").write_text(content)
    with pytest.raises(EngineOutputError, match="w.k6-summary.json"):
        K6Engine().parse(tmp_path, "w")


# ---------------------------------------------------------------- command lines


@pytest.fixture
def fake_binaries(monkeypatch):
    monkeypatch.setattr(OhaEngine, "locate", lambda self: Path("/opt/tools/oha"))
    monkeypatch.setattr(K6Engine, "locate", lambda self: Path("/opt/tools/k6"))


def _option(argv: list[str], flag: str) -> str:
    assert argv.count(flag) == 1, f"{flag} appears {argv.count(flag)} times in {argv}"
    return argv[argv.index(flag) + 1]


def _k6_env(argv: list[str]) -> dict[str, str]:
    env = {}
    for i, arg in enumerate(argv):
        if arg == "-e":
            key, _, value = argv[i + 1].partition("=")
            assert key not in env
            env[key] = value
    return env


def test_oha_command_get(fake_binaries, tmp_path):
    spec = LoadSpec(url="http://127.0.0.1:8080/items?id=3", method="GET", connections=4, duration_s=1.5, timeout_s=2)
    argv = OhaEngine().command(spec, tmp_path, "get-vus4-rep1")
    assert argv[0] == "/opt/tools/oha"
    assert argv[-1] == "http://127.0.0.1:8080/items?id=3"
    assert "--no-tui" in argv
    assert _option(argv, "--output-format") == "json"
    assert _option(argv, "-z") == "1500ms"
    assert _option(argv, "-c") == "4"
    assert _option(argv, "-t") == "2000ms"
    assert _option(argv, "-m") == "GET"
    assert "-D" not in argv and "-d" not in argv and "-T" not in argv
    assert "--disable-compression" in argv  # oha asks for gzip, compress, deflate, br otherwise
    assert list(tmp_path.iterdir()) == []


def test_oha_keeps_every_latency_only_for_counted_windows(fake_binaries, tmp_path):
    """A measured window writes its per-request file for the percentiles; a warm-up or re-warm
    (`latencies=False`) does not, and its parse falls back to oha's own summary."""
    spec = LoadSpec(url="http://127.0.0.1:8080/", method="GET", connections=1, duration_s=1, timeout_s=1)
    assert _option(OhaEngine().command(spec, tmp_path, "w"), "--db-url") == str(tmp_path / "w.db")
    assert "--db-url" not in OhaEngine().command(replace(spec, latencies=False), tmp_path, "w")


def test_a_lead_in_runs_in_the_same_process_and_keeps_every_answer(fake_binaries, tmp_path):
    spec = LoadSpec(url="http://127.0.0.1:8080/", method="GET", connections=1, duration_s=1, timeout_s=1,
                    latencies=False, lead_in_s=0.5)
    argv = OhaEngine().command(spec, tmp_path, "w")
    assert _option(argv, "-z") == "1500ms" and "--db-url" in argv  # the window is cut by each answer's end


def test_the_window_after_a_lead_in_counts_what_ended_in_it():
    """Answers that ended in the lead-in or after the deadline are left out of the window's figures but reported
    as uncounted (they reached the database); failures without an answer have no time and all count."""
    from pgarena.load.engines.oha import window_after_lead_in

    data = fixture("oha_ok")
    data["errorDistribution"] = {"connection closed before message completed": 2}
    rows = ([(0.1 + i * 0.001, 0.004, 200) for i in range(300)]  # lead-in
            + [(0.5 + i * 0.001, 0.002, 200) for i in range(900)] + [(1.2, 0.003, 500)]  # the window
            + [(1.5004, 0.005, 200), (1.51, 0.005, 503)])  # ended after the deadline (oha -w)
    out = window_after_lead_in(data, rows, lead_in_s=0.5, window_s=1.0, timeout_s=0.25)
    assert out.status_codes == {"200": 900, "500": 1}
    assert out.duration_seconds == 1.0 and out.rps == 900
    assert out.errors.non_2xx == 1 and out.errors.connect == 2
    assert out.requests == 903
    assert out.uncounted_2xx == 301 and out.uncounted_other == 1
    assert out.latency.p50_ms == pytest.approx(2.0)
    assert out.latency.max_ms == 250  # the two without an answer count at the timeout
    with pytest.raises(EngineOutputError, match="no response in the 1.0 s after its 0.5 s lead-in"):
        window_after_lead_in(data, rows[:300], lead_in_s=0.5, window_s=1.0, timeout_s=0.25)


def test_oha_command_asks_for_no_compression_like_k6(fake_binaries, tmp_path):
    """oha advertises gzip/br by default and k6 nothing: a stack that compresses when asked would do more
    work for one engine than for the other."""
    spec = LoadSpec(url="http://127.0.0.1:8080/", method="GET", connections=1, duration_s=1, timeout_s=1)
    assert "--disable-compression" in OhaEngine().command(spec, tmp_path, "s")
    assert "Accept-Encoding" not in K6Engine().script_path(tmp_path).read_text(encoding="utf-8")


def test_oha_command_rounds_durations_to_ms(fake_binaries, tmp_path):
    spec = LoadSpec(url="http://127.0.0.1:1/", method="GET", connections=1, duration_s=10.0004, timeout_s=0.0256)
    argv = OhaEngine().command(spec, tmp_path, "s")
    assert _option(argv, "-z") == "10000ms"
    assert _option(argv, "-t") == "26ms"


def test_oha_command_with_body_writes_body_file(fake_binaries, tmp_path):
    body = b'{"name": "caf\xc3\xa9", "n": 1}'
    spec = LoadSpec(url="http://127.0.0.1:8080/items", method="POST", connections=16, duration_s=5, timeout_s=10,
                    body=body, content_type="application/json")
    argv = OhaEngine().command(spec, tmp_path, "post-vus16-rep2")
    assert _option(argv, "-m") == "POST"
    assert _option(argv, "-c") == "16"
    assert _option(argv, "-z") == "5000ms"
    body_file = Path(_option(argv, "-D"))
    assert body_file == tmp_path / "post-vus16-rep2.body"
    assert body_file.read_bytes() == body
    assert _option(argv, "-T") == "application/json"
    assert argv[-1] == "http://127.0.0.1:8080/items"


def test_k6_command(fake_binaries, tmp_path):
    spec = LoadSpec(url="http://127.0.0.1:8080/items?id=3", method="GET", connections=8, duration_s=2.5, timeout_s=1)
    engine = K6Engine()
    argv = engine.command(spec, tmp_path, "get-vus8-rep1")
    assert argv[:2] == ["/opt/tools/k6", "run"]
    for flag in ("--quiet", "--no-color", "--no-usage-report", "--no-thresholds"):
        assert flag in argv
    assert _k6_env(argv) == {
        "PGARENA_URL": "http://127.0.0.1:8080/items?id=3",
        "PGARENA_METHOD": "GET",
        "PGARENA_VUS": "8",
        "PGARENA_DURATION": "2500ms",
        "PGARENA_TIMEOUT": "1000ms",
        "PGARENA_SUMMARY": str(tmp_path / "get-vus8-rep1.k6-summary.json"),
    }
    assert _k6_env(argv)["PGARENA_SUMMARY"] == str(engine.raw_output(tmp_path, "get-vus8-rep1"))
    script = Path(argv[-1])
    assert script == tmp_path / "k6_script.js"
    assert script.read_text(encoding="utf-8") == (
        resources.files("pgarena.load.engines").joinpath("k6_script.js").read_text(encoding="utf-8"))


def test_k6_command_with_body(fake_binaries, tmp_path):
    spec = LoadSpec(url="http://127.0.0.1:8080/items", method="POST", connections=2, duration_s=1, timeout_s=3,
                    body=b'{"a": "b c"}', content_type="application/json")
    env = _k6_env(K6Engine().command(spec, tmp_path, "post"))
    assert env["PGARENA_METHOD"] == "POST"
    assert env["PGARENA_BODY"] == '{"a": "b c"}'
    assert env["PGARENA_CONTENT_TYPE"] == "application/json"
    assert env["PGARENA_VUS"] == "2"


def test_k6_script_is_written_once_per_workdir(fake_binaries, tmp_path):
    engine = K6Engine()
    spec = LoadSpec(url="http://127.0.0.1:1/", method="GET", connections=1, duration_s=1, timeout_s=1)
    first = Path(engine.command(spec, tmp_path, "a")[-1])
    second = Path(engine.command(spec, tmp_path, "b")[-1])
    assert first == second
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k6_script.js"]


# ---------------------------------------------------------------- registry and packaging


def test_get_engine_unknown_name():
    with pytest.raises(EngineUnavailable, match="nope"):
        get_engine("nope")


def test_get_engine_known_names():
    assert set(ENGINES) == {"oha", "k6"}
    assert isinstance(get_engine("oha"), OhaEngine)
    assert isinstance(get_engine("k6"), K6Engine)


def test_missing_binary_is_engine_unavailable_with_install_hint(monkeypatch, tmp_path):
    monkeypatch.setattr(OhaEngine, "locate", lambda self: None)
    engine = OhaEngine()
    spec = LoadSpec(url="http://127.0.0.1:1/", method="GET", connections=1, duration_s=1, timeout_s=1)
    with pytest.raises(EngineUnavailable, match="cargo install oha --version 1.16.0"):
        engine.command(spec, tmp_path, "s")


def test_k6_script_is_package_data():
    script = resources.files("pgarena.load.engines").joinpath("k6_script.js")
    assert script.is_file()
    text = script.read_text(encoding="utf-8")
    assert "export function handleSummary" in text
    for var in ("PGARENA_URL", "PGARENA_METHOD", "PGARENA_VUS", "PGARENA_DURATION", "PGARENA_TIMEOUT",
                "PGARENA_SUMMARY", "PGARENA_BODY", "PGARENA_CONTENT_TYPE"):
        assert var in text
    for counter in ("pgarena_2xx", "pgarena_non_2xx", "pgarena_connect_errors", "pgarena_timeouts",
                    "pgarena_other_errors"):
        assert f"'{counter}'" in text


def test_pyproject_declares_k6_script_as_package_data():
    # an editable install reads src/ directly; this guards what a wheel would contain
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["pgarena"]
    assert any(fnmatch.fnmatch("load/engines/k6_script.js", pattern) for pattern in patterns)


def test_fixtures_are_unmodified_tool_output():
    # guard against hand edits: every fixture keeps the shape its tool wrote
    for name in ("oha_ok", "oha_mixed", "oha_refused", "oha_timeout"):
        data = fixture(name)
        assert {"summary", "latencyPercentiles", "statusCodeDistribution", "errorDistribution"} <= set(data)
    for name in ("k6_ok", "k6_mixed", "k6_refused", "k6_timeout"):
        data = fixture(name)
        assert {"root_group", "options", "state", "metrics"} <= set(data)
        assert data["options"]["summaryTrendStats"] == [
            "avg", "min", "med", "max", "p(50)", "p(90)", "p(95)", "p(99)"]


@pytest.mark.parametrize("stat", ["avg", "med", "p(99)", "max"])
def test_k6_summary_missing_a_trend_stat_is_an_output_error(stat):
    data = fixture("k6_ok")
    del data["metrics"]["http_req_duration"]["values"][stat]
    with pytest.raises(EngineOutputError, match=re.escape(f"http_req_duration lacks {stat}")):
        parse_k6_summary(data)


def test_k6_summary_without_run_duration_is_an_output_error():
    data = fixture("k6_ok")
    del data["state"]["testRunDurationMs"]
    with pytest.raises(EngineOutputError, match="state.testRunDurationMs"):
        parse_k6_summary(data)


@pytest.mark.parametrize("path", [("summary", "total"), ("summary", "average"), ("latencyPercentiles",),
                                  ("statusCodeDistribution",), ("errorDistribution",)])
def test_oha_output_missing_a_field_is_an_error_naming_it(path):
    """A field pgarena reads that oha did not write is an error, never a silent 0 ms."""
    data = fixture("oha_ok")
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]
    with pytest.raises(EngineOutputError, match=re.escape(".".join(path))):
        parse_oha_json(data)


def test_oha_null_latency_with_answers_is_an_error_not_zero():
    data = fixture("oha_ok")
    data["summary"]["average"] = None
    with pytest.raises(EngineOutputError, match="no latency"):
        parse_oha_json(data)
    data = fixture("oha_ok")
    data["latencyPercentiles"]["p99"] = None
    with pytest.raises(EngineOutputError, match="p99"):
        parse_oha_json(data)


def test_k6_counter_without_count_is_an_error():
    data = fixture("k6_ok")
    data["metrics"]["pgarena_2xx"]["values"].pop("count")
    with pytest.raises(EngineOutputError, match="pgarena_2xx has no count"):
        parse_k6_summary(data)


# --- open model (issue 5) -------------------------------------------------------------------------------


def test_oha_open_model_sets_the_rate_and_latency_correction(fake_binaries, tmp_path):
    spec = LoadSpec(url="http://127.0.0.1:1/", method="GET", connections=100, duration_s=2, timeout_s=10,
                    rate=1234.5)
    argv = OhaEngine().command(spec, tmp_path, "s")
    assert float(_option(argv, "-q")) == pytest.approx(1234.5)
    assert "--latency-correction" in argv
    assert _option(argv, "-c") == "100"


def test_oha_closed_model_has_no_rate(fake_binaries, tmp_path):
    argv = OhaEngine().command(LoadSpec(url="http://127.0.0.1:1/", method="GET", connections=4, duration_s=1,
                                        timeout_s=1), tmp_path, "s")
    assert "-q" not in argv and "--latency-correction" not in argv


def test_k6_open_model_passes_an_integer_rate(fake_binaries, tmp_path):
    spec = LoadSpec(url="http://127.0.0.1:1/", method="GET", connections=100, duration_s=2, timeout_s=10, rate=99.6)
    env = _k6_env(K6Engine().command(spec, tmp_path, "s"))
    assert env["PGARENA_RATE"] == "100" and env["PGARENA_VUS"] == "100"
    closed = _k6_env(K6Engine().command(replace(spec, rate=None), tmp_path, "s"))
    assert "PGARENA_RATE" not in closed


def test_k6_script_switches_to_constant_arrival_rate():
    script = resources.files("pgarena.load.engines").joinpath("k6_script.js").read_text()
    assert "constant-arrival-rate" in script and "PGARENA_RATE" in script and "maxVUs" in script


def test_k6_dropped_iterations_are_read_when_present():
    data = fixture("k6_ok")
    assert parse_k6_summary(data).dropped is None
    data["metrics"]["dropped_iterations"] = {"type": "counter", "contains": "default",
                                             "values": {"count": 42, "rate": 21.0}}
    assert parse_k6_summary(data).dropped == 42


# ---------------------------------------------------------------- latency over every request (real captures)


def test_real_oha_per_request_file_gives_a_p99_at_the_timeout(tmp_path):
    """oha_timeout_requests: 72 answers, 24 timeouts at 250 ms; oha's own p99 is 7.5 ms. With its
    --db-url file pgarena computes the percentiles over all 96 requests."""
    import shutil

    data = fixture("oha_timeout_requests")
    assert data["latencyPercentiles"]["p99"] * 1000 < 10 and data["errorDistribution"] == {"timeout": 24}
    (tmp_path / "w.stdout").write_text(json.dumps(data))
    shutil.copyfile(FIXTURES / "oha_timeout_requests.db", tmp_path / "w.db")
    out = OhaEngine().parse(tmp_path, "w", timeout_s=0.25)
    assert out.latency.p99_ms == out.latency.p95_ms == out.latency.p90_ms == out.latency.max_ms == 250
    assert {"avg_ms", "p90_ms", "p95_ms", "p99_ms", "max_ms"} == set(out.latency.censored)
    assert out.latency.p50_ms < 10 and "p50_ms" not in out.latency.censored  # 48th of 96 is an answer
    # the same as k6's estimator over the 72 durations and 24 timeouts
    import sqlite3
    import statistics

    with sqlite3.connect(FIXTURES / "oha_timeout_requests.db") as conn:
        durations = [row[0] * 1000 for row in conn.execute("SELECT duration FROM oha")]
    assert out.latency.p50_ms == pytest.approx(statistics.median(durations + [250.0] * 24))


def test_real_k6_pgarena_latency_trend_matches_the_rule():
    """k6_timeout_latency: the script's pgarena_latency trend over 96 requests (24 timed out at 250 ms)."""
    data = fixture("k6_timeout_latency")
    trend = data["metrics"]["pgarena_latency"]["values"]
    assert trend["count"] == 96
    out = parse_k6_summary(data, timeout_s=0.25)
    assert out.latency.p99_ms == trend["p(99)"] >= 250
    assert {"avg_ms", "p90_ms", "p95_ms", "p99_ms", "max_ms"} == set(out.latency.censored)
    assert out.latency.p50_ms == trend["med"] < 10
