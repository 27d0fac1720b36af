"""On the wire: what a stack's driver sends to PostgreSQL per request, read by the wire observer (issue 25).

In verification the stack's database is the observer (system/wireobserver.py), which forwards to PostgreSQL
and counts every protocol message. For each workload pgarena reads the observer's counters, sends
`WIRE_REQUESTS` requests one at a time (the per-request figures divide by them), reads them again, then sends
`CONCURRENT_REQUESTS` requests from `CONCURRENT_CLIENTS` threads: a stack whose connections then carry more
statements in one flight than any single request sends pipelines or batches across requests (flagged, see
contract/flags.PIPELINES_ACROSS_REQUESTS). `load_profile` turns two reads around a window of load
(`--wire-under-load`, pipeline/wireload.py) into the same figures per request of the load.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from pgarena.contract import workloads as wl
from pgarena.results.models import WorkloadVerification
from pgarena.results.wire import StatementKind, WireLoad, WireProfile, WireStatement
from pgarena.system.wireobserver import WireObserver, WireObserverUnavailable
from pgarena.verify.http import http_client
from pgarena.verify.rows import send as send_request

WIRE_REQUESTS = 20
"""Requests of the sequential burst."""
CONCURRENT_REQUESTS = 32
"""Requests of the concurrent burst."""
CONCURRENT_CLIENTS = 8
"""Threads sending the concurrent burst."""
LOAD_STATEMENTS = 20
"""Statement texts an under-load profile keeps one by one (the most executed); the rest are summed per kind
(a simple-protocol driver sends its values inside the text, so each request may bring texts of its own)."""

TRANSACTION = re.compile(r"^\s*(BEGIN|START\s+TRANSACTION|COMMIT|END|ROLLBACK|ABORT|SAVEPOINT|RELEASE)\b", re.I)
WORKLOAD_OBJECTS = re.compile(r"\b(perf_\w+|users|posts|pgbench_\w+)\b", re.I)

_SUMMED = ("bytes_to_server", "bytes_to_client", "round_trips", "setup_round_trips", "pipelined_flights",
           "parsed_named", "parsed_unnamed", "binds_reused")


def classify(text: str) -> StatementKind:
    """A statement's kind: transaction control, the workload's own (it names a workload object), or session
    (everything else a driver or pool adds: SET, RESET, DISCARD, a reset batch, a health check)."""
    if TRANSACTION.match(text):
        return "transaction"
    return "workload" if WORKLOAD_OBJECTS.search(text) else "session"


def _diff(after: dict[str, Any], before: dict[str, Any] | None) -> dict[str, Any]:
    """One connection's counts between two snapshots (`before` None: it opened in between)."""
    now, then = after["counts"], (before or {"counts": {}})["counts"]
    out: dict[str, Any] = {key: now.get(key, 0) - then.get(key, 0) for key in _SUMMED}
    for key in ("client_messages", "server_messages", "executed"):
        old = then.get(key) or {}
        out[key] = {name: count - old.get(name, 0) for name, count in (now.get(key) or {}).items()
                    if count - old.get(name, 0)}
    out["peak_flight_statements"] = now.get("peak_flight_statements", 0)
    out["peak_unanswered_syncs"] = now.get("peak_unanswered_syncs", 0)
    return out


def _diffs(before: Sequence[dict], after: Sequence[dict]) -> tuple[list[dict[str, Any]], int]:
    """(every connection's counts between the snapshots, connections opened in between)."""
    earlier = {c["id"]: c for c in before}
    return [_diff(c, earlier.get(c["id"])) for c in after], sum(c["id"] not in earlier for c in after)


def _add(maps: Sequence[dict[str, int]], per: int) -> dict[str, float]:
    total: dict[str, int] = {}
    for counts in maps:
        for name, count in counts.items():
            total[name] = total.get(name, 0) + count
    return {name: round(count / per, 3) for name, count in sorted(total.items())}


def profile(before: Sequence[dict], after: Sequence[dict], *, requests: int, answered: int,
            concurrent: Sequence[dict] | None = None, concurrent_requests: int = 0,
            observer_cpu_seconds: float | None = None) -> WireProfile:
    """The per-request figures of a sequential burst of `requests` between snapshots `before` and `after`
    (wire/main.go's /snapshot), and, given the snapshot `concurrent` taken after a concurrent burst, whether
    statements of several requests shared a flight."""
    per = max(requests, 1)
    diffs, opened = _diffs(before, after)
    busy = [d for d in diffs if d["executed"]]
    executed = _add([d["executed"] for d in diffs], per)
    client = _add([d["client_messages"] for d in diffs], per)
    peak = max((d["peak_flight_statements"] for d in diffs), default=0)
    peak_syncs = max((d["peak_unanswered_syncs"] for d in diffs), default=0)
    concurrent_peak = across = None
    if concurrent is not None:
        later, _ = _diffs(after, concurrent)
        concurrent_peak = max((d["peak_flight_statements"] for d in later), default=0)
        across = concurrent_peak > peak or max((d["peak_unanswered_syncs"] for d in later), default=0) > peak_syncs
    totals = {key: sum(d[key] for d in diffs) for key in _SUMMED}
    return WireProfile(
        requests=requests, answered=answered, connections=len(busy), connections_opened=opened,
        round_trips_per_request=round(totals["round_trips"] / per, 3), setup_round_trips=totals["setup_round_trips"],
        statements_per_request=round(client.get("Execute", 0) + client.get("Query", 0), 3),
        client_messages_per_request=client, server_messages_per_request=_add([d["server_messages"] for d in diffs], per),
        bytes_to_server_per_request=round(totals["bytes_to_server"] / per, 1),
        bytes_to_client_per_request=round(totals["bytes_to_client"] / per, 1),
        prepared_per_request=round(totals["parsed_named"] / per, 3),
        unnamed_parses_per_request=round(totals["parsed_unnamed"] / per, 3),
        reused_per_request=round(totals["binds_reused"] / per, 3),
        pipelined_flights_per_request=round(totals["pipelined_flights"] / per, 3),
        peak_statements_per_flight=peak, concurrent_requests=concurrent_requests if concurrent is not None else 0,
        concurrent_peak_statements_per_flight=concurrent_peak, across_requests=bool(across),
        statements=[WireStatement(text=text, kind=classify(text), per_request=count)
                    for text, count in sorted(executed.items(), key=lambda kv: -kv[1])],
        observer_cpu_seconds=observer_cpu_seconds,
        unobservable_connections=sum(not c.get("observable", True) for c in after))


def _folded(statements: Sequence[WireStatement], keep: int) -> list[WireStatement]:
    """The `keep` most executed statements, then one entry per kind summing the others (none: unchanged)."""
    rest: dict[StatementKind, tuple[int, float]] = {}
    for s in statements[keep:]:
        texts, count = rest.get(s.kind, (0, 0.0))
        rest[s.kind] = (texts + 1, count + s.per_request)
    return [*statements[:keep], *(WireStatement(text=f"({texts:,} other {kind} statement texts)", kind=kind,
                                                per_request=round(count, 3)) for kind, (texts, count) in rest.items())]


def load_profile(before: dict[str, Any], after: dict[str, Any], *, requests: int, answered: int, load: WireLoad,
                 burst_peak_statements: int | None, observer_cpu_seconds: float | None = None) -> WireProfile:
    """The per-request figures of a window of load between two observer reads (`WireObserver.read()`, the
    first one resetting the peaks), `requests` being the generator's completed requests (`answered`: their
    2xx). `load` says how the window was driven; its pool figures are filled in here: the most connections
    open at once and the connections closed in the window. Statements of several requests shared a flight
    (`across_requests`) when a flight carried more than `burst_peak_statements`, the most one request sent
    in one flight in the sequential burst (None: not known, not judged)."""
    base = profile(before["connections"], after["connections"], requests=requests, answered=answered,
                   observer_cpu_seconds=observer_cpu_seconds)
    was_open = {c["id"] for c in before["connections"] if not c.get("closed")}
    seen = {c["id"] for c in before["connections"]}
    closed = sum(bool(c.get("closed")) and (c["id"] in was_open or c["id"] not in seen) for c in after["connections"])
    across = burst_peak_statements is not None and base.peak_statements_per_flight > burst_peak_statements
    pool = {"peak_open_connections": after["peak_open_connections"], "connections_closed": closed}
    return base.model_copy(update={"load": load.model_copy(update=pool), "across_requests": across,
                                   "statements": _folded(base.statements, LOAD_STATEMENTS)})


def observe(observer: WireObserver, send: Callable[[int], bool], *, requests: int = WIRE_REQUESTS,
            concurrent_requests: int = CONCURRENT_REQUESTS) -> WireProfile:
    """Send the two bursts through `send(i)` (True: answered 200) and return the workload's profile; the
    concurrent burst's requests are numbered after the sequential ones."""
    cpu_before = observer.cpu_seconds()
    before = observer.snapshot()  # also resets the peaks
    answered = sum(bool(send(i)) for i in range(requests))
    after = observer.snapshot()
    concurrent = None
    if concurrent_requests:
        with ThreadPoolExecutor(CONCURRENT_CLIENTS) as pool:
            list(pool.map(send, range(requests, requests + concurrent_requests)))
        concurrent = observer.snapshot()
    return profile(before, after, requests=requests, answered=answered, concurrent=concurrent,
                   concurrent_requests=concurrent_requests,
                   observer_cpu_seconds=round(observer.cpu_seconds() - cpu_before, 3))


def summary_lines(profile: WireProfile) -> list[str]:
    """What a log prints of a profile: round trips and statements per request, then one line per statement
    the driver added (transaction control, a session reset)."""
    w = profile
    pipelined = "pipelined" if w.pipelined else "not pipelined"
    lines = [f"on the wire: {w.round_trips_per_request:g} round trips/request, {w.statements_per_request:g} "
             f"statements/request ({w.prepared_per_request:g} prepared, {w.reused_per_request:g} reused, "
             f"{w.unnamed_parses_per_request:g} unnamed), {pipelined}"
             + (", PIPELINES ACROSS REQUESTS" if w.across_requests else "")]
    lines += [f"  + {s.kind}: {' '.join(s.text.split())[:120]} × {s.per_request:g}/request"
              for s in w.statements if s.kind != "workload"]
    return lines


def burst_parameter(workload: str, perf_test_rows: Sequence[int], users_limits: Sequence[int],
                    scenario_parameters: dict[str, list[int | None]]) -> int | None:
    """The parameter a burst requests a workload at: its smallest (perf-test rows, users limit), GraphQL's
    fixed limit, a scenario's first."""
    return {wl.PERF_TEST: min(perf_test_rows, default=1), wl.USERS: min(users_limits, default=20),
            wl.GRAPHQL: wl.GRAPHQL_LIMIT}.get(workload, scenario_parameters.get(workload, [None])[0])


def burst_sender(client: httpx.Client, workload: str, parameter: int | None, *, count: int,
                 seed: int) -> tuple[Callable[[int], bool], list[int]]:
    """A function sending the i-th of `count` requests of a burst (True: answered 200; tx bodies drawn with
    `seed`), and the list counting its 200s (a concurrent burst may share it: `+=` under the GIL)."""
    answered = [0]
    bodies = wl.random_tx_bodies(count, seed=seed)

    def send(index: int) -> bool:
        request = wl.tx_request(bodies[index]) if workload == wl.TX else wl.load_request(workload, parameter)
        response = send_request(client, request)
        ok = not isinstance(response, str) and response.status_code == 200
        answered[0] += ok
        return ok

    return send, answered


def observe_into(verification: WorkloadVerification, client: httpx.Client, parameter: int | None,
                 observer: WireObserver, *, seed: int) -> int:
    """The workload's profile into `verification.wire` (or why not into `wire_unavailable`); returns the 200s
    the bursts got (tx verification counts them against the history table)."""
    burst, answered = burst_sender(client, verification.workload, parameter,
                                   count=WIRE_REQUESTS + CONCURRENT_REQUESTS, seed=seed)
    try:
        wire = observe(observer, burst)
    except (WireObserverUnavailable, httpx.HTTPError) as exc:
        verification.wire_unavailable = f"the wire observer failed: {exc}"
        return answered[0]
    verification.wire_unavailable = bypassed(wire, verification.workload)
    verification.wire = wire if verification.wire_unavailable is None else None
    return answered[0]


def bypassed(wire: WireProfile, workload: str) -> str | None:
    """Why a profile cannot stand for the stack: its requests were answered, yet nothing of the workload's
    database work passed the observer, so the stack reached PostgreSQL some other way (an address of its own:
    seed 000's app fixes host and port in its code). None: the profile is the stack's (or the workload, static,
    touches no database)."""
    if workload == wl.STATIC or not wire.answered or wire.round_trips_per_request or wire.statements_per_request:
        return None
    return (f"none of its {wire.answered} answered requests reached PostgreSQL through the observer: the stack "
            "connects to a database address of its own, not the one pgarena gives it")


def observe_workloads(verifications: Sequence[WorkloadVerification], stack_id: str, workloads: Sequence[str],
                      base_url: str, observer: WireObserver, *, parameters: dict[str, int | None],
                      timeout_s: float, routes: dict[str, str], seed: int) -> None:
    """Profile each of `workloads` of a running stack into its stored verification (pipeline/wire.py's second
    start); `parameters`: workload → its burst's parameter."""
    by_workload = {v.workload: v for v in verifications if v.stack == stack_id}
    with http_client(base_url, timeout_s, routes) as client:
        for workload in workloads:
            if workload in by_workload:
                observe_into(by_workload[workload], client, parameters.get(workload), observer, seed=seed)
