"""`--wire-under-load` (issue 25): the profile of a window of load between two observer reads, the observer's
count of connections open at once, the option's validation and the report's under-load table."""

from __future__ import annotations

import shutil
import socket
import time

import pytest
from pydantic import ValidationError

from pgarena.config.profiles import build_config
from pgarena.report.html import html_payload
from pgarena.report.wire import section
from pgarena.results.wire import WireLoad, WireProfile
from pgarena.system.wireobserver import WireObserver, observer_binary
from pgarena.verify.wire import LOAD_STATEMENTS, load_profile
from tests.fixtures.report_run import sample_results
from tests.unit.test_wire import _connection

LOAD = WireLoad(engine="oha", vus=8, duration_seconds=3.0, request_cap=1000, peak_open_connections=0)


def _read(*connections: dict, peak_open: int = 0) -> dict:
    """An observer read (`WireObserver.read()`) of these connections."""
    return {"connections": list(connections), "open_connections": sum(not c["closed"] for c in connections),
            "peak_open_connections": peak_open}


def _closed(connection: dict) -> dict:
    return {**connection, "closed": True}


def test_a_window_of_load_divides_by_the_generators_requests_and_counts_the_pools_churn():
    def tx(id_: int, transactions: int) -> dict:  # transactions of 7 statements in 7 round trips
        return _connection(id_, round_trips=7 * transactions, executes=7 * transactions,
                           texts={"UPDATE pgbench_accounts SET abalance = 1": 7 * transactions})

    before = _read(tx(1, 10), tx(2, 1))
    after = _read(tx(1, 110), _closed(tx(2, 101)),  # 100 each, then the pool closed connection 2
                  tx(3, 100),  # opened during the load: 100 more
                  peak_open=3)
    p = load_profile(before, after, requests=300, answered=297, load=LOAD, burst_peak_statements=1)
    assert p.round_trips_per_request == 7 and p.statements_per_request == 7 and p.bytes_to_server_per_request == 700
    assert p.statements[0].per_request == 7 and p.requests == 300 and p.answered == 297
    assert p.connections == 3 and p.connections_opened == 1
    assert p.load is not None and p.load.peak_open_connections == 3 and p.load.connections_closed == 1
    assert p.load.vus == 8 and p.load.request_cap == 1000 and not p.capped
    assert not p.across_requests and p.concurrent_requests == 0


def test_a_connection_closed_before_the_window_is_not_churn_of_the_window():
    gone = _closed(_connection(1, round_trips=5, executes=5))
    p = load_profile(_read(gone), _read(gone, _closed(_connection(2, round_trips=10, executes=10))), requests=10,
                     answered=10, load=LOAD, burst_peak_statements=None)
    assert p.load is not None and p.load.connections_closed == 1  # only the one opened and closed in the window
    assert p.connections_opened == 1 and p.round_trips_per_request == 1


def test_more_statements_per_flight_than_any_request_of_the_burst_is_pipelining_across_requests():
    before = _read(_connection(1))
    after = _read(_connection(1, round_trips=50, executes=200, peak=6))
    assert load_profile(before, after, requests=100, answered=100, load=LOAD, burst_peak_statements=2).across_requests
    assert not load_profile(before, after, requests=100, answered=100, load=LOAD,
                            burst_peak_statements=6).across_requests
    assert not load_profile(before, after, requests=100, answered=100, load=LOAD,
                            burst_peak_statements=None).across_requests


def test_a_simple_protocol_drivers_own_texts_are_kept_up_to_a_bound_and_summed_per_kind():
    # a simple-protocol driver sends its values inside the text: one text per request
    texts = {f"UPDATE pgbench_accounts SET abalance = abalance + {i} WHERE aid = {i}": 1 for i in range(100)}
    after = _read(_connection(1, round_trips=300, executes=300, texts={**texts, "begin": 100, "commit": 100}))
    p = load_profile(_read(_connection(1)), after, requests=100, answered=100, load=LOAD, burst_peak_statements=1)
    assert len(p.statements) == LOAD_STATEMENTS + 1
    assert [(s.text, s.kind) for s in p.statements[:2]] == [("begin", "transaction"), ("commit", "transaction")]
    other = p.statements[-1]
    assert other.kind == "workload" and other.text == f"({100 - LOAD_STATEMENTS + 2} other workload statement texts)"
    assert sum(s.per_request for s in p.statements if s.kind == "workload") == pytest.approx(1)


def test_a_window_that_reached_its_request_cap_says_so():
    p = load_profile(_read(_connection(1)), _read(_connection(1, round_trips=990, executes=990)), requests=990,
                     answered=990, load=LOAD, burst_peak_statements=1)
    assert p.capped
    assert not p.model_copy(update={"requests": 900}).capped
    assert not WireProfile.model_validate({**p.model_dump(), "load": None}).capped  # a burst profile never is


def _until(observer: WireObserver, open_connections: int) -> dict:
    """Read the observer until it has this many connections open (bounded: 5 s); the last read."""
    deadline = time.monotonic() + 5
    while (read := observer.read())["open_connections"] != open_connections and time.monotonic() < deadline:
        time.sleep(0.02)
    return read


def test_the_observer_counts_connections_open_at_once_since_the_previous_read(tmp_path):
    if shutil.which("go") is None:
        pytest.skip("Go is not on PATH: it builds the wire observer")
    fake = socket.create_server(("127.0.0.1", 0))
    with fake, WireObserver(f"127.0.0.1:{fake.getsockname()[1]}", log_path=tmp_path / "observer.log",
                            binary=observer_binary()) as observer:
        clients = [socket.create_connection((observer.listen_host, observer.listen_port), timeout=10)
                   for _ in range(3)]
        servers = [fake.accept()[0] for _ in clients]  # the observer dialled PostgreSQL's side for each (in any order)
        assert _until(observer, 3)["peak_open_connections"] == 3
        for sock in clients[:2]:
            sock.close()
        assert observer.read()["peak_open_connections"] == 3  # since the last read, 3 were open at once
        settled = _until(observer, 1)
        assert settled["open_connections"] == 1 and sum(c["closed"] for c in settled["connections"]) == 2
        assert observer.read()["peak_open_connections"] == 1  # each read starts the peak again from those open
        for sock in clients[2:] + servers:
            sock.close()


def test_the_option_is_off_by_default_and_refused_where_no_observer_can_sit(tmp_path, monkeypatch):
    monkeypatch.setattr("pgarena.config.profiles.default_cpu_sets", lambda: ([0], [1]))
    config = build_config(profile="quick", project_dir=tmp_path)
    assert not config.wire_under_load and config.wire_load_s == 3.0 and config.wire_load_max_requests == 10_000
    asked = build_config(profile="quick", project_dir=tmp_path, overrides={
        "wire_under_load": True, "wire_load_s": 1.0, "wire_load_max_requests": 500})
    assert asked.redacted()["wire_load_seconds"] == 1.0 and "wire_load_s" not in asked.redacted()
    for overrides, words in (({"wire_load_s": 0.5}, "greater than or equal to 1"),
                             ({"wire_load_s": 61}, "less than or equal to 60"),
                             ({"wire_load_max_requests": 0}, "greater than or equal to 1"),
                             ({"netns": True}, "--wire-under-load with --netns"),
                             ({"targets": {"remote": "http://10.0.0.9:8080"}, "database_url": "postgresql://h/db",
                               "db_password": "x"}, "--wire-under-load with --target")):
        with pytest.raises(ValidationError, match=words):
            build_config(profile="quick", project_dir=tmp_path, overrides={"wire_under_load": True, **overrides})


def test_a_stored_config_and_verification_of_before_the_option_still_load(tmp_path):
    import json

    from pgarena.config.run import RunConfig
    from pgarena.results.store import load, save

    results = sample_results()
    save(results, tmp_path)
    document = json.loads((tmp_path / "results.json").read_text())
    for verification in document["verifications"]:
        verification.pop("wire_under_load", None)
        verification.pop("wire_under_load_unavailable", None)
    (tmp_path / "results.json").write_text(json.dumps(document))
    loaded = load(tmp_path)
    assert all(v.wire_under_load is None and v.wire_under_load_unavailable is None for v in loaded.verifications)
    stored = RunConfig.model_validate({k: v for k, v in build_config(profile="quick", project_dir=tmp_path)
                                       .redacted().items() if not k.startswith("wire_")})
    assert not stored.wire_under_load


def test_the_report_puts_the_load_beside_the_burst_and_says_what_was_not_measured():
    results = sample_results()
    text = section(results)
    assert "Under load (`--wire-under-load`)" in text
    assert ("| go-fast | tx | 50 VUs · 3 s · 2,714 requests (oha) | 8 → 8.01 | 8 → 8 |" in text
            and "| 9 / 0 / 10 (pool 10) |" in text)
    assert "Not measured under load: node-wrong · perf-test (the load through the observer failed: oha output " \
           "unreadable)." in text
    payload = html_payload(results)["wire"]
    assert payload["load_rows"][0][3] == "8 → 8.01" and len(payload["load_headers"]) == len(payload["load_rows"][0])
    assert payload["load_missing"] == ["node-wrong · perf-test (the load through the observer failed: oha output "
                                       "unreadable)"]
    for v in results.verifications:  # not asked: nothing about the load
        v.wire_under_load, v.wire_under_load_unavailable = None, None
    assert "under load" not in section(results).lower()
    assert not html_payload(results)["wire"]["load_rows"] and not html_payload(results)["wire"]["load_missing"]
