"""Toxiproxy (Shopify's TCP proxy) as pgarena's network delay and fault injector where the kernel has no netem.

Toxiproxy forwards TCP connections from a listen address to an upstream and passes the bytes of each
direction through a chain of "toxics" set over its REST API: `latency` (delay), `timeout` (stall),
`reset_peer` (TCP RST) and others. pgarena puts one proxy between a stack and PostgreSQL and drives it with
the classes here and in its two sibling modules:

- `toxiproxy_install.install()` builds the pinned release from the Go module proxy into pgarena's tool
  cache (`<cache>/toxiproxy-<version>/bin/server`: the package is `cmd/server`, so the binary is
  `server`); `toxiproxy_install.locate()` finds it there. About 2 minutes and 43 CPU seconds cold on this
  2-core machine.
- `Toxiproxy` runs the server as a context manager: its own process group, optionally pinned to CPUs and
  started through an argv prefix (`["ip", "netns", "exec", "<ns>"]`), its API polled until it answers
  (bounded), stopped with its whole tree on exit. `cpu_seconds()` is the server's own CPU, so that it can
  be counted apart from the stack's.
- `Proxy` is one proxy: `set_rtt`, `timeout`, `reset_peer`, `disable`/`enable`, or any toxic by name.
- `toxiproxy_overhead.measure_overhead()` times request/response round trips through a proxy and direct
  to the same echo server: the latency the proxy adds at zero configured delay, and its CPU per round trip.

Semantics of toxiproxy 2.5.0 that callers must know (read in its source: link.go, toxics/*.go):

- The latency toxic counts whole milliseconds (`int64`), per chunk, from when toxiproxy read the chunk. A
  request/response round trip crosses the upstream stream once and the downstream stream once, so
  `set_rtt(rtt)` puts ceil(rtt/2) on upstream and floor(rtt/2) on downstream, jitter 0: a round trip gains
  `rtt` whatever its size. A sub-millisecond RTT cannot be expressed (netem can); it is refused.
- Toxics apply to open connections as well as new ones. Removing a `timeout` toxic closes the
  connections it was stalling (the toxic's Cleanup closes its stream).
- `reset_peer` acts when data next flows on its stream. Connections opened while it is present are
  closed with SO_LINGER 0, so the peer gets a TCP RST ("connection reset by peer"); connections that
  were open before it was added are closed normally (the peer reads end-of-file).
- `disable()` stops the listener (new connections are refused) and closes every open connection;
  `enable()` listens again on the same address.

Measured here (2 shared cores, load average ~18, 64-byte echo round trips, `measure_overhead` defaults):
at zero delay toxiproxy adds 37–43 µs to the median round trip (direct ~21 µs) and uses 44–62 µs of CPU
per round trip; pinned to one busy core, 80–92 µs and 76–92 µs. With a delay the added time is the RTT
plus the late wake-ups of two Go timers: +1.17–1.31 ms at 1 ms, +4.75–5.17 ms at 4 ms. So pgarena
should record the RTT it measured (`toxiproxy_overhead.measure_overhead(rtt_ms=…)`) next to the one it
configured.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shlex
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil

from pgarena.system.process import NotReady, ProcessTracker, ServerProcess, tail, wait_until_healthy
from pgarena.system.toxiproxy_install import TOXIPROXY_VERSION, ToxiproxyUnavailable, install_hint, locate

STREAMS = ("upstream", "downstream")
"""Toxiproxy's two directions: upstream is client → upstream server, downstream is the answers."""
RTT_TOXIC = "pgarena_rtt_{stream}"
TIMEOUT_TOXIC = "pgarena_timeout_{stream}"
RESET_TOXIC = "pgarena_reset_{stream}"
DEFAULT_START_TIMEOUT_S = 20.0
DEFAULT_API_TIMEOUT_S = 10.0
"""Per API request (toxiproxy itself answers within 25 s or gives up on the request)."""
DEFAULT_STOP_GRACE_S = 5.0
DEFAULT_LOG_LEVEL = "warn"
"""Toxiproxy logs every accepted connection at `info`: that costs CPU under load, so pgarena asks for warnings only."""
START_ATTEMPTS = 3
"""Starts tried with a freshly picked API port when the previous one was taken meanwhile."""
DEFAULT_OVERHEAD_ROUND_TRIPS = 5000


class ToxiproxyError(Exception):
    """The server did not start, or its API refused a request (the message has its answer)."""


def rtt_split_ms(rtt_ms: float) -> tuple[int, int]:
    """(upstream, downstream) latency in whole ms whose sum is `rtt_ms`; the odd millisecond goes upstream.

    Raises ValueError for a negative or fractional RTT: toxiproxy's latency toxic counts whole ms.
    """
    if not math.isfinite(rtt_ms) or rtt_ms < 0:
        raise ValueError(f"RTT must be a non-negative number of ms, not {rtt_ms}")
    whole = round(rtt_ms)
    if abs(rtt_ms - whole) > 1e-9:
        raise ValueError(f"toxiproxy delays in whole milliseconds; an RTT of {rtt_ms} ms needs netem")
    return whole - whole // 2, whole // 2


def toxic_body(kind: str, stream: str, attributes: dict[str, int], *, name: str | None = None,
               toxicity: float = 1.0) -> dict:
    """The JSON body of `POST /proxies/<proxy>/toxics`; `toxicity` is the fraction of connections affected."""
    if stream not in STREAMS:
        raise ValueError(f"stream must be one of {', '.join(STREAMS)}, not {stream!r}")
    if not 0.0 <= toxicity <= 1.0:
        raise ValueError(f"toxicity is a fraction of connections (0 to 1), not {toxicity}")
    return {"name": name or f"{kind}_{stream}", "type": kind, "stream": stream, "toxicity": toxicity,
            "attributes": dict(attributes)}


def join_host_port(host: str, port: int) -> str:
    """`host:port`, with brackets around an IPv6 address."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _pick_port(host: str) -> int:
    """A port free on `host` right now (in this network namespace; a guess for a host only another one has)."""
    for address in (host, "127.0.0.1"):
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        try:
            with socket.socket(family, socket.SOCK_STREAM) as probe:
                probe.bind((address, 0))
                return probe.getsockname()[1]
        except OSError:
            continue
    raise ToxiproxyError(f"cannot pick a free port on {host}; pass api_port")


class _Api:
    """Toxiproxy's REST API: one httpx client, answers checked, errors turned into ToxiproxyError."""

    def __init__(self, base_url: str, timeout_s: float) -> None:
        # NOTE: trust_env=False: a proxy from the environment must never carry this loopback/namespace traffic.
        self.client = httpx.Client(base_url=base_url, timeout=timeout_s, trust_env=False)

    def call(self, method: str, path: str, body: dict | None = None) -> httpx.Response:
        try:
            response = self.client.request(method, path, json=body)
        except httpx.HTTPError as exc:
            raise ToxiproxyError(f"{method} {path}: {type(exc).__name__}: {exc}") from None
        if response.status_code >= 300:
            raise ToxiproxyError(f"{method} {path}: HTTP {response.status_code} {response.text.strip()}")
        return response


@dataclass
class Proxy:
    """One toxiproxy proxy: connections to `listen` are forwarded to `upstream` through its toxics."""

    name: str
    listen: str
    """The bound address, `host:port` (the port toxiproxy picked when asked for port 0)."""
    upstream: str
    _api: _Api = dataclasses.field(repr=False)

    @property
    def host(self) -> str:
        return self.listen.rsplit(":", 1)[0].strip("[]")

    @property
    def port(self) -> int:
        return int(self.listen.rsplit(":", 1)[1])

    def _path(self, *parts: str) -> str:
        return "/".join(["/proxies", self.name, *parts])

    def toxics(self) -> list[dict]:
        """The toxics in place, as toxiproxy lists them (name, type, stream, toxicity, attributes)."""
        return self._api.call("GET", self._path("toxics")).json()

    def add_toxic(self, kind: str, stream: str, attributes: dict[str, int], *, name: str | None = None,
                  toxicity: float = 1.0) -> str:
        """Add a toxic of type `kind` (latency, timeout, reset_peer, bandwidth, slow_close, limit_data,
        slicer) to `stream`; return its name (default `<kind>_<stream>`, which must not exist yet)."""
        body = toxic_body(kind, stream, attributes, name=name, toxicity=toxicity)
        return self._api.call("POST", self._path("toxics"), body).json()["name"]

    def update_toxic(self, name: str, attributes: dict[str, int]) -> None:
        """Change a toxic's attributes in place (open connections keep flowing)."""
        self._api.call("POST", self._path("toxics", name), {"attributes": dict(attributes)})

    def remove_toxic(self, name: str) -> None:
        """Remove a toxic (see the module's note on `timeout`: its stalled connections are closed)."""
        self._api.call("DELETE", self._path("toxics", name))

    def clear_toxics(self) -> None:
        """Remove every toxic of this proxy."""
        for toxic in self.toxics():
            self.remove_toxic(toxic["name"])

    def set_rtt(self, rtt_ms: float) -> None:
        """Make a round trip through the proxy `rtt_ms` longer: `latency` toxics split by `rtt_split_ms`,
        jitter 0, named `pgarena_rtt_<stream>`; 0 removes them. Open connections are affected too."""
        present = {toxic["name"] for toxic in self.toxics()}
        for stream, latency_ms in zip(STREAMS, rtt_split_ms(rtt_ms), strict=True):
            name = RTT_TOXIC.format(stream=stream)
            attributes = {"latency": latency_ms, "jitter": 0}
            if latency_ms == 0:
                if name in present:
                    self.remove_toxic(name)
            elif name in present:
                self.update_toxic(name, attributes)
            else:
                self.add_toxic("latency", stream, attributes, name=name)

    def timeout(self, timeout_ms: int, streams: Sequence[str] = STREAMS) -> list[str]:
        """Stall the connections: the `timeout` toxic drops all data on `streams` (default both, like a
        stalled network) and closes each connection `timeout_ms` after it starts stalling; 0 stalls until
        the toxic is removed. Returns the toxics' names (`pgarena_timeout_<stream>`) for `remove_toxic`."""
        return [self.add_toxic("timeout", stream, {"timeout": int(timeout_ms)},
                               name=TIMEOUT_TOXIC.format(stream=stream)) for stream in streams]

    def reset_peer(self, timeout_ms: int = 0, stream: str = "downstream") -> str:
        """Reset connections: when data next flows on `stream` (toxiproxy's default: downstream, the
        answers), wait `timeout_ms` and close; a TCP RST for connections opened after this call (see the
        module's note). Returns the toxic's name (`pgarena_reset_<stream>`) for `remove_toxic`."""
        return self.add_toxic("reset_peer", stream, {"timeout": int(timeout_ms)},
                              name=RESET_TOXIC.format(stream=stream))

    def disable(self) -> None:
        """Stop listening and close every connection through this proxy (new ones are refused)."""
        self._api.call("POST", self._path(), {"enabled": False})

    def enable(self) -> None:
        """Listen again on the same address."""
        self.listen = self._api.call("POST", self._path(), {"enabled": True}).json()["listen"]

    def delete(self) -> None:
        """Remove the proxy (its connections are closed)."""
        self._api.call("DELETE", self._path())


class Toxiproxy:
    """A toxiproxy server for the duration of a `with` block.

    `host` is where the API listens (and where proxies listen by default): an address reachable from
    pgarena, so inside a network namespace (`prefix=["ip", "netns", "exec", ns]`) it is the namespace's
    own address. The API port is picked free (`api_port` to fix it). `cpus` pins the server (every thread)
    before it starts; `tracker` records it so that a killed pgarena's watchdog stops it; its output goes
    to `log_path`.
    """

    def __init__(self, binary: Path | None = None, *, log_path: Path, host: str = "127.0.0.1",
                 api_port: int | None = None, cpus: Sequence[int] | None = None, prefix: Sequence[str] = (),
                 tracker: ProcessTracker | None = None, log_level: str = DEFAULT_LOG_LEVEL,
                 start_timeout_s: float = DEFAULT_START_TIMEOUT_S) -> None:
        found = binary or locate()
        if found is None:
            raise ToxiproxyUnavailable(f"toxiproxy {TOXIPROXY_VERSION} is not installed: {install_hint()}")
        self.binary = found
        self.log_path = log_path
        self.host = host
        self.cpus = list(cpus) if cpus else None
        self.prefix = list(prefix)
        self._api_port = api_port
        self._tracker = tracker
        self._log_level = log_level
        self._start_timeout_s = start_timeout_s
        self._server: ServerProcess | None = None
        self._api: _Api | None = None
        self._final_cpu_s: float | None = None
        self.api_url = ""

    def argv(self, api_port: int) -> list[str]:
        """The server's command line (after the prefix)."""
        return [*self.prefix, str(self.binary), "-host", self.host, "-port", str(api_port)]

    def start(self) -> Toxiproxy:
        """Start the server and wait (at most `start_timeout_s`) until its API answers."""
        if self._server is not None:
            raise ToxiproxyError(f"toxiproxy is already running (pid {self._server.pid})")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "LOG_LEVEL": self._log_level}
        deadline = time.monotonic() + self._start_timeout_s
        attempts = 1 if self._api_port else START_ATTEMPTS
        for attempt in range(1, attempts + 1):
            port = self._api_port or _pick_port(self.host)
            server = ServerProcess("exec " + shlex.join(self.argv(port)), cwd=self.log_path.parent, env=env,
                                   log_path=self.log_path, cpus=self.cpus, tracker=self._tracker,
                                   role="toxiproxy")
            url = f"http://{join_host_port(self.host, port)}"
            try:
                wait_until_healthy(server, f"{url}/version", max(deadline - time.monotonic(), 0.5))
            except NotReady as exc:
                exited = server.exit_code() is not None
                server.stop(grace_s=2.0)
                if exited and attempt < attempts and time.monotonic() < deadline:
                    continue  # most likely the port was taken between picking and binding it
                raise ToxiproxyError(f"toxiproxy did not start: {exc}; {self.log_path}:\n"
                                     f"{tail(self.log_path)}") from None
            except BaseException:
                server.stop(grace_s=2.0)
                raise
            self._server, self.api_url = server, url
            self._api = _Api(url, DEFAULT_API_TIMEOUT_S)
            self._final_cpu_s = None
            return self
        raise AssertionError("unreachable")

    def stop(self) -> None:
        """Stop the server and its process tree (idempotent); `cpu_seconds()` keeps its last reading."""
        if self._server is None:
            return
        self._final_cpu_s = self.cpu_seconds()
        if self._api is not None:
            self._api.client.close()
            self._api = None
        self._server.stop(grace_s=DEFAULT_STOP_GRACE_S)
        self._server = None

    def __enter__(self) -> Toxiproxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def pid(self) -> int:
        """The server's pid (the prefix execs it, so it is the process pgarena started)."""
        return self._running().pid

    def _running(self) -> ServerProcess:
        if self._server is None:
            raise ToxiproxyError("toxiproxy is not running")
        return self._server

    def _client(self) -> _Api:
        self._running()
        assert self._api is not None
        return self._api

    def version(self) -> str:
        """The version the server reports (`GET /version`)."""
        return self._client().call("GET", "/version").text.strip()

    def proxy(self, name: str, *, upstream: str, listen: str | None = None) -> Proxy:
        """Create a proxy `name` from `listen` (default `<host>:0`: a free port, read back from the
        answer) to `upstream` (`host:port` as toxiproxy's namespace sees it), enabled, without toxics."""
        body = {"name": name, "listen": listen or join_host_port(self.host, 0), "upstream": upstream,
                "enabled": True}
        data = self._client().call("POST", "/proxies", body).json()
        return Proxy(name=data["name"], listen=data["listen"], upstream=data["upstream"], _api=self._client())

    def reset(self) -> None:
        """Remove every toxic of every proxy and enable every proxy (`POST /reset`)."""
        self._client().call("POST", "/reset")

    def cpu_seconds(self) -> float:
        """User + system CPU seconds the server has used so far (psutil; the clock-tick resolution of
        /proc, 10 ms here). After `stop()`, the last reading before it stopped."""
        if self._server is None:
            return self._final_cpu_s or 0.0
        total = 0.0
        try:
            root = psutil.Process(self._server.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return self._final_cpu_s or 0.0
        for proc in procs:
            try:
                times = proc.cpu_times()
                total += times.user + times.system
            except psutil.Error:
                continue
        return total
