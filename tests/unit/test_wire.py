"""The wire observer (issue 25): recorded PostgreSQL conversations replayed through the real observer, the
per-request profile computed from its snapshots, the round-trip model and the report section.

The fixtures in tests/fixtures/wire/ are one connection each of three stacks' tx verification, recorded by the
observer itself (`-record`, wire/main.go), from the first ReadyForQuery on through four transactions (the
client's startup packet is not recorded; the replay sends one)."""

from __future__ import annotations

import shutil
import socket
import struct
from pathlib import Path

import pytest

from pgarena.analysis.wiremodel import RoundTripModelRow, predicted_loss, round_trip_model
from pgarena.report.markdown import render_markdown
from pgarena.report.wire import section
from pgarena.system.wireobserver import WireObserver, observer_binary
from pgarena.verify.wire import classify, profile
from tests.fixtures.report_run import sample_results

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "wire"


def _flights(path: Path) -> list[tuple[str, bytes]]:
    """The recorded messages grouped into flights: consecutive messages of one side."""
    flights: list[tuple[str, bytes]] = []
    for line in path.read_text().splitlines():
        side, message = line.split()
        if flights and flights[-1][0] == side:
            flights[-1] = (side, flights[-1][1] + bytes.fromhex(message))
        else:
            flights.append((side, bytes.fromhex(message)))
    return flights


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, f"connection closed after {len(data)} of {size} bytes"
        data += chunk
    return data


def _replay(path: Path, tmp_path: Path) -> list[list[dict]]:
    """Replay a recording through the observer (a fake server answers each client flight with the recorded
    one); a snapshot before every transaction's BEGIN and one at the end."""
    if shutil.which("go") is None:
        pytest.skip("Go is not on PATH: it builds the wire observer")
    fake = socket.create_server(("127.0.0.1", 0))
    snapshots = []
    with fake, WireObserver(f"127.0.0.1:{fake.getsockname()[1]}", log_path=tmp_path / "observer.log",
                            binary=observer_binary()) as observer:
        client = socket.create_connection((observer.listen_host, observer.listen_port), timeout=10)
        server, _ = fake.accept()
        server.settimeout(10)
        params = b"user\0pgarena\0database\0pgarena\0\0"
        startup = struct.pack("!ii", 8 + len(params), 196608) + params
        client.sendall(startup)
        assert _read_exactly(server, len(startup)) == startup
        for side, data in _flights(path):
            if side == "C" and data[:1] == b"Q" and data[5:].lower().startswith(b"begin"):
                snapshots.append(observer.snapshot())
            sender, receiver = (client, server) if side == "C" else (server, client)
            sender.sendall(data)
            assert _read_exactly(receiver, len(data)) == data  # forwarded byte for byte
        snapshots.append(observer.snapshot())
        client.close()
        server.close()
    return snapshots


def _transactions(snapshots: list[list[dict]]):
    return [profile(before, after, requests=1, answered=1) for before, after in zip(snapshots, snapshots[1:])]


def test_pgx_prepares_once_then_runs_a_transaction_in_seven_round_trips(tmp_path):
    first, *later = _transactions(_replay(FIXTURES / "go-nethttp-pgx-tx.rec", tmp_path))
    # the first use prepares each statement in its own round trip (Parse, Describe, Sync), then binds it
    assert first.round_trips_per_request == 12 and first.prepared_per_request == 5
    assert len(later) == 3
    for tx in later:
        assert tx.round_trips_per_request == 7 and tx.statements_per_request == 7
        assert tx.prepared_per_request == 0 and tx.reused_per_request == 5
        assert tx.client_messages_per_request["Query"] == 2  # begin and commit, simple protocol
        assert {s.text for s in tx.statements if s.kind == "transaction"} == {"begin", "commit"}
        assert not tx.pipelined


def test_lib_pq_parses_every_statement_unnamed_in_two_round_trips(tmp_path):
    transactions = _transactions(_replay(FIXTURES / "go-nethttp-libpq-tx.rec", tmp_path))
    assert len(transactions) == 4
    for tx in transactions:
        assert tx.round_trips_per_request == 12  # BEGIN, 5 × (Parse+Describe+Sync, Bind+Execute+Sync), COMMIT
        assert tx.unnamed_parses_per_request == 5 and tx.prepared_per_request == 0 and tx.reused_per_request == 0
        assert tx.client_messages_per_request["Sync"] == 10


def test_asyncpg_resets_the_connection_on_release_in_its_own_round_trip(tmp_path):
    first, *later = _transactions(_replay(FIXTURES / "python-fastapi-asyncpg-tx.rec", tmp_path))
    # the first use prepares with Parse, Describe, Flush and waits for the description before Bind
    assert first.round_trips_per_request == 13 and first.prepared_per_request == 5
    for tx in later:
        assert tx.round_trips_per_request == 8 and tx.reused_per_request == 5
        session = [s for s in tx.statements if s.kind == "session"]
        assert len(session) == 1 and session[0].text.startswith("SELECT pg_advisory_unlock_all();")
        assert tx.added_per_request("transaction") == 2


def _connection(id_: int, *, round_trips: int = 0, executes: int = 0, peak: int = 1, texts=None) -> dict:
    return {"id": id_, "closed": False, "observable": True, "counts": {
        "client_messages": {"Execute": executes, "Sync": round_trips}, "server_messages": {},
        "bytes_to_server": 100 * round_trips, "bytes_to_client": 50 * round_trips, "round_trips": round_trips,
        "setup_round_trips": 3, "pipelined_flights": 0, "syncs_while_waiting": 0, "parsed_named": 0,
        "parsed_unnamed": 0, "binds_first_use": 0, "binds_reused": executes, "binds_unnamed": 0,
        "executed": texts or {}, "undecoded": 0, "peak_flight_statements": peak, "peak_unanswered_syncs": 1}}


def test_a_profile_divides_the_burst_by_its_requests_and_counts_new_connections():
    before = [_connection(1, round_trips=10, executes=10, texts={"SELECT 1 FROM users": 10})]
    after = [_connection(1, round_trips=30, executes=30, texts={"SELECT 1 FROM users": 30}),
             _connection(2, round_trips=10, executes=10, texts={"SELECT 1 FROM users": 10})]
    p = profile(before, after, requests=10, answered=10)
    assert p.round_trips_per_request == 3 and p.statements_per_request == 3
    assert p.connections == 2 and p.connections_opened == 1 and p.setup_round_trips == 3
    assert p.bytes_to_server_per_request == 300 and p.reused_per_request == 3
    assert [(s.text, s.per_request) for s in p.statements] == [("SELECT 1 FROM users", 3)]
    assert not p.across_requests and p.concurrent_requests == 0


def test_more_statements_per_flight_under_concurrency_flags_pipelining_across_requests():
    before = [_connection(1)]
    after = [_connection(1, round_trips=10, executes=10, peak=1)]
    alone = profile(before, after, requests=10, answered=10,
                    concurrent=[_connection(1, round_trips=20, executes=20, peak=1)], concurrent_requests=10)
    shared = profile(before, after, requests=10, answered=10,
                     concurrent=[_connection(1, round_trips=12, executes=20, peak=4)], concurrent_requests=10)
    assert not alone.across_requests
    assert shared.across_requests and shared.concurrent_peak_statements_per_flight == 4


@pytest.mark.parametrize(("text", "kind"), [
    ("BEGIN READ WRITE", "transaction"), ("commit", "transaction"), ("SAVEPOINT a", "transaction"),
    ("SELECT pg_advisory_unlock_all();\nCLOSE ALL;\nUNLISTEN *;\nRESET ALL;", "session"),
    ("SET statement_timeout = 0", "session"), ("DISCARD ALL", "session"), ("-- ping", "session"),
    ("UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2", "workload"),
    ("SELECT * FROM perf_test($1, $2)", "workload"),
])
def test_statements_are_classified(text, kind):
    assert classify(text) == kind


def test_the_round_trip_model_follows_littles_law():
    # 10 connections at 1,000/s hold one for 10 ms per request; 7 round trips of +2 ms add 14 ms: 1000 → 416.7/s
    assert predicted_loss(7, 2.0, 1000, 10) == pytest.approx(1 - 10 / 24 / 1000 * 1000 / 1, rel=1e-9)
    assert predicted_loss(12, 2.0, 1000, 10) > predicted_loss(7, 2.0, 1000, 10)
    assert predicted_loss(7, 0.0, 1000, 10) == 0
    row = dict(stack="s", workload="tx", parameter=None, vus=10, concurrency=10, rtt_ms=2, added_ms=2.1,
               round_trips_per_request=7)
    assert RoundTripModelRow(**row, predicted_loss=0.55, measured_loss=0.5).agrees
    assert not RoundTripModelRow(**row, predicted_loss=0.65, measured_loss=0.5).agrees


def test_the_report_shows_round_trips_and_each_added_statement_on_its_own_line():
    results = sample_results()
    text = section(results)
    assert "| go-fast | tx | 8 | 8 |" in text
    assert "- go-fast · tx: `SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL;` × 1 per request" in text
    assert "## On the wire" in render_markdown(results)
    for v in results.verifications:
        v.wire = v.wire_under_load = None
    assert section(results) == "" and "## On the wire" not in render_markdown(results)


def test_the_model_reads_the_wire_profile_beside_each_db_rtt_series():
    results = sample_results()
    near = next(c for c in results.cells if c.stack == "go-fast" and c.workload == "tx")
    far = near.model_copy(deep=True)
    near.db_rtt_ms, far.db_rtt_ms = 0.0, 2.0
    far.summary.rps.median = 300.0
    results.cells.append(far)
    (row,) = [r for r in round_trip_model(results) if r.stack == "go-fast"]
    # 50 VUs on a pool of 10: 10 hold a connection; 8 round trips of +2 ms at 905/s: 905 → 10 / (10/905 + 0.016)
    assert row.concurrency == 10 and row.round_trips_per_request == 8 and row.added_ms == 2.0
    assert row.predicted_loss == pytest.approx(1 - 10 / (10 / 905 + 0.016) / 905)
    assert row.measured_loss == pytest.approx(1 - 300 / 905)
    assert "Predicted loss" in section(results) and "| go-fast | tx |" in section(results)
