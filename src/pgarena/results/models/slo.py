"""The max sustainable throughput of a stack × workload under an SLO, and the curve it was searched on."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pgarena.results.models.base import Record
from pgarena.results.models.window import Latency


class SloPoint(Record):
    """One measured level of an SLO search."""

    level: float = Field(description="arrival rate (requests/s) or VUs")
    rps: float
    latency: Latency
    error_rate: float
    dropped: int = 0
    timeouts: int = Field(0, description="requests that hit the HTTP timeout: any fails the step")
    passed: bool


class SloSearchResult(Record):
    """Max sustainable throughput of one stack × workload × parameter under an SLO (slo.py)."""

    stack: str
    workload: str
    parameter_name: str | None
    parameter: int | None
    model: Literal["closed", "open"]
    slo_p99_ms: float
    slo_max_error_rate: float
    window_seconds: float
    curve: list[SloPoint] = Field(description="every measured level in the order measured")
    answer_level: float | None = Field(description="highest level that met the SLO (None: none did)")
    answer_rps: float | None
    bracket_low: float = Field(description="the limit lies between the last passing level ...")
    bracket_high: float | None = Field(description="... and the first failing one (None: none failed)")
    stop_reason: str
    error: str | None = None
    engine: str | None = Field(None, description="load generator that measured the curve (None: older results)")
