"""A load generator's per-request records → a `Timeline` of 100 ms bins (analysis/recovery.py reads it).

Each request is counted once, in the bin its *end* falls in: the answer's arrival, or the moment the
generator gave up (refused, reset, timed out). Why the end and not the start:
- the end is when a client observes the outcome. Throughput is answers delivered per second, so a
  stall shows as a gap exactly while no answer arrives, and the requests it held back show as a burst
  when it is released; binned by start, a request sent just before a 5 s stall and answered after it
  would count as throughput before the fault and hide the outage;
- an error exists only at its end (a timeout is known one HTTP timeout after the request was sent);
- both generators record the end: oha's `end` column, and k6 stamps every HTTP sample with the
  request's end (`Trail.EndTime`, lib/netext/httpext/tracer.go).
The price: a timeout appears one timeout after its request was sent, so a fault's errors can trail its
end by up to the HTTP timeout (recovery.py counts failed requests until recovery is confirmed).

oha (`--db-url`, see engines/oha.py `requests_file`): oha 1.16.0 writes, after the run, one row per
request *that got an HTTP answer* (`ResultData::success()`, any status) into table `oha`:
`url, start, start_latency_correction, end, duration, status, len_bytes, run` (src/db.rs). `start`,
`end` and `start_latency_correction` are seconds since oha's own start (a monotonic clock), `run` the
wall-clock Unix second of that start, truncated. Requests without an answer (refused, reset, timeout)
are only counted in oha's JSON summary (`errorDistribution`), without times, so an oha timeline has no
unanswered series (None: unknown, not zero). Aligning oha's times with the wall clock needs oha's
zero: the caller passes the wall-clock time taken just before starting oha; oha's zero is later by its
start-up, 20–50 ms measured here (a server's first request 22–40 ms after the spawn; a stall's edges in
tests/integration/test_fault_timeline.py read ~45 ms early), so oha events land up to half a bin early.
`run` is checked against it. k6 has no such offset: its times are wall clock. NOTE: OhaEngine.parse
removes the file once it has read the latencies, so read the timeline before parsing the window.

k6 (`--out json=<file>`, see `k6_json_args`; a name ending in `.gz` makes k6 gzip it): one JSON object
per line; every request is a `"type": "Point"` line of metric `http_reqs` with `data.time` (RFC 3339,
the request's end, wall clock) and `data.tags`: `status` ("0" without an answer) and, for failures,
`error_code` (lib/netext/httpext/error_codes.go): 1050 request timeout → `timeout`; 1210–1219 dial
errors (refused, dial timeout) → `connect`; 1200–1209 and 1220–1299 (broken pipe, reset by peer, other
TCP) → `reset`; anything else without a status (1000 generic, e.g. "EOF" when the server closed the
connection) → `other`. A `dropped_iterations` point (open model: an iteration due when no VU was
free, stamped when it was due) → `dropped`. Every other line (metric definitions, other metrics) is skipped. k6 writes
~10 points per request, so the file is large: about 3.5 kB per request with k6's default tags, 170 B
gzipped (here: 31,000 requests, 108 MB, read in 0.8 s; oha's 300,000 rows in 0.6 s).
"""

from __future__ import annotations

import gzip
import json
import math
import sqlite3
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path

from pgarena.analysis.recovery import DEFAULT_BIN_S, DROPPED, ERROR_KINDS, UNANSWERED_KINDS, Timeline
from pgarena.load.engines.base import EngineOutputError

OUTCOMES = ("ok_2xx", *ERROR_KINDS)
"""What became of a request: a 2xx answer, or one of recovery.ERROR_KINDS."""

MAX_BINS = 1_000_000
"""More bins than this (27 h at 0.1 s) is a mistake in the arguments, not a window."""

OHA_TABLE = "oha"
"""The table oha 1.16.0 writes its per-request rows into (src/db.rs `create_db`)."""


def status_outcome(status: int) -> str:
    """"ok_2xx" for a 2xx status, "non_2xx" for any other answer."""
    return "ok_2xx" if 200 <= status < 300 else "non_2xx"


def k6_error_outcome(error_code: int | None) -> str:
    """The unanswered kind of a k6 request without a status, from its `error_code` tag."""
    if error_code == 1050:
        return "timeout"
    if error_code is not None and 1210 <= error_code <= 1219:
        return "connect"
    if error_code is not None and 1200 <= error_code <= 1299:
        return "reset"
    return "other"


def bin_requests(ends: Iterable[tuple[float, str]], *, origin_unix_s: float, duration_s: float,
                 bin_s: float = DEFAULT_BIN_S, records_unanswered: bool, engine: str = "") -> Timeline:
    """A Timeline from (end time in Unix seconds, outcome) pairs, outcome one of OUTCOMES.

    Bins cover [origin, origin + duration_s) in whole steps of `bin_s` (a remainder shorter than a bin
    is dropped: a partial bin would show as a dip); requests ending outside the bins count in
    `Timeline.outside`. `records_unanswered` says whether the source records requests without
    an answer: if not, the unanswered series are None and such an outcome is an error.
    """
    if bin_s <= 0:
        raise ValueError("bin_s must be positive")
    bins = math.floor(duration_s / bin_s + 1e-9)
    if not 1 <= bins <= MAX_BINS:
        raise ValueError(f"duration_s {duration_s} makes {bins} bins of {bin_s} s (1 to {MAX_BINS} allowed)")
    counts = {outcome: [0] * bins for outcome in OUTCOMES}
    outside = 0
    for end_unix_s, outcome in ends:
        if outcome not in counts:
            raise ValueError(f"unknown outcome {outcome!r}; outcomes: {', '.join(OUTCOMES)}")
        if not records_unanswered and outcome in (*UNANSWERED_KINDS, DROPPED):
            raise ValueError(f"{outcome} outcome from a source said not to record unanswered requests")
        # to the nanosecond, so that an end on a bin edge (0.1 s, 0.3 s after the origin) opens its bin
        k = math.floor(round(end_unix_s - origin_unix_s, 9) / bin_s + 1e-9)
        if 0 <= k < bins:
            counts[outcome][k] += 1
        else:
            outside += 1
    unanswered = {kind: (tuple(counts[kind]) if records_unanswered else None) for kind in (*UNANSWERED_KINDS, DROPPED)}
    return Timeline(origin_unix_s=origin_unix_s, bin_s=bin_s, ok_2xx=tuple(counts["ok_2xx"]),
                    non_2xx=tuple(counts["non_2xx"]), outside=outside, engine=engine, **unanswered)


def read_oha_timeline(path: Path, *, zero_unix_s: float, duration_s: float, origin_unix_s: float | None = None,
                      bin_s: float = DEFAULT_BIN_S) -> Timeline:
    """The answered requests of oha's `--db-url` file in bins (unanswered series None: oha does not
    record them per request).

    `zero_unix_s`: wall-clock time of oha's start, the zero of its `start`/`end` columns (take
    time.time() just before starting it). `origin_unix_s`: bin 0's start (default: oha's zero);
    `duration_s`: seconds of bins from there. Raises EngineOutputError when the file is missing or not
    oha's, holds more than one run, or its `run` second disagrees with `zero_unix_s` by a second or more.
    """
    if not path.is_file():
        raise EngineOutputError(f"oha's per-request file {path} is missing")
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            runs = [row[0] for row in conn.execute(f"SELECT DISTINCT run FROM {OHA_TABLE}")]
            rows = conn.execute(f"SELECT end, status FROM {OHA_TABLE}").fetchall()
    except sqlite3.Error as exc:
        raise EngineOutputError(f"oha's per-request file {path.name} unreadable: {exc}") from None
    if len(runs) > 1:
        raise EngineOutputError(f"oha's per-request file {path.name} holds {len(runs)} runs (oha appends to an "
                                "existing file; it must be removed before each window)")
    if runs and not runs[0] - 1 <= zero_unix_s < runs[0] + 1:
        raise EngineOutputError(f"oha's run in {path.name} started in Unix second {runs[0]}, but its zero was "
                                f"given as {zero_unix_s:.3f}: not the same run or not the same clock")
    ends = ((zero_unix_s + end_s, status_outcome(int(status))) for end_s, status in rows)
    return bin_requests(ends, origin_unix_s=zero_unix_s if origin_unix_s is None else origin_unix_s,
                        duration_s=duration_s, bin_s=bin_s, records_unanswered=False, engine="oha")


def k6_json_args(path: Path) -> list[str]:
    """The `k6 run` options that write the per-request file `read_k6_timeline` reads (before the script)."""
    return ["--out", f"json={path}"]


def _lines(path: Path) -> Iterator[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        yield from handle


def k6_request_ends(path: Path) -> Iterator[tuple[float, str]]:
    """(end time in Unix seconds, outcome) of every `http_reqs` point in k6's JSON output, and (due time,
    DROPPED) of every `dropped_iterations` point (one per iteration the open model could not start)."""
    for number, line in enumerate(_lines(path), start=1):
        if '"Point"' not in line or ('"http_reqs"' not in line and '"dropped_iterations"' not in line):
            continue  # a cheap skip of the other ~90 % of lines
        try:
            point = json.loads(line)
            if point.get("type") != "Point" or point.get("metric") not in ("http_reqs", "dropped_iterations"):
                continue
            data = point["data"]
            end_unix_s = datetime.fromisoformat(data["time"]).timestamp()
            if point["metric"] == "dropped_iterations":
                yield from [(end_unix_s, DROPPED)] * int(data.get("value", 1))
                continue
            tags = data.get("tags") or {}
            if "status" not in tags:
                raise EngineOutputError(f"k6 output {path.name} line {number}: no `status` tag (k6 run with "
                                        "--system-tags must keep status and error_code)")
            status = int(tags["status"] or 0)
            code = int(tags["error_code"]) if tags.get("error_code") else None
            value = data.get("value", 1)
        except (ValueError, KeyError, TypeError) as exc:
            raise EngineOutputError(f"k6 output {path.name} line {number}: not an http_reqs point ({exc})") from None
        outcome = status_outcome(status) if status > 0 else k6_error_outcome(code)
        for _ in range(int(value)):
            yield end_unix_s, outcome


def read_k6_timeline(path: Path, *, origin_unix_s: float, duration_s: float,
                     bin_s: float = DEFAULT_BIN_S) -> Timeline:
    """Every request of k6's `--out json=` file in bins, failed ones by kind (k6 stamps each with the
    wall clock, so no zero is needed). Raises EngineOutputError when the file is missing or a request
    line cannot be read."""
    if not path.is_file():
        raise EngineOutputError(f"k6's JSON output {path} is missing")
    try:
        return bin_requests(k6_request_ends(path), origin_unix_s=origin_unix_s, duration_s=duration_s,
                            bin_s=bin_s, records_unanswered=True, engine="k6")
    except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile) as exc:
        raise EngineOutputError(f"k6's JSON output {path.name} unreadable: {exc}") from None
