"""The report's "On the wire" section: what each stack's driver sent to PostgreSQL per request (issue 25),
and the round-trip model beside --db-rtt's measured loss. Markdown; the HTML report embeds the same text."""

from __future__ import annotations

from pgarena.analysis.wiremodel import AGREEMENT, round_trip_model
from pgarena.report.markup import table
from pgarena.results.models import RunResults
from pgarena.results.wire import WireProfile

MESSAGES = ("Query", "Parse", "Bind", "Describe", "Execute", "Sync", "Flush", "Close")
"""The client message types shown, in this order (the others are in results.json)."""
SHOWN_STATEMENT_CHARS = 90
SHOWN_NOTE_CHARS = 160
"""The driver note shown beside the figures: the stack's first note, cut at a clause (the rest is under Stacks)."""


def _number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".") if value else "0"


def _messages(counts: dict[str, float]) -> str:
    return " · ".join(f"{name} {_number(counts[name])}" for name in MESSAGES if counts.get(name))


def _added(w: WireProfile) -> str:
    parts = [f"{label} {_number(w.added_per_request(kind))}" for kind, label in
             (("transaction", "tx control"), ("session", "session")) if w.added_per_request(kind)]
    return ", ".join(parts) or "none"


def _prepared(w: WireProfile) -> str:
    return (f"{_number(w.prepared_per_request)} / {_number(w.reused_per_request)} / "
            f"{_number(w.unnamed_parses_per_request)}")


def _pipelining(w: WireProfile) -> str:
    within = f"yes ({_number(w.pipelined_flights_per_request)} flights/request)" if w.pipelined else "no"
    return within + ("; **across requests**" if w.across_requests else "")


def _short_note(notes: list[str]) -> str:
    if not notes:
        return ""
    note = notes[0]
    while len(note) > SHOWN_NOTE_CHARS and "; " in note:
        note = note.rsplit("; ", 1)[0]
    return note if len(note) <= SHOWN_NOTE_CHARS else note[:SHOWN_NOTE_CHARS] + "…"


def _statement_lines(results: RunResults) -> list[str]:
    """One line per statement a driver added (transaction control, session), per stack and workload."""
    lines = []
    for v in results.verifications:
        if v.wire is None:
            continue
        for s in v.wire.statements:
            if s.kind != "workload":
                text = " ".join(s.text.split())
                text = text if len(text) <= SHOWN_STATEMENT_CHARS else text[:SHOWN_STATEMENT_CHARS] + "…"
                lines.append(f"- {v.stack} · {v.workload}: `{text}` × {_number(s.per_request)} per request ({s.kind})")
    return lines


LOAD_HEADERS = ("Stack", "Workload", "Load", "Round trips (burst → load)", "Statements (burst → load)",
                "Messages sent", "Bytes → / ←", "Prepared / reused / unnamed", "Pipelined", "Added statements",
                "Connections opened / closed / most open")
LOAD_INTRO = (
    "Under load (`--wire-under-load`): the same figures per request over a few seconds of load at each workload's "
    "highest VU count (the run's generator sending the measured cells' requests, its rate capped so that a window "
    "sends at most its request cap), from the stack's second, unmeasured start through the observer, never from "
    "a measured window; the observer adds a hop of about 0.1 ms per round trip there (docs/verification.md, "
    "\"The observer's own cost\"). *Connections*: opened and closed during the load (pool churn) and the most "
    "open at once; *across requests* here: a flight carried more statements than any request of the burst.")
WIRE_HEADERS = ("Stack", "Workload", "Round trips", "Statements", "Messages sent", "Bytes → / ←",
                "Prepared / reused / unnamed", "Pipelined", "Added statements", "Driver (notes)")
MODEL_HEADERS = ("Stack", "Workload", "VUs", "Round trip (added)", "Round trips/request", "Predicted loss",
                 "Measured loss", "Agree")
INTRO = (
    "What each driver sent to PostgreSQL per request, read by the wire observer (a PostgreSQL protocol proxy "
    "on pgx's pgproto3) over a burst of requests sent one at a time in verification, never in a measured window. "
    "A *round trip* is a time the driver had to wait for the server before it could go on (connection "
    "set-up excluded); *prepared / reused / unnamed*: Parse of a named statement, Bind of a named statement "
    "bound before, Parse of the unnamed one; *pipelined*: a flight carried more than one statement; "
    "*across requests*: statements of concurrent requests shared a flight (flag `pipelines-across-requests`, "
    "ranked among all stacks only). *Added statements*: per request, transaction control (BEGIN/COMMIT) and "
    "session statements (SET, RESET, DISCARD, a pool's reset on release) the driver ran beside the "
    "workload's own.")
MODEL_INTRO = (
    "Throughput lost to the added round trip: predicted from the round trips per request above "
    "(X(r) = N / (N/X₀ + k·Δr), N = min(VUs, pool size); analysis/wiremodel.py) and measured by "
    f"--db-rtt; ✅ when they agree within ±{AGREEMENT:.0%} of the measured loss.")


def wire_rows(results: RunResults) -> list[tuple[str, ...]]:
    """Per stack and workload (WIRE_HEADERS): round trips, messages, bytes, prepared/reused, pipelining, added
    statements, and the stack's driver notes."""
    stacks = {s.id: s for s in results.stacks}
    rows = []
    for v in sorted(results.verifications, key=lambda v: (v.workload, v.stack)):
        if v.wire is None:
            continue
        w, info = v.wire, stacks.get(v.stack)
        driver = f"{info.driver} {info.driver_version}" if info else ""
        notes = _short_note(info.notes) if info else ""
        rows.append((v.stack, v.workload, _number(w.round_trips_per_request), _number(w.statements_per_request),
                     _messages(w.client_messages_per_request),
                     f"{w.bytes_to_server_per_request:,.0f} / {w.bytes_to_client_per_request:,.0f}",
                     _prepared(w), _pipelining(w), _added(w), f"{driver}{' — ' + notes if notes else ''}"))
    return rows


def _load(w: WireProfile) -> str:
    load = w.load
    assert load is not None
    capped = f", the cap of {load.request_cap:,}" if w.capped else ""
    return f"{load.vus} VUs · {load.duration_seconds:g} s · {w.requests:,} requests{capped} ({load.engine})"


def _beside(burst: WireProfile | None, load: WireProfile, figure: str) -> str:
    """'burst → load' of one per-request figure ('–' for a burst not measured)."""
    return f"{_number(getattr(burst, figure)) if burst else '–'} → {_number(getattr(load, figure))}"


def load_rows(results: RunResults) -> list[tuple[str, ...]]:
    """Per stack and workload with an under-load profile (LOAD_HEADERS): how it was loaded, its figures with
    the burst's round trips and statements beside them, and what its pool did."""
    rows = []
    for v in sorted(results.verifications, key=lambda v: (v.workload, v.stack)):
        w, burst = v.wire_under_load, v.wire
        if w is None or w.load is None:
            continue
        pool = f" (pool {w.load.pool_size})" if w.load.pool_size is not None else ""
        rows.append((v.stack, v.workload, _load(w), _beside(burst, w, "round_trips_per_request"),
                     _beside(burst, w, "statements_per_request"),
                     _messages(w.client_messages_per_request),
                     f"{w.bytes_to_server_per_request:,.0f} / {w.bytes_to_client_per_request:,.0f}",
                     _prepared(w), _pipelining(w), _added(w),
                     f"{w.connections_opened} / {w.load.connections_closed} / {w.load.peak_open_connections}{pool}"))
    return rows


def model_rows(results: RunResults) -> list[tuple[str, ...]]:
    """The round-trip model's predicted loss next to the measured one (MODEL_HEADERS; none without --db-rtt)."""
    return [(r.stack, r.workload + (f" {r.parameter}" if r.parameter is not None else ""),
             f"{r.vus} ({r.concurrency} on connections)", f"{r.rtt_ms:g} ms (+{r.added_ms:.2f})",
             _number(r.round_trips_per_request), f"{r.predicted_loss:.0%}", f"{r.measured_loss:.0%}",
             "✅" if r.agrees else "❌") for r in round_trip_model(results)]


def _missing(results: RunResults) -> list[str]:
    return sorted({f"{v.stack} ({v.wire_unavailable})" for v in results.verifications
                   if v.wire is None and v.wire_unavailable})


def _missing_under_load(results: RunResults) -> list[str]:
    """'stack · workload (why)' for every workload asked for an under-load profile that has none."""
    return sorted(f"{v.stack} · {v.workload} ({v.wire_under_load_unavailable})" for v in results.verifications
                  if v.wire_under_load is None and v.wire_under_load_unavailable)


def _under_load(results: RunResults) -> list[str]:
    """The under-load table and what was not measured under load (nothing when it was not asked)."""
    rows, missing = load_rows(results), _missing_under_load(results)
    parts = [LOAD_INTRO, table(LOAD_HEADERS, rows, "lllrrllllll")] if rows else []
    if missing:
        parts += ([] if rows else [LOAD_INTRO]) + ["Not measured under load: " + "; ".join(missing) + "."]
    return parts


def section(results: RunResults) -> str:
    """The whole Markdown section ('' when no workload has a wire profile)."""
    if not any(v.wire or v.wire_under_load for v in results.verifications):
        return ""
    parts = [INTRO, table(WIRE_HEADERS, wire_rows(results), "llrrllllll"), *_under_load(results)]
    lines = _statement_lines(results)
    if lines:
        parts.append("Statements the drivers added:\n\n" + "\n".join(lines))
    model = model_rows(results)
    if model:
        parts += [MODEL_INTRO, table(MODEL_HEADERS, model, "lllrrrrl")]
    if _missing(results):
        parts.append("Not measured: " + "; ".join(_missing(results)) + ".")
    return "\n\n".join(parts)


def payload(results: RunResults) -> dict:
    """The same for the HTML page (empty rows: no section)."""
    return {"intro": INTRO, "headers": list(WIRE_HEADERS), "rows": [list(r) for r in wire_rows(results)],
            "statements": [line[2:] for line in _statement_lines(results)], "model_intro": MODEL_INTRO,
            "model_headers": list(MODEL_HEADERS), "model_rows": [list(r) for r in model_rows(results)],
            "missing": _missing(results), "load_intro": LOAD_INTRO, "load_headers": list(LOAD_HEADERS),
            "load_rows": [list(r) for r in load_rows(results)], "load_missing": _missing_under_load(results)}
