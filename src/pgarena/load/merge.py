"""Several k6 processes' outputs of one window merged exactly into one LoadOutcome (docs/distributed.md).

Each place (one k6 process running one execution segment) leaves two files: its handleSummary JSON
(k6_script.js) and its raw samples (`--out csv=`). The merge
- sums the counts of the summaries: the script's classified requests (2xx, non-2xx, connect errors,
  timeouts, other), its checks and k6's `dropped_iterations`;
- computes every latency figure from the UNION of the places' `pgarena_latency` samples — the trend k6's
  summary uses for pgarena, in which a request without an answer counts at the timeout at least — never
  from the places' percentiles (a percentile of percentiles is not a percentile of the requests).

Estimator: k6's own for trends (lib/metrics/sink.go `TrendSink.P`), linear interpolation between the
closest ranks at position q·(N − 1) of the N sorted values — `statistics.quantiles(method="inclusive")`,
which engines/latency.py `from_durations` already uses for oha (and numpy.percentile's default "linear"
method computes the same). k6's CSV output writes each value with 6 decimals (a nanosecond of a
millisecond), so a figure from the samples differs from k6's own summary by less than 1e-6 ms.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pgarena.load.engines.base import EngineOutputError, LoadOutcome
from pgarena.load.engines.latency import censored_fields, from_durations
from pgarena.load.engines.outputs import K6Summary, parse_output
from pgarena.results.models import Errors, Latency

LATENCY_METRIC = "pgarena_latency"
"""The k6_script.js trend of request latency (ms) whose samples are merged."""

MERGE_METHOD = ("counts summed over the places' k6 summaries; latency percentiles, average and maximum from the "
                "union of their pgarena_latency samples (k6's linear interpolation between closest ranks)")


@dataclass(frozen=True)
class PlaceCounts:
    """The counts of one place's k6 summary (zero requests allowed: a segment with no VU sends nothing)."""

    answered_2xx: int
    errors: Errors
    checks_total: int
    checks_failed: int
    dropped: int | None
    duration_s: float

    @property
    def requests(self) -> int:
        return self.answered_2xx + self.errors.total


@dataclass(frozen=True)
class PlaceOutput:
    """One place's output of one window: its name, its summary's counts and its latency samples (ms)."""

    name: str
    counts: PlaceCounts
    latencies_ms: Sequence[float]


@dataclass(frozen=True)
class PlaceResult:
    """One place's own figures (its own samples only)."""

    name: str
    counts: PlaceCounts
    p50_ms: float | None
    p99_ms: float | None

    @property
    def rps(self) -> float:
        return self.counts.answered_2xx / self.counts.duration_s if self.counts.duration_s else 0.0


@dataclass(frozen=True)
class Merged:
    """The merged window and each place's own figures."""

    outcome: LoadOutcome
    places: list[PlaceResult]


def summary_counts(summary: dict) -> PlaceCounts:
    """The counts of one k6_script.js summary (k6 v1 layout). Unlike `parse_k6_summary` a place that sent
    nothing is not an error here: the merged window decides."""
    out = parse_output(K6Summary, summary, "k6")
    duration_s = out.state.test_run_duration_ms / 1000
    if duration_s <= 0:
        raise EngineOutputError("k6 summary has no state.testRunDurationMs")
    return PlaceCounts(
        answered_2xx=out.count("pgarena_2xx"),
        errors=Errors(non_2xx=out.count("pgarena_non_2xx"), connect=out.count("pgarena_connect_errors"),
                      timeout=out.count("pgarena_timeouts"), other=out.count("pgarena_other_errors")),
        checks_total=out.count("pgarena_checks"), checks_failed=out.count("pgarena_checks_failed"),
        dropped=out.count("dropped_iterations") if "dropped_iterations" in out.metrics else None,
        duration_s=duration_s)


def _text_lines(path: Path) -> Iterator[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="") as handle:
        yield from handle


def read_latency_samples(path: Path, metric: str = LATENCY_METRIC) -> list[float]:
    """Every sample of `metric` in k6's CSV output (`--out csv=`, gzipped when the name ends in .gz), in ms.

    k6's CSV columns start with metric_name, timestamp, metric_value (then the system tags kept). Raises
    EngineOutputError when the file is missing, has no such header, or a row of `metric` is malformed."""
    if not path.is_file():
        raise EngineOutputError(f"k6's CSV output {path} is missing")
    values: list[float] = []
    try:
        lines = _text_lines(path)
        header = next(csv.reader([next(lines, "")]), [])
        if header[:3] != ["metric_name", "timestamp", "metric_value"]:
            raise EngineOutputError(f"{path.name} is not k6's CSV output (header {header[:3]})")
        prefix = metric + ","
        for number, line in enumerate(lines, start=2):
            if not line.startswith(prefix):  # cheap skip of every other metric (~14 of 15 lines)
                continue
            try:
                values.append(float(next(csv.reader(io.StringIO(line)))[2]))
            except (ValueError, IndexError, StopIteration):
                raise EngineOutputError(f"{path.name} line {number}: not a {metric} sample") from None
    except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile) as exc:
        raise EngineOutputError(f"k6's CSV output {path.name} unreadable: {exc}") from None
    return values


def _percentiles(values: Sequence[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    latency = from_durations(values, 0, 0.0)
    return latency.p50_ms, latency.p99_ms


def merge(parts: Sequence[PlaceOutput], timeout_ms: float | None = None) -> Merged:
    """The window of several places: counts summed, latency from the union of their samples.

    Every place's sample count must equal its classified requests (one pgarena_latency sample per
    request the script classified), or the outputs do not belong together: EngineOutputError. The
    window's duration is the longest place's (their start skew is recorded apart, not added); figures
    that reach requests without an answer are marked censored as for one generator (engines/latency.py).
    With `timeout_ms`, k6's dropped iterations count in the latency at it, after every request, as for one
    generator (engines/latency.py, fold_dropped).
    """
    if not parts:
        raise ValueError("nothing to merge")
    for part in parts:
        if len(part.latencies_ms) != part.counts.requests:
            raise EngineOutputError(
                f"{part.name}: {len(part.latencies_ms)} {LATENCY_METRIC} samples for {part.counts.requests} "
                "requests in its summary (the raw samples and the summary are not of the same run)")
    counts = [p.counts for p in parts]
    answered = sum(c.answered_2xx for c in counts)
    errors = Errors(non_2xx=sum(c.errors.non_2xx for c in counts), connect=sum(c.errors.connect for c in counts),
                    timeout=sum(c.errors.timeout for c in counts), other=sum(c.errors.other for c in counts))
    duration_s = max(c.duration_s for c in counts)
    if answered + errors.non_2xx == 0:
        raise EngineOutputError(
            f"k6 received no HTTP response in {duration_s:.1f} s on {len(parts)} generators "
            f"(connect errors {errors.connect}, timeouts {errors.timeout}, other {errors.other})")
    union = [value for part in parts for value in part.latencies_ms]
    dropped = [c.dropped for c in counts if c.dropped is not None]
    folded = sum(dropped) if timeout_ms is not None else 0
    latency: Latency = from_durations(union, folded, timeout_ms or 0.0)
    latency.censored = censored_fields(answered + errors.non_2xx, errors.unanswered + folded)
    outcome = LoadOutcome(
        requests=answered + errors.total, duration_seconds=duration_s, latency=latency, errors=errors,
        status_codes={"2xx": answered, "non-2xx": errors.non_2xx},
        checks_total=sum(c.checks_total for c in counts), checks_failed=sum(c.checks_failed for c in counts),
        dropped=sum(dropped) if dropped else None)
    places = [PlaceResult(p.name, p.counts, *_percentiles(p.latencies_ms)) for p in parts]
    return Merged(outcome=outcome, places=places)

