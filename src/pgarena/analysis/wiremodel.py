"""The round trip's predicted cost: the throughput a stack should lose when PostgreSQL moves `r` ms away,
from the round trips per request the wire observer counted, beside the loss --db-rtt measured (issue 25).

Model (Little's law for a closed system, as in Jain, *The Art of Computer Systems Performance Analysis*,
1991, ch. 33 "Operational laws"): N = min(VUs, pool size) requests hold a database connection at any time;
at the smallest round trip r0 each takes N / X0 seconds of a connection (X0: its 2xx/s there); at r each also
waits k·(r − r0) more, k its round trips per request. So X(r) = N / (N / X0 + k·(r − r0)), and the predicted
loss is 1 − X(r)/X0 = k·Δr·X0 / (N + k·Δr·X0). It assumes the added wait is not hidden by a queue elsewhere
(a CPU-bound stack with more VUs than it can serve loses less) and that the proxy adds exactly r; the measured
round trips of --db-rtt's proxy (NetworkInfo.overhead) are larger than the configured ones by its timer
wake-ups, which the prediction uses when they were recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

from pgarena.analysis.rtt import rtt_rows
from pgarena.results.models import RunResults

AGREEMENT = 0.20
"""Predicted and measured losses agree when they differ by at most this share of the measured loss."""


def predicted_loss(round_trips: float, added_ms: float, rps: float, concurrency: int) -> float:
    """The share of throughput lost (0..1) when each of `round_trips` per request waits `added_ms` longer,
    at `rps` 2xx/s before and `concurrency` requests holding a connection (see the module docstring)."""
    if concurrency <= 0 or rps <= 0:
        raise ValueError("concurrency and rps must be positive")
    added_s = round_trips * max(added_ms, 0.0) / 1000
    return added_s * rps / (concurrency + added_s * rps)


@dataclass(frozen=True)
class RoundTripModelRow:
    """One stack × workload × level at one added round trip: the loss predicted and the loss measured."""

    stack: str
    workload: str
    parameter: int | None
    vus: int
    concurrency: int
    rtt_ms: float
    """The round trip --db-rtt configured (ms)."""
    added_ms: float
    """The round trip the model uses over the smallest one's (ms): measured through the proxy when recorded."""
    round_trips_per_request: float
    predicted_loss: float
    measured_loss: float

    @property
    def agrees(self) -> bool:
        """Within ±AGREEMENT of the measured loss."""
        if self.measured_loss <= 0:
            return self.predicted_loss <= AGREEMENT * 0.05
        return abs(self.predicted_loss - self.measured_loss) <= AGREEMENT * self.measured_loss


def _measured_rtt_ms(results: RunResults) -> dict[float, float]:
    """configured round trip (ms) → what the proxy added to the median round trip there (ms), where recorded
    (system/toxiproxy.ProxyOverhead: `configured_rtt_ms`, `added_median_us`)."""
    if results.network is None:
        return {}
    out = {}
    for entry in results.network.overhead:
        rtt, measured = entry.get("configured_rtt_ms"), entry.get("added_median_us")
        if rtt is not None and measured is not None:
            out[float(rtt)] = measured / 1000
    return out


def round_trip_model(results: RunResults) -> list[RoundTripModelRow]:
    """Every --db-rtt series whose stack and workload have a wire profile, one row per added round trip."""
    _, series = rtt_rows(results)
    measured = _measured_rtt_ms(results)
    pool_default = results.config.get("pool_size") or 0
    rows = []
    for s in series:
        verification = results.verification(s.stack, s.workload)
        if verification is None or verification.wire is None:
            continue
        base = min(s.rps)
        concurrency = min(s.vus, s.pool_size or pool_default or s.vus)
        for rtt in sorted(s.rps):
            if rtt == base or s.rps[base] <= 0:
                continue
            added = measured.get(rtt, rtt) - measured.get(base, base)
            k = verification.wire.round_trips_per_request
            rows.append(RoundTripModelRow(
                stack=s.stack, workload=s.workload, parameter=s.parameter, vus=s.vus, concurrency=concurrency,
                rtt_ms=rtt, added_ms=added, round_trips_per_request=k,
                predicted_loss=predicted_loss(k, added, s.rps[base], concurrency),
                measured_loss=1 - s.rps[rtt] / s.rps[base]))
    return rows
