"""The generators' own JSON, parsed into small models: a field pgarena reads and the generator did not
write is an EngineOutputError naming it, never a silent 0 ms.

Only the fields pgarena uses are declared (others are ignored, so a newer generator that adds fields
still parses). Where a generator legitimately leaves something out, the model says so explicitly:
oha writes `null` latencies when no request was answered; k6 omits a counter that never counted.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pgarena.load.engines.base import EngineOutputError


class _Output(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class OhaSummary(_Output):
    """oha's `summary` block (seconds)."""

    total: float = Field(description="wall time of the run")
    average: float | None = Field(description="mean latency of answered requests; null when none was answered")
    slowest: float | None = Field(description="slowest answered request; null when none was answered")


class OhaOutput(_Output):
    """oha's `--output-format json` document."""

    summary: OhaSummary
    latency_percentiles: dict[str, float | None] = Field(alias="latencyPercentiles")
    status_code_distribution: dict[str, int] = Field(alias="statusCodeDistribution")
    error_distribution: dict[str, int] = Field(alias="errorDistribution")


class K6Trend(_Output):
    """A k6 trend's statistics (milliseconds), as k6_script.js asks for them (summaryTrendStats)."""

    avg: float
    med: float
    p90: float = Field(alias="p(90)")
    p95: float = Field(alias="p(95)")
    p99: float = Field(alias="p(99)")
    p99_5: float | None = Field(None, alias="p(99.5)")
    p99_9: float | None = Field(None, alias="p(99.9)")
    p99_99: float | None = Field(None, alias="p(99.99)")
    max: float

    def listed(self) -> dict[float, float]:
        """Quantile → value (ms) of every listed statistic, the maximum at 1.0 (latency.fold_dropped)."""
        values = {0.5: self.med, 0.9: self.p90, 0.95: self.p95, 0.99: self.p99, 0.995: self.p99_5,
                  0.999: self.p99_9, 0.9999: self.p99_99, 1.0: self.max}
        return {q: v for q, v in values.items() if v is not None}


class K6Metric(_Output):
    values: dict[str, float]


class K6State(_Output):
    test_run_duration_ms: float = Field(alias="testRunDurationMs")


class K6Summary(_Output):
    """k6's handleSummary data (k6 v1 layout). k6 lists a metric only once it has a sample, so an
    absent counter is a count of 0 (`count`); an absent trend is an error where it is needed (`trend`)."""

    state: K6State
    metrics: dict[str, K6Metric]

    def count(self, name: str) -> int:
        metric = self.metrics.get(name)
        if metric is None:
            return 0
        if "count" not in metric.values:
            raise EngineOutputError(f"k6 summary: metric {name} has no count")
        return int(metric.values["count"])

    def trend(self, name: str) -> K6Trend:
        metric = self.metrics.get(name)
        if metric is None:
            raise EngineOutputError(f"k6 summary lacks the trend {name}")
        try:
            return K6Trend.model_validate(metric.values)
        except ValidationError as exc:
            raise EngineOutputError(f"k6 summary: trend {name} lacks {_missing(exc)} (summaryTrendStats changed?)") \
                from None


def _missing(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "the document"
    return f"{where} ({first['msg']})"


def parse_output(model: type[_Output], data: object, generator: str) -> _Output:
    """`data` validated as `model`; EngineOutputError naming the first missing or malformed field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise EngineOutputError(f"{generator} output: {_missing(exc)}") from None
