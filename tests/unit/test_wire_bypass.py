"""A stack whose database connections do not go through the wire observer gets no wire profile but the reason
(issue 25): seed 000's apps fix their database port in code, and any stack whose answered requests sent
nothing through the observer reached PostgreSQL some other way. A profile of zeros would read as "0 round trips
per request"."""

from __future__ import annotations

from types import SimpleNamespace

import httpx

from pgarena.contract import workloads as wl
from pgarena.pipeline.wire import mark_unavailable, unobservable
from pgarena.report.wire import section
from pgarena.results.models import WorkloadVerification
from pgarena.verify.wire import CONCURRENT_REQUESTS, WIRE_REQUESTS, observe_into
from tests.fixtures.report_run import sample_results


class _Observer:
    """A stand-in for system/wireobserver.WireObserver: each snapshot is the next of `snapshots` (the last
    one repeats)."""

    def __init__(self, snapshots: list[list[dict]]) -> None:
        self._snapshots = snapshots

    def snapshot(self) -> list[dict]:
        return self._snapshots.pop(0) if len(self._snapshots) > 1 else self._snapshots[0]

    def cpu_seconds(self) -> float:
        return 0.0


def _connection(round_trips: int, statements: int) -> dict:
    counts = {"client_messages": {"Query": statements} if statements else {}, "server_messages": {},
              "bytes_to_server": 0, "bytes_to_client": 0, "round_trips": round_trips, "setup_round_trips": 0,
              "pipelined_flights": 0, "syncs_while_waiting": 0, "parsed_named": 0, "parsed_unnamed": 0,
              "binds_first_use": 0, "binds_reused": 0, "binds_unnamed": 0,
              "executed": {"SELECT * FROM perf_test($1)": statements} if statements else {}, "undecoded": 0,
              "peak_flight_statements": 1 if statements else 0, "peak_unanswered_syncs": 0}
    return {"id": 1, "closed": False, "observable": True, "counts": counts}


def _verification(workload: str) -> WorkloadVerification:
    return WorkloadVerification(stack="seed000-go-pgx", workload=workload, ok=True, checks=[])


def _answering_client() -> httpx.Client:
    return httpx.Client(base_url="http://stack", transport=httpx.MockTransport(lambda _r: httpx.Response(200, json=[])))


def test_answered_requests_that_reach_no_observer_are_not_measured_rather_than_zero_round_trips():
    verification = _verification(wl.PERF_TEST)
    with _answering_client() as client:
        observe_into(verification, client, 1, _Observer([[]]), seed=1)  # type: ignore[arg-type]
    assert verification.wire is None
    assert verification.wire_unavailable is not None
    assert f"none of its {WIRE_REQUESTS} answered requests reached PostgreSQL" in verification.wire_unavailable


def test_a_stack_whose_statements_pass_the_observer_keeps_its_profile():
    verification = _verification(wl.PERF_TEST)
    requests = WIRE_REQUESTS + CONCURRENT_REQUESTS
    snapshots = [[_connection(0, 0)], [_connection(WIRE_REQUESTS, WIRE_REQUESTS)], [_connection(requests, requests)]]
    with _answering_client() as client:
        observe_into(verification, client, 1, _Observer(snapshots), seed=1)  # type: ignore[arg-type]
    assert verification.wire_unavailable is None
    assert verification.wire is not None and verification.wire.round_trips_per_request == 1


def test_static_touches_no_database_so_nothing_on_the_wire_is_its_true_profile():
    verification = _verification(wl.STATIC)
    with _answering_client() as client:
        observe_into(verification, client, None, _Observer([[]]), seed=1)  # type: ignore[arg-type]
    assert verification.wire is not None and verification.wire.round_trips_per_request == 0
    assert verification.wire_unavailable is None


def _ctx() -> SimpleNamespace:
    return SimpleNamespace(placement=SimpleNamespace(kind=lambda _role: "local", address=lambda _role: "127.0.0.1"))


def test_a_stack_with_a_fixed_database_port_is_not_observed_and_says_why():
    fixed = SimpleNamespace(database_port=5432)  # Stack.database_port: stack.toml `[database] port`
    free = SimpleNamespace(database_port=None)
    reason = unobservable(_ctx(), fixed)  # type: ignore[arg-type]
    assert reason is not None and "[database] port = 5432" in reason
    assert unobservable(_ctx(), free) is None  # type: ignore[arg-type]
    assert unobservable(_ctx()) is None  # type: ignore[arg-type]


def test_the_report_says_not_measured_with_the_reason():
    results = sample_results()
    missing = results.verifications[0]
    missing.wire, missing.wire_unavailable = None, "its database port is fixed ([database] port = 5432)"
    assert f"Not measured: {missing.stack} (its database port is fixed ([database] port = 5432))" in section(results)


def test_a_stack_marked_unobservable_gets_the_reason_on_each_workload_and_one_log_line():
    lines: list[str] = []
    profiled = _verification(wl.TX)
    ctx = SimpleNamespace(results=SimpleNamespace(verifications=[_verification(wl.PERF_TEST), profiled]),
                          log=lines.append, config=SimpleNamespace(wire_under_load=True))
    observer = _Observer([[_connection(0, 0)], [_connection(20, 20)]])
    with _answering_client() as client:  # tx has its profile: the reason is not written over it
        observe_into(profiled, client, None, observer, seed=1)  # type: ignore[arg-type]
    mark_unavailable(ctx, "seed000-go-pgx", "its database port is fixed")  # type: ignore[arg-type]
    assert [v.wire_unavailable for v in ctx.results.verifications] == ["its database port is fixed", None]
    assert lines == ["[seed000-go-pgx] on the wire: not measured: its database port is fixed"]
    # --wire-under-load was asked: neither workload has an under-load profile, both say why
    assert [v.wire_under_load_unavailable for v in ctx.results.verifications] == ["its database port is fixed"] * 2
