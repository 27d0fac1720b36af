"""What a toxiproxy proxy costs: request/response round trips through a proxy and straight to the same echo
server, interleaved on one persistent connection each (`measure_overhead`): the latency the proxy adds at
zero configured delay, and its CPU per round trip (figures measured here: system/toxiproxy.py's docstring)."""

from __future__ import annotations

import dataclasses
import secrets
import socket
import socketserver
import statistics
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from pgarena.system.toxiproxy import Toxiproxy, ToxiproxyError, join_host_port

DEFAULT_OVERHEAD_ROUND_TRIPS = 5000
DEFAULT_OVERHEAD_WARMUP = 100
DEFAULT_OVERHEAD_PAYLOAD_BYTES = 64
DEFAULT_OVERHEAD_MAX_S = 60.0
"""`measure_overhead`'s defaults: measured round trips, warm-up round trips, bytes each way, and the time
limit in seconds (warm-up included)."""


class _EchoHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.request.settimeout(EchoServer.IDLE_TIMEOUT_S)
        try:
            while data := self.request.recv(65536):
                self.request.sendall(data)
        except OSError:  # reset by a toxic, or idle past the timeout
            pass


class EchoServer:
    """A TCP echo server on a thread (a thread per connection) at `host`, a free port: the upstream that
    `measure_overhead` and the tests time round trips against. A context manager."""

    IDLE_TIMEOUT_S = 60.0
    """A connection silent this long is closed, so that no handler thread waits forever."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._server = socketserver.ThreadingTCPServer((host, 0), _EchoHandler)
        self._server.daemon_threads = True
        self.host, self.port = self._server.server_address[:2]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="echo-server", daemon=True)

    @property
    def address(self) -> str:
        """`host:port` for a toxiproxy upstream."""
        return join_host_port(self.host, self.port)

    def __enter__(self) -> EchoServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def connect(address: str, timeout_s: float) -> socket.socket:
    """A TCP connection to `host:port` with Nagle off (a request/response client), `timeout_s` per call."""
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def round_trip_ns(sock: socket.socket, payload: bytes) -> int:
    """Send `payload` and read as many bytes back; nanoseconds from send to the last byte."""
    started = time.perf_counter_ns()
    sock.sendall(payload)
    received = 0
    while received < len(payload):
        chunk = sock.recv(len(payload) - received)
        if not chunk:
            raise ConnectionError("the connection closed during a round trip")
        received += len(chunk)
    return time.perf_counter_ns() - started


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0 < q < 1), Hyndman & Fan type 7 (R's and numpy's default): the standard library's
    `statistics.quantiles(method="inclusive")` at a resolution of 1/1000."""
    if len(values) == 1:
        return float(values[0])
    return statistics.quantiles(values, n=1000, method="inclusive")[round(q * 1000) - 1]


@dataclass(frozen=True)
class ProxyOverhead:
    """Round trips through a toxiproxy proxy against the same round trips straight to its upstream.

    Both run on one persistent connection each, interleaved (alternating which goes first), after a
    warm-up, so the machine's noise falls on both alike. "Added" figures are proxied minus direct of the
    same statistic; at `configured_rtt_ms` 0 they are toxiproxy's own cost.
    """

    round_trips: int
    """Measured pairs (fewer than asked if the time limit came first)."""
    payload_bytes: int
    configured_rtt_ms: float
    direct_median_us: float
    direct_p99_us: float
    proxied_median_us: float
    proxied_p99_us: float
    added_median_us: float
    added_p99_us: float
    toxiproxy_cpu_seconds: float
    """The server's CPU over the measured round trips (psutil, 10 ms resolution)."""
    cpu_us_per_round_trip: float

    def as_dict(self) -> dict:
        """The fields as a JSON-ready dict."""
        return dataclasses.asdict(self)


def summarize_round_trips(direct_ns: Sequence[int], proxied_ns: Sequence[int], *, cpu_seconds: float,
                          payload_bytes: int, configured_rtt_ms: float = 0.0) -> ProxyOverhead:
    """A ProxyOverhead from paired round-trip times (ns) and the proxy's CPU seconds over them."""
    if not direct_ns or len(direct_ns) != len(proxied_ns):
        raise ValueError("need the same number (> 0) of direct and proxied round trips")
    direct = [ns / 1000 for ns in direct_ns]
    proxied = [ns / 1000 for ns in proxied_ns]
    d50, d99 = statistics.median(direct), percentile(direct, 0.99)
    p50, p99 = statistics.median(proxied), percentile(proxied, 0.99)
    return ProxyOverhead(
        round_trips=len(direct), payload_bytes=payload_bytes, configured_rtt_ms=configured_rtt_ms,
        direct_median_us=d50, direct_p99_us=d99, proxied_median_us=p50, proxied_p99_us=p99,
        added_median_us=p50 - d50, added_p99_us=p99 - d99, toxiproxy_cpu_seconds=cpu_seconds,
        cpu_us_per_round_trip=cpu_seconds * 1e6 / len(direct))


def measure_overhead(toxiproxy: Toxiproxy, *, rtt_ms: float = 0, round_trips: int = DEFAULT_OVERHEAD_ROUND_TRIPS,
                     warmup_round_trips: int = DEFAULT_OVERHEAD_WARMUP,
                     payload_bytes: int = DEFAULT_OVERHEAD_PAYLOAD_BYTES, max_seconds: float = DEFAULT_OVERHEAD_MAX_S,
                     echo_host: str = "127.0.0.1", listen_host: str | None = None) -> ProxyOverhead:
    """The latency and CPU a running toxiproxy adds to request/response round trips (see ProxyOverhead).

    Starts an echo server at `echo_host` (reachable from toxiproxy), a temporary proxy to it (listening on
    `listen_host`, default the server's host) with `set_rtt(rtt_ms)`, and times at most `round_trips`
    interleaved pairs within `max_seconds` (warm-up included); the proxy is deleted afterwards.
    """
    if round_trips < 1 or payload_bytes < 1:
        raise ValueError("round_trips and payload_bytes must be at least 1")
    payload = (bytes(range(256)) * (payload_bytes // 256 + 1))[:payload_bytes]
    deadline = time.monotonic() + max_seconds
    direct_ns: list[int] = []
    proxied_ns: list[int] = []
    with EchoServer(echo_host) as echo:
        proxy = toxiproxy.proxy(f"pgarena-overhead-{secrets.token_hex(4)}", upstream=echo.address,
                                listen=join_host_port(listen_host or toxiproxy.host, 0))
        try:
            proxy.set_rtt(rtt_ms)
            with connect(echo.address, max_seconds) as direct, connect(proxy.listen, max_seconds) as proxied:
                for _ in range(warmup_round_trips):
                    if time.monotonic() > deadline:
                        break
                    round_trip_ns(direct, payload)
                    round_trip_ns(proxied, payload)
                cpu_before = toxiproxy.cpu_seconds()
                for i in range(round_trips):
                    if time.monotonic() > deadline:
                        break
                    if i % 2:
                        direct_ns.append(round_trip_ns(direct, payload))
                        proxied_ns.append(round_trip_ns(proxied, payload))
                    else:
                        proxied_ns.append(round_trip_ns(proxied, payload))
                        direct_ns.append(round_trip_ns(direct, payload))
                cpu_after = toxiproxy.cpu_seconds()
        finally:
            proxy.delete()
    if not direct_ns:
        raise ToxiproxyError(f"no round trip measured within {max_seconds} s")
    return summarize_round_trips(direct_ns, proxied_ns, cpu_seconds=cpu_after - cpu_before,
                                 payload_bytes=payload_bytes, configured_rtt_ms=rtt_ms)
