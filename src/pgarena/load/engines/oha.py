"""oha adapter: `oha -z <window> -c <connections> --no-tui --output-format json`, parsed from its JSON.

Open model: `-q <rate> --latency-correction`: oha schedules requests at the rate and measures each one's
latency from its scheduled start, so time spent waiting for a free connection counts (no coordinated
omission). Requests scheduled but not completed by the deadline are not reported by oha; pgarena counts
them as dropped (offered = rate × window, minus completed), and counts them in the latency at the timeout,
like requests without an answer (engines/latency.py).

Requests carry the same headers as k6's, apart from the user agent: oha by default advertises
`Accept-Encoding: gzip, compress, deflate, br` and k6 sends no Accept-Encoding, so `--disable-compression`
drops it (docs/methodology.md, "oha and k6 disagree").

oha's JSON reports times in seconds; pgarena stores milliseconds. Requests still in flight when the
window closes are aborted by oha ("aborted due to deadline"); they are not failures of the stack and
are left out of both the request count and the errors. Error kinds are read from the keys of
`errorDistribution` (oha's own error messages).

Latency: oha's own percentiles cover the answered requests only (a window where a fifth of the requests
timed out at 250 ms still shows a p99 of 3 ms). pgarena therefore asks oha for every answered request's
latency (`--db-url <stem>.db`, a SQLite file oha writes after the window, so it costs no load-time CPU),
adds the requests without an answer at the timeout and computes the percentiles itself
(engines/latency.py). The SQLite file can be large; it is removed once read (results.json keeps the
figures, `<stem>.stdout` oha's own summary). Without it (older raw output) the documented summary rule
of engines/latency.py applies.

A window after a lead-in (`LoadSpec.lead_in_s`: the interleaved schedule's re-warm, closed model) is one oha
process of both (`-z` their sum) over the same connections; its figures are cut from that file by each answer's
end on oha's clock: the answers that ended within the window's `duration_s` after the lead-in. Requests without
an answer have no time there, so all of the process's count in the window. `<stem>.stdout` then summarises the
whole process.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

from pgarena.load.engines.base import Engine, EngineOutputError, LoadOutcome, LoadSpec, find_binary, tool_cache_dir
from pgarena.load.engines.latency import from_durations, from_summary
from pgarena.load.engines.outputs import OhaOutput, parse_output
from pgarena.results.models import Errors, Latency
from pgarena.system.process import first_line

OHA_VERSION = "1.16.0"
"""Pinned: newer releases need a newer rustc than this machine's (cargo install --locked)."""


def oha_install_dir() -> Path:
    return tool_cache_dir() / f"oha-{OHA_VERSION}"


class OhaEngine(Engine):
    """hatoo/oha, built from crates.io with `cargo install --locked` into pgarena's tool cache."""

    name = "oha"
    lead_in = True
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

    @staticmethod
    def requests_file(workdir: Path, stem: str) -> Path:
        """oha's per-request SQLite file of one window (`--db-url`): every answered request's latency."""
        return workdir / f"{stem}.db"

    def request_headers(self, spec: LoadSpec) -> list[tuple[str, str | None]]:
        """oha's defaults (oha 1.16.0 src/lib.rs), the content type, then Host and Content-Length, as the
        binary sends them (tests/unit/test_load_requests.py compares them with a real request)."""
        headers: list[tuple[str, str | None]] = [  # no accept-encoding: pgarena runs oha --disable-compression
            ("accept", "*/*"), ("user-agent", f"oha/{self.version_number()}")]
        if spec.content_type:
            headers.append(("content-type", spec.content_type))
        return [*headers, ("host", None), ("content-length", None)]

    def command(self, spec: LoadSpec, workdir: Path, stem: str) -> list[str]:
        argv = [
            str(self.binary), "--no-tui", "--output-format", "json",
            "-z", f"{int(round((spec.lead_in_s + spec.duration_s) * 1000))}ms",
            "-c", str(spec.connections),
            "-t", f"{int(round(spec.timeout_s * 1000))}ms",
            "-m", spec.method,
            "-w",
            # NOTE: oha asks for "gzip, compress, deflate, br" unless told not to; k6 asks for no coding.
            # Both engines must send the same request, and verification sends it too (no Accept-Encoding).
            "--disable-compression",
        ]
        requests_file = self.requests_file(workdir, stem)
        requests_file.unlink(missing_ok=True)  # oha appends to an existing file
        if spec.latencies or spec.lead_in_s:
            argv += ["--db-url", str(requests_file)]
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

    def parse(self, workdir: Path, stem: str, timeout_s: float | None = None,
              offered: int | None = None) -> LoadOutcome:
        data = self._summary(workdir, stem)
        requests_file = self.requests_file(workdir, stem)
        durations = read_request_durations_ms(requests_file)
        requests_file.unlink(missing_ok=True)
        return parse_oha_json(data, timeout_s=timeout_s, durations_ms=durations, offered=offered)

    def _summary(self, workdir: Path, stem: str) -> dict:
        path = self.raw_output(workdir, stem)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise EngineOutputError(f"oha output {path.name} unreadable: {exc}") from None

    def parse_after_lead_in(self, workdir: Path, stem: str, *, lead_in_s: float, window_s: float,
                            timeout_s: float) -> LoadOutcome:
        """The measured span of a window that began with a lead-in (closed model): the answers that ended in
        [lead_in_s, lead_in_s + window_s) of oha's own clock, from its per-request file."""
        data = self._summary(workdir, stem)
        requests_file = self.requests_file(workdir, stem)
        rows = read_request_rows(requests_file)
        requests_file.unlink(missing_ok=True)
        if rows is None:
            raise EngineOutputError(f"oha wrote no per-request file {requests_file.name}: the window cannot be "
                                    "told from its lead-in")
        return window_after_lead_in(data, rows, lead_in_s=lead_in_s, window_s=window_s, timeout_s=timeout_s)


def read_request_durations_ms(path: Path) -> list[float] | None:
    """Every answered request's latency (ms) from oha's `--db-url` file; None when it is missing or
    unreadable. oha's `duration` column is the one its percentiles use (from the scheduled start with
    `--latency-correction`)."""
    rows = _read_requests(path, "duration")
    return None if rows is None else [row[0] * 1000 for row in rows]


def read_request_rows(path: Path) -> list[tuple[float, float, int]] | None:
    """(end, duration, status) of every answered request, seconds on oha's clock, from its `--db-url` file;
    None when it is missing or unreadable."""
    return _read_requests(path, "end, duration, status")


def _read_requests(path: Path, columns: str) -> list[tuple] | None:
    if not path.is_file():
        return None
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            return list(conn.execute(f"SELECT {columns} FROM oha"))  # noqa: S608 — the callers' fixed column names
    except sqlite3.Error:
        return None


def window_after_lead_in(data: dict, rows: list[tuple[float, float, int]], *, lead_in_s: float, window_s: float,
                         timeout_s: float) -> LoadOutcome:
    """A LoadOutcome of the answers that ended in [lead_in_s, lead_in_s + window_s) (`rows`: oha's per-request
    file). Requests without an answer have no time in oha's output: all of the process's count in the window
    (its failures are never hidden in the lead-in), at the timeout in the latency."""
    out = parse_output(OhaOutput, data, "oha")
    errors, _aborted = classify_oha_errors(out.error_distribution)
    end = lead_in_s + window_s
    inside = [(duration, status) for finished, duration, status in rows if lead_in_s <= finished < end]
    statuses: dict[str, int] = {}
    for _duration, status in inside:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    if not inside:
        raise EngineOutputError(f"oha received no response in the {window_s:.1f} s after its {lead_in_s:.1f} s "
                                f"lead-in (errors: {out.error_distribution})")
    errors.non_2xx = sum(count for code, count in statuses.items() if not code.startswith("2"))
    outside_2xx = sum(1 for finished, _d, status in rows if not lead_in_s <= finished < end and 200 <= status < 300)
    return LoadOutcome(
        requests=len(inside) + errors.connect + errors.timeout + errors.other,
        duration_seconds=window_s,
        latency=from_durations([duration * 1000 for duration, _status in inside], errors.unanswered,
                               timeout_s * 1000),
        errors=errors,
        status_codes=statuses,
        uncounted_2xx=outside_2xx,
        uncounted_other=len(rows) - len(inside) - outside_2xx,
    )


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


def _listed_quantile(percentiles: dict[str, float]) -> Callable[[float], float]:
    """The answered requests' quantile q from oha's listed percentiles (p10 … p99.99): the smallest
    listed one at or above q, so a quantile oha did not list is never understated."""
    listed = sorted((float(key[1:]) / 100, value * 1000) for key, value in percentiles.items())
    if not listed:
        raise EngineOutputError("oha JSON lists no latency percentiles")

    def quantile(q: float) -> float:
        return next((value for p, value in listed if p >= q - 1e-12), listed[-1][1])

    return quantile


def parse_oha_json(data: dict, *, timeout_s: float | None = None,
                   durations_ms: list[float] | None = None, offered: int | None = None) -> LoadOutcome:
    """A LoadOutcome from oha's `--output-format json` document (and, when given, every answered
    request's latency from oha's `--db-url` file; requests without an answer count at `timeout_s`, and so
    do the open model's `offered` requests that were not completed: the dropped ones)."""
    out = parse_output(OhaOutput, data, "oha")
    statuses = {str(code): count for code, count in out.status_code_distribution.items()}
    duration = out.summary.total
    errors, _aborted = classify_oha_errors(out.error_distribution)
    errors.non_2xx = sum(count for code, count in statuses.items() if not code.startswith("2"))
    responses = sum(statuses.values())
    requests = responses + errors.connect + errors.timeout + errors.other
    if responses == 0:
        raise EngineOutputError(f"oha received no response in {duration:.1f} s (errors: {out.error_distribution})")

    dropped = max(0, offered - requests) if offered is not None and timeout_s is not None else 0
    failed = errors.unanswered + dropped  # NOTE: dropped requests count at the timeout too (engines/latency.py)
    timeout_ms = timeout_s * 1000 if timeout_s is not None else None
    latency: Latency
    if durations_ms is not None and len(durations_ms) == responses and timeout_ms is not None:
        latency = from_durations(durations_ms, failed, timeout_ms)
    else:
        unlisted = [key for key, value in out.latency_percentiles.items() if value is None]
        if out.summary.average is None or out.summary.slowest is None or unlisted:
            raise EngineOutputError(f"oha answered {responses} requests but wrote no latency "
                                    f"({'average/slowest' if not unlisted else ', '.join(unlisted)} null)")
        listed = {key: value for key, value in out.latency_percentiles.items() if value is not None}
        latency = from_summary(answered_quantile=_listed_quantile(listed),
                               avg_ms=out.summary.average * 1000, max_ms=out.summary.slowest * 1000,
                               answered=responses, failed=failed, timeout_ms=timeout_ms)
    return LoadOutcome(
        requests=requests,
        duration_seconds=duration,
        latency=latency,
        errors=errors,
        status_codes=statuses,
    )
