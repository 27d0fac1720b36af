"""Per-request records → 100 ms bins (load/timeline.py): oha's SQLite file, k6's JSON output.

Crafted oha files are created with oha 1.16.0's own table definition (src/db.rs); the real files in
tests/fixtures/timeline/ come from capture.py there. No generator runs here.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import pytest

from pgarena.analysis.recovery import recovery
from pgarena.load.engines.base import EngineOutputError
from pgarena.load.timeline import (
    bin_requests,
    k6_error_outcome,
    k6_json_args,
    read_k6_timeline,
    read_oha_timeline,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "timeline"
ENGINE_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "engines"
CAPTURE = json.loads((FIXTURES / "capture.json").read_text(encoding="utf-8"))

OHA_CREATE_TABLE = """CREATE TABLE IF NOT EXISTS oha (
            url TEXT NOT NULL,
            start REAL NOT NULL,
            start_latency_correction REAL,
            end REAL NOT NULL,
            duration REAL NOT NULL,
            status INTEGER NOT NULL,
            len_bytes INTEGER NOT NULL,
            run INTEGER NOT NULL
        )"""
"""Verbatim from oha 1.16.0 src/db.rs `create_db`."""

ZERO = 1_795_000_000.25
"""oha's zero in the crafted files: a quarter second into Unix second 1795000000 (its `run`)."""


def oha_file(path: Path, rows: list[tuple[float, float, int]], run: int = int(ZERO)) -> Path:
    """An oha --db-url file with (start, end, status) rows, as oha's `store` inserts them."""
    with sqlite3.connect(path) as conn:
        conn.execute(OHA_CREATE_TABLE)
        conn.executemany(
            "INSERT INTO oha (url, start, start_latency_correction, end, duration, status, len_bytes, run) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            [("/tx", start, None, end, end - start, status, 11, run) for start, end, status in rows])
    conn.close()
    return path


# ---------------------------------------------------------------- binning


def test_requests_count_in_the_bin_of_their_end():
    t = bin_requests([(100.05, "ok_2xx"), (100.1, "ok_2xx"), (100.19, "timeout"), (100.25, "non_2xx")],
                     origin_unix_s=100.0, duration_s=0.3, records_unanswered=True)
    assert t.bins == 3
    assert t.ok_2xx == (1, 1, 0)  # 100.1 is the first instant of bin 1
    assert t.timeout == (0, 1, 0)
    assert t.non_2xx == (0, 0, 1)
    assert t.outside == 0
    assert t.origin_unix_s == 100.0 and t.bin_s == 0.1


def test_requests_outside_the_window_are_counted_apart():
    t = bin_requests([(99.99, "ok_2xx"), (100.0, "ok_2xx"), (100.3, "ok_2xx"), (101.0, "connect")],
                     origin_unix_s=100.0, duration_s=0.3, records_unanswered=True)
    assert t.ok_2xx == (1, 0, 0)
    assert t.connect == (0, 0, 0)
    assert t.outside == 3


def test_a_remainder_shorter_than_a_bin_is_not_a_bin():
    t = bin_requests([(100.33, "ok_2xx")], origin_unix_s=100.0, duration_s=0.35, records_unanswered=True)
    assert t.bins == 3 and t.outside == 1  # a partial 4th bin would show as a dip


def test_binning_rejects_unknown_outcomes_and_unrecorded_kinds():
    with pytest.raises(ValueError, match="unknown outcome"):
        bin_requests([(100.0, "refused")], origin_unix_s=100.0, duration_s=1, records_unanswered=True)
    with pytest.raises(ValueError, match="not to record"):
        bin_requests([(100.0, "timeout")], origin_unix_s=100.0, duration_s=1, records_unanswered=False)
    with pytest.raises(ValueError, match="bins"):
        bin_requests([], origin_unix_s=100.0, duration_s=0.05, records_unanswered=True)


# ---------------------------------------------------------------- oha


def test_oha_rows_are_binned_by_end_from_ohas_zero(tmp_path):
    path = oha_file(tmp_path / "w.db", [
        (0.01, 0.02, 200),  # bin 0
        (0.05, 0.31, 201),  # started in bin 0, answered in bin 3: counts in bin 3
        (0.12, 0.15, 500),  # bin 1, non-2xx
        (0.20, 0.29, 404),  # bin 2, non-2xx
        (0.35, 0.45, 200),  # ends after the 0.4 s window: outside
    ])
    t = read_oha_timeline(path, zero_unix_s=ZERO, duration_s=0.4)
    assert t.ok_2xx == (1, 0, 0, 1)
    assert t.non_2xx == (0, 1, 1, 0)
    assert t.outside == 1
    assert t.engine == "oha" and t.origin_unix_s == ZERO


def test_oha_records_no_unanswered_requests(tmp_path):
    t = read_oha_timeline(oha_file(tmp_path / "w.db", [(0.0, 0.01, 200)]), zero_unix_s=ZERO, duration_s=1)
    assert not t.records_unanswered
    assert t.connect is t.reset is t.timeout is t.other is None
    assert t.failed() is None


def test_oha_origin_may_differ_from_its_zero(tmp_path):
    path = oha_file(tmp_path / "w.db", [(1.0, 1.05, 200), (2.0, 2.12, 200)])
    t = read_oha_timeline(path, zero_unix_s=ZERO, origin_unix_s=ZERO + 1.0, duration_s=1.5)
    assert t.ok_2xx[0] == 1 and t.ok_2xx[11] == 1 and sum(t.ok_2xx) == 2


def test_oha_run_second_must_match_the_zero(tmp_path):
    path = oha_file(tmp_path / "w.db", [(0.0, 0.01, 200)], run=int(ZERO) + 5)
    with pytest.raises(EngineOutputError, match="Unix second"):
        read_oha_timeline(path, zero_unix_s=ZERO, duration_s=1)
    # pgarena takes the zero just before starting oha: oha's own start (and its `run`) may be in the next second
    late = oha_file(tmp_path / "late.db", [(0.0, 0.01, 200)], run=int(ZERO) + 1)
    assert sum(read_oha_timeline(late, zero_unix_s=ZERO, duration_s=1).ok_2xx) == 1


def test_oha_file_with_two_runs_is_refused(tmp_path):
    path = oha_file(tmp_path / "w.db", [(0.0, 0.01, 200)])
    oha_file(path, [(0.0, 0.01, 200)], run=int(ZERO) - 60)  # oha appends to an existing file
    with pytest.raises(EngineOutputError, match="2 runs"):
        read_oha_timeline(path, zero_unix_s=ZERO, duration_s=1)


def test_oha_missing_or_foreign_file_is_an_output_error(tmp_path):
    with pytest.raises(EngineOutputError, match="missing"):
        read_oha_timeline(tmp_path / "none.db", zero_unix_s=ZERO, duration_s=1)
    (tmp_path / "junk.db").write_text("not sqlite", encoding="utf-8")
    with pytest.raises(EngineOutputError, match="unreadable"):
        read_oha_timeline(tmp_path / "junk.db", zero_unix_s=ZERO, duration_s=1)


def test_oha_empty_table_gives_empty_bins(tmp_path):
    path = oha_file(tmp_path / "w.db", [])
    t = read_oha_timeline(path, zero_unix_s=ZERO, duration_s=0.5)
    assert t.ok_2xx == (0,) * 5 and t.outside == 0


def test_real_oha_file_matches_ohas_own_summary():
    summary = json.loads((FIXTURES / "oha_outcomes.json").read_text(encoding="utf-8"))
    t = read_oha_timeline(FIXTURES / "oha_outcomes.db", zero_unix_s=CAPTURE["started_unix_s"]["oha"],
                          duration_s=2.0)
    assert summary["statusCodeDistribution"] == {"200": 12, "500": 4}
    assert sum(t.ok_2xx) == 12 and sum(t.non_2xx) == 4 and t.outside == 0
    assert sum(summary["errorDistribution"].values()) == 29  # the unanswered ones: not in the file
    assert t.ok_2xx[:3] == (0, 0, 1)  # the first answer ended 0.2–0.3 s after oha's start


def test_engine_fixture_oha_file_reads_too():
    """The older capture in tests/fixtures/engines (72 answered requests, 24 timeouts not in the file)."""
    with sqlite3.connect(f"file:{ENGINE_FIXTURES / 'oha_timeout_requests.db'}?mode=ro", uri=True) as conn:
        (run,) = conn.execute("SELECT DISTINCT run FROM oha").fetchone()
    t = read_oha_timeline(ENGINE_FIXTURES / "oha_timeout_requests.db", zero_unix_s=run + 0.5, duration_s=1.5)
    assert sum(t.ok_2xx) == 72 and sum(t.non_2xx) == 0 and t.outside == 0


# ---------------------------------------------------------------- k6


def k6_point(time: str, status: str, error_code: str | None = None, metric: str = "http_reqs") -> str:
    """One line of k6's JSON output, with k6 1.1.0's default tags."""
    tags = {"expected_response": "true" if status.startswith("2") else "false", "group": "", "method": "POST",
            "name": "http://127.0.0.1:8080/tx", "proto": "HTTP/1.1", "scenario": "load", "status": status,
            "url": "http://127.0.0.1:8080/tx"}
    if error_code is not None:
        tags["error_code"] = error_code
    return json.dumps({"metric": metric, "type": "Point", "data": {"time": time, "value": 1, "tags": tags}})


K6_METRIC_LINE = json.dumps({"type": "Metric", "data": {"name": "http_reqs", "type": "counter",
                                                        "contains": "default", "thresholds": [],
                                                        "submetrics": None}, "metric": "http_reqs"})


def k6_file(path: Path, lines: list[str]) -> Path:
    text = "\n".join(lines) + "\n"
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


ORIGIN = 1_795_453_500.0  # 2026-11-23T17:05:00Z


@pytest.mark.parametrize("name", ["out.json", "out.json.gz"])
def test_k6_points_are_binned_by_time_with_errors_by_kind(tmp_path, name):
    path = k6_file(tmp_path / name, [
        K6_METRIC_LINE,
        k6_point("2026-11-23T17:05:00.012345678Z", "200"),
        k6_point("2026-11-23T17:05:00.012345678Z", "200", metric="http_req_duration"),  # not a request
        k6_point("2026-11-23T18:05:00.15+01:00", "500", "1500"),  # same instant zone, bin 1
        k6_point("2026-11-23T17:05:00.21Z", "0", "1212"),  # dial: connection refused
        k6_point("2026-11-23T17:05:00.22Z", "0", "1211"),  # dial: i/o timeout → no connection
        k6_point("2026-11-23T17:05:00.31Z", "0", "1220"),  # read: connection reset by peer
        k6_point("2026-11-23T17:05:00.32Z", "0", "1201"),  # broken pipe
        k6_point("2026-11-23T17:05:00.41Z", "0", "1050"),  # request timeout
        k6_point("2026-11-23T17:05:00.42Z", "0", "1000"),  # EOF
        k6_point("2026-11-23T17:05:00.51Z", "0", "1000"),  # ends after the window
    ])
    t = read_k6_timeline(path, origin_unix_s=ORIGIN, duration_s=0.5)
    assert t.ok_2xx == (1, 0, 0, 0, 0)
    assert t.non_2xx == (0, 1, 0, 0, 0)
    assert t.connect == (0, 0, 2, 0, 0)
    assert t.reset == (0, 0, 0, 2, 0)
    assert t.timeout == (0, 0, 0, 0, 1)
    assert t.other == (0, 0, 0, 0, 1)
    assert t.outside == 1
    assert t.engine == "k6" and t.records_unanswered
    assert t.failed() == [0, 1, 2, 2, 2]


def test_k6_error_codes():
    assert [k6_error_outcome(c) for c in (1050, 1210, 1211, 1212, 1213, 1200, 1201, 1202, 1220, 1000, 1101,
                                          1650, None)] == [
        "timeout", "connect", "connect", "connect", "connect", "reset", "reset", "reset", "reset", "other",
        "other", "other", "other"]


def test_k6_unreadable_request_line_is_an_output_error(tmp_path):
    path = k6_file(tmp_path / "out.json", [K6_METRIC_LINE, '{"metric":"http_reqs","type":"Point","data":{}}'])
    with pytest.raises(EngineOutputError, match="line 2"):
        read_k6_timeline(path, origin_unix_s=ORIGIN, duration_s=1)
    with pytest.raises(EngineOutputError, match="missing"):
        read_k6_timeline(tmp_path / "none.json", origin_unix_s=ORIGIN, duration_s=1)
    (tmp_path / "bad.json.gz").write_bytes(b"not gzip")
    with pytest.raises(EngineOutputError, match="unreadable"):
        read_k6_timeline(tmp_path / "bad.json.gz", origin_unix_s=ORIGIN, duration_s=1)


def test_k6_points_without_status_tag_are_refused(tmp_path):
    line = json.loads(k6_point("2026-11-23T17:05:00.1Z", "200"))
    del line["data"]["tags"]["status"]  # k6 run --system-tags without status
    path = k6_file(tmp_path / "out.json", [json.dumps(line)])
    with pytest.raises(EngineOutputError, match="no `status` tag"):
        read_k6_timeline(path, origin_unix_s=ORIGIN, duration_s=1)


def test_k6_json_args_name_the_file():
    assert k6_json_args(Path("/w/cell.json.gz")) == ["--out", "json=/w/cell.json.gz"]


def test_real_k6_file_matches_the_scripts_own_counters():
    summary = json.loads((FIXTURES / "k6_outcomes.summary.json").read_text(encoding="utf-8"))
    count = {name: m["values"]["count"] for name, m in summary["metrics"].items() if name.startswith("pgarena_")}
    t = read_k6_timeline(FIXTURES / "k6_outcomes.json.gz", origin_unix_s=CAPTURE["started_unix_s"]["k6"],
                         duration_s=2.5)
    assert t.outside == 0
    assert sum(t.ok_2xx) == count["pgarena_2xx"] == 4
    assert sum(t.non_2xx) == count["pgarena_non_2xx"] == 12
    assert sum(t.connect) == 7 and sum(t.reset) == 6
    assert sum(t.connect) + sum(t.reset) == count["pgarena_connect_errors"]
    assert sum(t.timeout) == count["pgarena_timeouts"] == 6
    assert sum(t.other) == count["pgarena_other_errors"] == 11
    assert t.ok_2xx[:1] == (0,)  # k6 needs ~0.17 s to start: nothing ended in the first bin


def test_a_read_timeline_feeds_recovery(tmp_path):
    """End to end on a crafted oha file: steady 2xx, a 1 s gap, steady again."""
    rows = []
    for i in range(600):  # 100 requests/s for 6 s, 5 ms each, none answered in 3.0–4.0 s
        start = i / 100
        if 3.0 <= start < 4.0:
            continue
        rows.append((start, start + 0.005, 200))
    t = read_oha_timeline(oha_file(tmp_path / "w.db", rows), zero_unix_s=ZERO, duration_s=6.0)
    rec = recovery(t, 3.0, 4.0, baseline_window_s=2.0)
    assert rec.recovered and rec.recovered_after_s == 0.0 and rec.first_ok_after_s == 0.0
    assert rec.baseline_rps == pytest.approx(100)
    assert rec.failed_requests is None  # oha: the gap's errors are not in its file
