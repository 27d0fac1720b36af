"""oha adapter: `oha -z <window> -c <connections> --no-tui --output-format json`, parsed from its JSON.

Open model: `-q <rate> --latency-correction`: oha schedules requests at the rate and measures each one's
latency from its scheduled start, so time spent waiting for a free connection counts (no coordinated
omission). Requests scheduled but not completed by the deadline are not reported by oha; pgarena counts
them as dropped (offered = rate × window, minus completed).

oha's JSON reports times in seconds; pgarena stores milliseconds. Requests still in flight when the
window closes are aborted by oha ("aborted due to deadline"); they are not failures of the stack and
are left out of both the request count and the errors. Error kinds are read from the keys of
`errorDistribution` (oha's own error messages).
"""

from __future__ import annotations

import json
from pathlib import Path

from pgarena.engines.base import (
    Engine,
    EngineOutputError,
    LoadOutcome,
    LoadSpec,
    find_binary,
    first_line,
    tool_cache_dir,
)
from pgarena.results import Errors, Latency

OHA_VERSION = "1.16.0"
"""Pinned: newer releases need a newer rustc than this machine's (cargo install --locked)."""


def oha_install_dir() -> Path:
    return tool_cache_dir() / f"oha-{OHA_VERSION}"


class OhaEngine(Engine):
    """hatoo/oha, built from crates.io with `cargo install --locked` into pgarena's tool cache."""

    name = "oha"
    pinned_version = OHA_VERSION
    install_hint = (
        f"cargo install oha --version {OHA_VERSION} --locked --root {oha_install_dir()} "
        "(make bench does this; ~6 min cold)"
    )

    def locate(self) -> Path | None:
        return find_binary("oha", [oha_install_dir() / "bin" / "oha"])

    def version(self) -> str:
        return first_line([str(self.binary), "--version"])

    def raw_output(self, workdir: Path, stem: str) -> Path:
        return workdir / f"{stem}.stdout"

    def request_headers(self, spec: LoadSpec) -> list[tuple[str, str | None]]:
        """oha's defaults (oha 1.16.0 src/lib.rs), the content type, then Host and Content-Length, as the
        binary sends them (tests/unit/test_load_requests.py compares them with a real request)."""
        headers: list[tuple[str, str | None]] = [
            ("accept", "*/*"), ("accept-encoding", "gzip, compress, deflate, br"),
            ("user-agent", f"oha/{self.version_number()}")]
        if spec.content_type:
            headers.append(("content-type", spec.content_type))
        return [*headers, ("host", None), ("content-length", None)]

    def command(self, spec: LoadSpec, workdir: Path, stem: str) -> list[str]:
        argv = [
            str(self.binary), "--no-tui", "--output-format", "json",
            "-z", f"{int(round(spec.duration_s * 1000))}ms",
            "-c", str(spec.connections),
            "-t", f"{int(round(spec.timeout_s * 1000))}ms",
            "-m", spec.method,
            "-w",
        ]
        if spec.rate is not None:
            argv += ["-q", f"{spec.rate:.3f}", "--latency-correction"]
        if spec.bodies_file is not None:
            argv += ["-Z", str(spec.bodies_file)]
        elif spec.body is not None:
            body_path = workdir / f"{stem}.body"
            body_path.write_bytes(spec.body)
            argv += ["-D", str(body_path)]
        if spec.content_type:
            argv += ["-T", spec.content_type]
        if spec.urls_file is not None:
            return [*argv, "--urls-from-file", str(spec.urls_file)]  # a random line per request
        return [*argv, spec.url]

    def parse(self, workdir: Path, stem: str) -> LoadOutcome:
        path = self.raw_output(workdir, stem)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise EngineOutputError(f"oha output {path.name} unreadable: {exc}") from None
        return parse_oha_json(data)


def classify_oha_errors(distribution: dict[str, int]) -> tuple[Errors, int]:
    """(errors by kind, requests aborted at the window's deadline) from oha's errorDistribution."""
    connect = timeout = other = aborted = 0
    for message, count in distribution.items():
        text = message.lower()
        if "deadline" in text:
            aborted += count
        elif "timed out" in text or "timeout" in text:
            timeout += count
        elif "connect" in text or "refused" in text or "reset" in text:
            connect += count
        else:
            other += count
    return Errors(connect=connect, timeout=timeout, other=other), aborted


def parse_oha_json(data: dict) -> LoadOutcome:
    """A LoadOutcome from oha's `--output-format json` document."""
    try:
        summary = data["summary"]
        percentiles = data["latencyPercentiles"]
        statuses = {str(k): int(v) for k, v in data.get("statusCodeDistribution", {}).items()}
        duration = float(summary["total"])
    except (KeyError, TypeError, ValueError) as exc:
        raise EngineOutputError(f"oha JSON lacks {exc}") from None
    errors, _aborted = classify_oha_errors(data.get("errorDistribution", {}))
    errors.non_2xx = sum(count for code, count in statuses.items() if not code.startswith("2"))
    responses = sum(statuses.values())
    requests = responses + errors.connect + errors.timeout + errors.other
    if responses == 0:
        raise EngineOutputError(f"oha received no response in {duration:.1f} s (errors: {data.get('errorDistribution')})")

    def ms(value: float | None) -> float:
        return float(value or 0.0) * 1000

    return LoadOutcome(
        requests=requests,
        duration_seconds=duration,
        rps=requests / duration if duration else 0.0,
        latency=Latency(
            avg_ms=ms(summary.get("average")),
            p50_ms=ms(percentiles.get("p50")),
            p90_ms=ms(percentiles.get("p90")),
            p95_ms=ms(percentiles.get("p95")),
            p99_ms=ms(percentiles.get("p99")),
            max_ms=ms(summary.get("slowest")),
        ),
        errors=errors,
        status_codes=statuses,
    )
