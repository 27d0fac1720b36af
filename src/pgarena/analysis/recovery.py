"""How a stack came through one injected fault, read from a timeline of its answers in 100 ms bins.

Issue 14's resilience run keeps steady load on a stack and injects a fault in the middle of the window
(PostgreSQL restarted, the stack's connections terminated, the database stalled, connections reset).
`load/timeline.py` turns the generator's per-request records into a `Timeline`; `recovery` reads one fault
out of it and `rank_by_recovery` orders stacks by it. Everything here is pure (no I/O).

Bins. Bin k covers [k·b, (k + 1)·b) seconds from the timeline's origin (b = `bin_s`, 0.1 s by default)
and counts the requests that *ended* in it (load/timeline.py says why end times). Throughput is 2xx
answers only: a non-2xx answer or a request without an answer is a failed request, never throughput.

Fault times are seconds from the timeline's origin: `fault_start_s` when the injection began,
`fault_end_s` when it was over (the database accepts connections again, the stall is released, the
toxic removed; equal to the start for an instantaneous fault such as `pg_terminate_backend`). Neither
has to fall on a bin edge; each definition below says which bins it reads. Figures are therefore exact
to within one bin (0.1 s), which is also why `rank_by_recovery` ties stacks closer than one bin.

The definitions (every published figure means exactly this):

- baseline_rps: 2xx answers per second over the `baseline_window_s` of whole bins that end at or before
  the fault's start (the bin holding the start is not in it).
- first_ok_after_s: from the fault's end to the start of the first bin that starts at or after the end
  and holds a 2xx answer. The bin holding the end is not read (it cannot tell answers before the end
  from answers after it), so answers that resume at once read as the time to the next bin edge (under
  one bin; 0.0 when the end is on an edge). None: no 2xx answer until the timeline's end.
- recovered_after_s: from the fault's end to the start of the first bin b₀ (starting at or after the
  end) such that the 2xx rate over `sustain_s` of bins starting at b₀, and at each of the bins after it
  for `sustain_s` more, is within ±`tolerance` of baseline_rps (|rate − baseline| ≤ tolerance · baseline,
  both sides: a catch-up burst above the baseline, while a backlog drains, is not yet recovery). The rate
  is taken over a second, not per 100 ms bin: a steady stack's single bins scatter more than ±10 % on a
  busy machine, its one-second rate does not; needing it to hold for a second more keeps a burst and a
  dip from averaging out. None when no such run lies wholly within the
  timeline: the stack did not recover within it — a finding (`status` "never-recovered").
- failed_requests: non-2xx answers plus requests without an answer (connection refused, reset,
  timeout, other) that ended from the start of the bin holding the fault's start until the end of the
  sustained run that confirmed recovery (the timeline's end if it never recovered): `failed_until_s`.
  The run is included so that errors while throughput stays normal are counted (a fault that only
  fails the requests in flight). Timeouts end one HTTP timeout after they were sent, so the requests
  the fault caught are counted even when they time out after it. None when the timeline does not
  record requests without an answer (oha's per-request file holds answers only); `errors_by_kind` then
  has `non_2xx` alone.
  Dropped requests (k6's dropped iterations, by the moment each was due) count among them: a stack that
  hangs during a fault holds its connections, so the requests due meanwhile are never sent; they are
  failures as much as a 503 answered at once (issue 22).
- unanswered: the requests without an answer among them (their outcome is unknown: a tx request may
  have committed; pgarena's tx checks allow one extra row per such request, as load/measure.py does).
- answers_continued: every bin from the one holding the fault's start to the first one starting at or
  after its end held a 2xx answer: the stack never went 100 ms without a correct answer.

Status: "recovered"; "never-recovered" (a finding); "no-baseline" (no 2xx answer before the fault, so
recovery is undefined); "unsteady-baseline" (it did not recover by the rule, but its own baseline has no
`sustain_s` run of bins within tolerance either: at this rate the bins are too noisy to tell, so no
finding is claimed). Only "recovered" and "never-recovered" are ranked.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from pgarena.stats.intervals import rank_with_ties

DEFAULT_BIN_S = 0.1
"""Timeline resolution (seconds): the width of one bin."""
DEFAULT_BASELINE_WINDOW_S = 5.0
"""Seconds of steady load before the fault whose 2xx rate is the baseline."""
DEFAULT_TOLERANCE = 0.10
"""Recovered means within ± this share of the baseline's 2xx rate."""
DEFAULT_SUSTAIN_S = 1.0
"""Recovered means within tolerance for this long without a break."""

UNANSWERED_KINDS = ("connect", "reset", "timeout", "other")
"""Failed requests without an HTTP answer, by kind: `connect` no connection could be made (refused, dial
timeout: the request never reached the stack); `reset` the connection broke after it was made (reset
by peer, broken pipe); `timeout` no answer within the HTTP timeout; `other` any other transport error.
pgarena's `results.models.Errors.connect` is `connect + reset` (load/engines counts TCP errors as one)."""
DROPPED = "dropped"
"""Requests the open model scheduled but the generator never sent: every VU was still waiting on an earlier
request (k6's `dropped_iterations`, by the moment each was due). A stack that hangs during a fault makes
its requests wait and the rest be dropped; one that answers 503 at once fails them. Both are failed."""
ERROR_KINDS = ("non_2xx", *UNANSWERED_KINDS, DROPPED)
"""Every kind of failed request: an answer with a non-2xx status, no answer at all, or never sent."""

NOT_RANKED = "–"
"""The rank of a fault whose recovery is undefined (same mark as analysis/ranking.UNRANKED)."""

_EPS = 1e-9

Status = Literal["recovered", "never-recovered", "no-baseline", "unsteady-baseline"]
RANKED_STATUSES: tuple[Status, ...] = ("recovered", "never-recovered")


class RecoveryUndefined(ValueError):
    """The timeline cannot answer the question: too little of it before the fault for a baseline, or
    after it for the sustained run (the fault was injected too close to an edge of the window)."""


@dataclass(frozen=True)
class Timeline:
    """Requests of one load window by the 100 ms bin they ended in (analysis counts; load/timeline.py
    reads them from a generator's per-request records).

    Every per-bin series has one count per bin, bin k covering [k·bin_s, (k + 1)·bin_s) seconds after
    `origin_unix_s`. The unanswered series (`connect`, `reset`, `timeout`, `other`) are all None when the
    generator does not record requests without an answer per request (oha): their times are unknown,
    and a zero there would claim that none failed.
    """

    origin_unix_s: float
    """Wall-clock time (Unix seconds) of bin 0's start: the window's start."""
    bin_s: float
    """Width of one bin (seconds)."""
    ok_2xx: tuple[int, ...]
    """Answers with a 2xx status that ended in each bin."""
    non_2xx: tuple[int, ...]
    """Answers with any other status that ended in each bin."""
    connect: tuple[int, ...] | None = None
    """Requests that got no connection (refused, dial timeout), by the bin their attempt ended in."""
    reset: tuple[int, ...] | None = None
    """Requests whose connection broke before an answer (reset by peer, broken pipe)."""
    timeout: tuple[int, ...] | None = None
    """Requests without an answer within the HTTP timeout, by the bin the timeout expired in."""
    other: tuple[int, ...] | None = None
    """Requests that failed without an answer for any other reason."""
    dropped: tuple[int, ...] | None = None
    """Requests due but never sent (DROPPED), by the bin they were due in (None: not recorded; read as none
    when the unanswered series are given, e.g. a closed-model timeline)."""
    outside: int = 0
    """Requests that ended before the origin or after the last bin (not in any bin): e.g. requests still
    in flight when the window closed, which the generators let finish."""
    engine: str = ""
    """The load generator the records came from ("oha", "k6"; "" for a crafted timeline)."""

    def __post_init__(self) -> None:
        if not self.bin_s > 0:
            raise ValueError(f"bin width must be positive, got {self.bin_s}")
        n = len(self.ok_2xx)
        present = [kind for kind in UNANSWERED_KINDS if getattr(self, kind) is not None]
        if present and len(present) != len(UNANSWERED_KINDS):
            raise ValueError(f"unanswered series must be all given or all None, got only {present}")
        if self.dropped is not None and not present:
            raise ValueError("a dropped series needs the unanswered series (the same source records both)")
        for name in ("ok_2xx", "non_2xx", *present, *(["dropped"] if self.dropped is not None else [])):
            series = tuple(int(v) for v in getattr(self, name))
            if len(series) != n:
                raise ValueError(f"series {name} has {len(series)} bins, ok_2xx has {n}")
            if any(v < 0 for v in series):
                raise ValueError(f"series {name} has a negative count")
            object.__setattr__(self, name, series)
        if self.outside < 0:
            raise ValueError("outside must not be negative")

    @property
    def bins(self) -> int:
        """Number of bins."""
        return len(self.ok_2xx)

    @property
    def duration_s(self) -> float:
        """Seconds the bins cover."""
        return self.bins * self.bin_s

    @property
    def records_unanswered(self) -> bool:
        """True when requests without an answer are in the bins (k6), False when unknown (oha)."""
        return self.connect is not None

    def series(self, kind: str) -> tuple[int, ...] | None:
        """The per-bin counts of one kind: "ok_2xx" or one of ERROR_KINDS (None: not recorded)."""
        if kind != "ok_2xx" and kind not in ERROR_KINDS:
            raise ValueError(f"unknown kind {kind!r}; kinds: ok_2xx, {', '.join(ERROR_KINDS)}")
        return getattr(self, kind)

    def ok_rps(self) -> list[float]:
        """2xx answers per second in each bin (the throughput series a chart shows)."""
        return [count / self.bin_s for count in self.ok_2xx]

    def failed(self) -> list[int] | None:
        """Failed requests in each bin (every ERROR_KINDS kind); None when unanswered ones are unknown."""
        if not self.records_unanswered:
            return None
        return [sum(values) for values in zip(*(getattr(self, kind) for kind in self.recorded_errors()), strict=True)]

    def recorded_errors(self) -> tuple[str, ...]:
        """The ERROR_KINDS this timeline has a series of."""
        return tuple(kind for kind in ERROR_KINDS if getattr(self, kind) is not None)

    def seconds_after_origin(self, unix_s: float) -> float:
        """A wall-clock time (Unix seconds, e.g. when a fault was injected) as seconds from the origin."""
        return unix_s - self.origin_unix_s


@dataclass(frozen=True)
class Recovery:
    """One fault as the timeline saw it. The module docstring defines every figure; times in seconds."""

    status: Status
    """recovered, never-recovered (a finding), no-baseline or unsteady-baseline (see the module docstring)."""
    fault_start_s: float
    """Fault start, seconds from the timeline's origin."""
    fault_end_s: float
    """Fault end, seconds from the timeline's origin."""
    bin_s: float
    """The timeline's bin width: the resolution of every time below."""
    tolerance: float
    """Recovered means a 2xx rate within ± this share of baseline_rps."""
    sustain_s: float
    """… for this long, in whole bins."""
    baseline_rps: float
    """2xx answers per second in the baseline bins before the fault."""
    baseline_s: float
    """Seconds of bins the baseline covers."""
    baseline_within_share: float
    """Share of the one-second rates inside the baseline within tolerance of baseline_rps (how steady the
    load is at this rate; 1.0 = every one)."""
    baseline_failed: int | None
    """Failed requests in the baseline bins (None: unanswered ones not recorded)."""
    first_ok_after_s: float | None
    """Fault end → the first bin after it with a 2xx answer (None: none until the timeline's end)."""
    recovered_after_s: float | None
    """Fault end → the start of the sustained run within tolerance (None: not within the timeline)."""
    failed_requests: int | None
    """Non-2xx answers and requests without an answer from the fault's start to failed_until_s (None:
    the timeline does not record requests without an answer)."""
    failed_until_s: float
    """End (seconds from the origin) of the span failed_requests and errors_by_kind count, which starts
    at the start of the bin holding the fault's start."""
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    """Failed requests in that span by kind (ERROR_KINDS; `non_2xx` alone when unanswered ones are not
    recorded)."""
    unanswered: int | None = None
    """Of failed_requests, those without an answer: unknown outcome (None: not recorded)."""
    answers_continued: bool = False
    """A 2xx answer in every bin from the fault's start to the first bin after its end."""

    @property
    def recovered(self) -> bool:
        """The stack got back to its baseline within the timeline, without a restart."""
        return self.status == "recovered"

    @property
    def ranked(self) -> bool:
        """The recovery is defined (recovered or never-recovered), so it takes a rank."""
        return self.status in RANKED_STATUSES


def _floor_bin(t: float, bin_s: float) -> int:
    return math.floor(t / bin_s + _EPS)


def _ceil_bin(t: float, bin_s: float) -> int:
    return math.ceil(t / bin_s - _EPS)


def _bins_for(seconds: float, bin_s: float) -> int:
    """Whole bins needed to cover `seconds` (at least one)."""
    return max(1, _ceil_bin(seconds, bin_s))


def _seconds(value: float) -> float:
    """A time rounded to the nanosecond, so 0.30000000000000004 prints as 0.3."""
    return round(value, 9) + 0.0


def _runs_within(within: Sequence[bool], length: int) -> list[int]:
    """Start indices i where within[i : i + length] are all True."""
    starts, run = [], 0
    for i, ok in enumerate(within):
        run = run + 1 if ok else 0
        if run >= length:
            starts.append(i - length + 1)
    return starts


def recovery(timeline: Timeline, fault_start_s: float, fault_end_s: float, *,
             baseline_window_s: float = DEFAULT_BASELINE_WINDOW_S, tolerance: float = DEFAULT_TOLERANCE,
             sustain_s: float = DEFAULT_SUSTAIN_S) -> Recovery:
    """Baseline, failed requests, first answer and recovery time of the fault injected from
    `fault_start_s` to `fault_end_s` (seconds from the timeline's origin), as the module docstring defines
    them. Raises RecoveryUndefined when the timeline holds less than `baseline_window_s` before the fault
    or less than `sustain_s` after it, ValueError for arguments that make no sense."""
    b = timeline.bin_s
    if not 0 <= fault_start_s <= fault_end_s <= timeline.duration_s + _EPS:
        raise ValueError(f"fault {fault_start_s}–{fault_end_s} s does not lie in the timeline "
                         f"(0–{timeline.duration_s:g} s) with its start before its end")
    if not 0 < tolerance < 1:
        raise ValueError(f"tolerance is a share of the baseline in (0, 1), got {tolerance}")
    if baseline_window_s <= 0 or sustain_s <= 0:
        raise ValueError("baseline_window_s and sustain_s must be positive")
    window_bins, sustain_bins = _bins_for(baseline_window_s, b), _bins_for(sustain_s, b)
    start_bin = _floor_bin(fault_start_s, b)  # holds the fault's start (bins before it end at or before it)
    after_bin = _ceil_bin(fault_end_s, b)  # the first bin starting at or after the fault's end
    if start_bin < window_bins:
        raise RecoveryUndefined(
            f"the fault starts {fault_start_s:g} s into the timeline: {start_bin * b:g} s of whole bins "
            f"before it, the baseline needs {window_bins * b:g} s (baseline_window_s)")
    if timeline.bins - after_bin < 2 * sustain_bins - 1:
        raise RecoveryUndefined(
            f"the fault ends {timeline.duration_s - fault_end_s:g} s before the timeline does: judging "
            f"recovery needs at least {2 * sustain_bins * b:g} s (twice sustain_s) after it")

    ok = timeline.ok_2xx
    baseline = range(start_bin - window_bins, start_bin)
    per_bin = sum(ok[k] for k in baseline) / window_bins  # 2xx per bin
    # the 2xx rate over each second (sustain_bins) starting at bin k; k is within when it is within tolerance
    means = [sum(ok[k:k + sustain_bins]) / sustain_bins if k + sustain_bins <= timeline.bins else math.nan
             for k in range(timeline.bins)]
    within = [not math.isnan(m) and abs(m - per_bin) <= tolerance * per_bin + _EPS for m in means]
    failed = timeline.failed()
    steady_positions = range(start_bin - window_bins, start_bin - sustain_bins + 1)  # seconds inside the baseline

    first_ok = next((k for k in range(after_bin, timeline.bins) if ok[k] > 0), None)
    runs = _runs_within(within[after_bin:], sustain_bins)
    recovered_bin = after_bin + runs[0] if runs and per_bin > 0 else None
    if per_bin == 0:
        status: Status = "no-baseline"
    elif recovered_bin is not None:
        status = "recovered"
    elif _runs_within([within[k] for k in steady_positions], sustain_bins):
        status = "never-recovered"
    else:
        status = "unsteady-baseline"

    span_end = recovered_bin + sustain_bins if recovered_bin is not None else timeline.bins
    span = range(start_bin, span_end)
    kinds = timeline.recorded_errors()
    by_kind = {kind: sum(getattr(timeline, kind)[k] for k in span) for kind in kinds}
    return Recovery(
        status=status,
        fault_start_s=fault_start_s,
        fault_end_s=fault_end_s,
        bin_s=b,
        tolerance=tolerance,
        sustain_s=sustain_bins * b,
        baseline_rps=per_bin / b,
        baseline_s=_seconds(window_bins * b),
        baseline_within_share=(sum(within[k] for k in steady_positions) / len(steady_positions)
                               if per_bin > 0 and len(steady_positions) else 0.0),
        baseline_failed=sum(failed[k] for k in baseline) if failed is not None else None,
        first_ok_after_s=_seconds(max(0.0, first_ok * b - fault_end_s)) if first_ok is not None else None,
        recovered_after_s=(_seconds(max(0.0, recovered_bin * b - fault_end_s))
                           if recovered_bin is not None else None),
        failed_requests=sum(by_kind.values()) if timeline.records_unanswered else None,
        failed_until_s=_seconds(span_end * b),
        errors_by_kind=by_kind,
        unanswered=sum(by_kind[kind] for kind in UNANSWERED_KINDS) if timeline.records_unanswered else None,
        answers_continued=all(ok[k] > 0 for k in range(start_bin, after_bin + 1)),
    )


K = TypeVar("K")


@dataclass(frozen=True)
class RecoveryTime:
    """What `rank_by_recovery` reads of a recovery, and all a stored result keeps of it for ranking: the
    status, the seconds from the fault's end until recovered (None: not recovered) and the timeline's bin
    width in seconds. A `Recovery` carries the same three."""

    status: str
    recovered_after_s: float | None
    bin_s: float


@dataclass(frozen=True)
class RecoveryRank(Generic[K]):
    """One stack's place in a resilience table."""

    key: K
    recovery: Recovery | RecoveryTime
    rank: str
    """"1", a range "2–3" where recovery times are within one bin of each other (they could be in either
    order), the range shared by every stack that never recovered, or NOT_RANKED ("–")."""


def rank_by_recovery(items: Iterable[tuple[K, Recovery | RecoveryTime]]) -> list[RecoveryRank[K]]:
    """Stacks ordered by recovery time, faster first; every stack that never recovered after them (tied
    with each other); unranked ones (no or unsteady baseline) last with NOT_RANKED.

    Ties: two recovery times within one bin of each other (|a − b| ≤ bin_s) cannot be told apart at the
    timeline's resolution. Ranks are ranges in the sense of `stats.rank_with_ties`: each recovered stack
    is treated as the interval [t, t + bin_s] and gets every rank an order consistent with those
    intervals allows (0.3 s and 0.35 s: "1–2" both; then 1.0 s: "3"). Stacks that never recovered count
    as infinitely slow. All recoveries must come from timelines with the same bin width.
    """
    items = list(items)
    widths = {round(rec.bin_s, 9) for _, rec in items}
    if len(widths) > 1:
        raise ValueError(f"recoveries from timelines with different bin widths: {sorted(widths)} s")
    ranked = [(i, rec) for i, (_, rec) in enumerate(items) if rec.status in RANKED_STATUSES]
    intervals = []
    for i, rec in ranked:
        if rec.status == "recovered":
            t = rec.recovered_after_s or 0.0
            # rank_with_ties ranks higher first; _EPS: exactly one bin apart is a tie despite float sums
            intervals.append((i, -(t + rec.bin_s + _EPS), -t, -t))
        else:
            intervals.append((i, -math.inf, -math.inf, -math.inf))
    out = [RecoveryRank(items[i][0], items[i][1], label) for i, label in rank_with_ties(intervals)]
    out += [RecoveryRank(key, rec, NOT_RANKED) for key, rec in items if rec.status not in RANKED_STATUSES]
    return out
