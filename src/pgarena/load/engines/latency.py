"""Latency with the failed requests in it: every request that got no answer (timeout, connection error,
other transport error) counts at the HTTP timeout, for both engines the same way (docs/methodology.md,
"Latency").

A request that got no answer has no latency of its own, only a lower bound: it waited at least until the
timeout (a refused connection fails at once, but its user never got an answer either). pgarena therefore
puts each such request into the distribution at the timeout and marks every figure that such a value
reaches as a *lower bound* (`Latency.censored`; the reports print "≥").

Estimator: the one k6 uses for its trends — linear interpolation between the closest ranks, the value at
position q·(N − 1) of the N sorted values — which is Python's `statistics.quantiles(method="inclusive")`.
With S answered and F failed requests (N = S + F, the failed ones sorted last), percentile q is exact
when q·(N − 1) ≤ S − 1 (it reads answered requests only) and a lower bound otherwise; when
q·(N − 1) ≥ S it reads failed requests only and is reported as the timeout. The average and the
maximum are lower bounds whenever F > 0.

Dropped requests (open model: scheduled, but not sent or not answered by the window's end — oha's
offered minus completed, k6's `dropped_iterations`) count the same way (fold_dropped): each got no answer
by the window's end, so it is one more request without an answer, at the timeout, after every other.
Leaving them out let a stack that drops near saturation show a lower p99 than one that answers late.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence

from pgarena.results.models import Latency

PERCENTILE_FIELDS: dict[str, float] = {"p50_ms": 0.50, "p90_ms": 0.90, "p95_ms": 0.95, "p99_ms": 0.99}
"""The Latency fields that are percentiles, and their quantile."""


def censored_fields(answered: int, failed: int) -> list[str]:
    """The Latency fields that are lower bounds when `failed` of `answered + failed` requests count at
    the timeout (empty when nothing failed)."""
    if failed <= 0:
        return []
    last = answered + failed - 1
    fields = [name for name, q in PERCENTILE_FIELDS.items() if q * last > answered - 1]
    return ["avg_ms", *fields, "max_ms"]


def _at_least_timeout(q: float, answered: int, failed: int) -> bool:
    """Percentile q reads failed requests only (both neighbouring ranks are failed ones)."""
    return failed > 0 and math.floor(q * (answered + failed - 1)) >= answered


def from_durations(durations_ms: Sequence[float], failed: int, timeout_ms: float) -> Latency:
    """Exact figures from every answered request's latency (ms) and the count of requests without an
    answer, each counted at `timeout_ms` (or its own duration if longer)."""
    values = sorted([*durations_ms, *[timeout_ms] * failed])
    if not values:
        raise ValueError("no request to compute a latency from")
    if len(values) == 1:
        cuts = {name: values[0] for name in PERCENTILE_FIELDS}
    else:
        points = statistics.quantiles(values, n=100, method="inclusive")
        cuts = {name: points[round(q * 100) - 1] for name, q in PERCENTILE_FIELDS.items()}
    return Latency(avg_ms=statistics.fmean(values), max_ms=values[-1], **cuts,
                   censored=censored_fields(len(durations_ms), failed))


def from_summary(*, answered_quantile: Callable[[float], float], avg_ms: float, max_ms: float, answered: int,
                 failed: int, timeout_ms: float | None) -> Latency:
    """The documented rule for when only an engine's summary of the answered requests is known (oha's
    JSON without its per-request file, k6 summaries from before `pgarena_latency`).

    With f = F / N: a percentile q that reads failed requests only is the timeout; a lower one is the
    answered requests' quantile at q / (1 − f), as `answered_quantile` gives it (the caller says how it
    reads a quantile the engine did not list). avg counts the failed requests at the timeout; max is
    the timeout when anything failed. Figures touched by failed requests are marked censored.
    """
    total = answered + failed
    share = failed / total if total else 0.0
    cuts = {}
    for name, q in PERCENTILE_FIELDS.items():
        if timeout_ms is not None and _at_least_timeout(q, answered, failed):
            cuts[name] = timeout_ms
        else:
            cuts[name] = answered_quantile(min(1.0, q / (1 - share)) if share < 1 else 1.0)
    if timeout_ms is not None and failed:
        avg_ms = (avg_ms * answered + timeout_ms * failed) / total
        max_ms = max(max_ms, timeout_ms)
    return Latency(avg_ms=avg_ms, max_ms=max_ms, **cuts, censored=censored_fields(answered, failed))



def raise_to_timeout(latency: Latency, answered: int, failed: int, timeout_s: float | None) -> Latency:
    """A distribution over every request in which a failed one may sit below the timeout (k6's
    `http_req_duration`: a refused connection at ~0 ms): percentiles that read failed requests only and
    the maximum are raised to the timeout; figures touched by failed requests are marked censored."""
    values = latency.model_dump()
    values["censored"] = censored_fields(answered, failed)
    if timeout_s is not None and failed:
        timeout_ms = timeout_s * 1000
        for name, q in PERCENTILE_FIELDS.items():
            if _at_least_timeout(q, answered, failed):
                values[name] = max(values[name], timeout_ms)
        values["max_ms"] = max(values["max_ms"], timeout_ms)
    return Latency(**values)


def _interpolated(points: list[tuple[float, float]], share: float) -> float:
    """The quantile `share` between the listed (quantile, value) points around it (the first below the
    lowest listed one)."""
    below = [(p, v) for p, v in points if p <= share]
    above = [(p, v) for p, v in points if p >= share]
    if not below or not above:
        return (above or below)[0][1]
    (p0, v0), (p1, v1) = below[-1], above[0]
    return v0 if p1 == p0 else v0 + (share - p0) / (p1 - p0) * (v1 - v0)


def fold_dropped(latency: Latency, listed: dict[float, float], *, counted: int, responses: int, unanswered: int,
                 dropped: int, timeout_ms: float) -> Latency:
    """`latency` of the `counted` requests (`responses` answered, `unanswered` at the timeout) with `dropped`
    more requests added at `timeout_ms`, sorted after all of them (module docstring).

    `listed` maps quantiles of the counted requests to their values in ms (1.0: the maximum). Percentile q
    now sits at position r = q·(counted + dropped − 1): beyond the counted requests it is the timeout (or
    the interpolation between their maximum and it); among them it is their quantile r / (counted − 1),
    interpolated linearly between the two listed quantiles around it (k6 lists p50, p90, p95, p99, p99.5,
    p99.9, p99.99 and the maximum, so below the 1 % of drops a valid cell allows, p99 lies between p99 and
    p99.5 of the answered requests). The average counts the dropped requests at the timeout; the maximum is
    at least the timeout."""
    if dropped <= 0 or counted <= 0:
        return latency
    total = counted + dropped
    top = max(listed.get(1.0, latency.max_ms), latency.max_ms)
    points = sorted({**listed, 1.0: top}.items())
    cuts = {}
    for name, q in PERCENTILE_FIELDS.items():
        position = q * (total - 1)
        if position >= counted:
            cuts[name] = timeout_ms
        elif position > counted - 1:  # between the last counted request and the first dropped one
            cuts[name] = top + (position - (counted - 1)) * (timeout_ms - top)
        else:
            cuts[name] = _interpolated(points, position / (counted - 1))
    return Latency(avg_ms=(latency.avg_ms * counted + timeout_ms * dropped) / total, max_ms=max(top, timeout_ms),
                   **cuts, censored=censored_fields(responses, unanswered + dropped))
