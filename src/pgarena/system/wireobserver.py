"""The wire observer (wire/main.go): a PostgreSQL protocol proxy between one stack and its database.

`observer_binary()` builds the Go program once per source version into pgarena's tool cache
(`<cache>/wire-observer-<digest>/wire-observer`, system/gotool.py; its one dependency, github.com/jackc/pgx/v5/pgproto3, comes
from the Go module proxy, pinned by wire/go.sum). `WireObserver` runs it as a context manager: it listens on
a free loopback port (`listen_host`, `listen_port`: what the stack is given as its database) and forwards to
`upstream`; `snapshot()` reads every connection's cumulative counters (see wire/main.go for what is counted
and how a round trip is defined), `read()` the same with the connections open at once. `cpu_seconds()` is
the observer's own CPU, so that it is never counted as the stack's.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

from pgarena.system.gotool import GoBuildError, go_program
from pgarena.system.process import ProcessTracker, ServerProcess, tail

SOURCES = ("main.go", "go.mod", "go.sum")
BUILD_TIMEOUT_S = 300.0
START_TIMEOUT_S = 10.0
SNAPSHOT_TIMEOUT_S = 10.0


class WireObserverUnavailable(Exception):
    """The observer cannot be built or started here; the message says why."""


def observer_binary() -> Path:
    """Build (once per source version, cached) and return the observer's binary."""
    try:
        return go_program("pgarena.wire", SOURCES, "wire-observer", timeout_s=BUILD_TIMEOUT_S)
    except GoBuildError as exc:
        raise WireObserverUnavailable(str(exc)) from None


class WireObserver:
    """One observer process for the duration of a `with` block (see the module docstring).

    `upstream` is PostgreSQL's `host:port`; `log_path` receives the observer's output; `record_path`, when
    given, receives every message in hex (the unit tests' fixtures are such records)."""

    def __init__(self, upstream: str, *, log_path: Path, binary: Path | None = None,
                 record_path: Path | None = None, tracker: ProcessTracker | None = None,
                 cpus: list[int] | None = None) -> None:
        self.upstream = upstream
        self.log_path = log_path
        self.binary = binary
        self.record_path = record_path
        self._tracker = tracker
        self._cpus = cpus
        self._server: ServerProcess | None = None
        self._client: httpx.Client | None = None
        self._final_cpu_s = 0.0
        self.listen_host = ""
        self.listen_port = 0
        self.control_url = ""

    def start(self) -> WireObserver:
        """Start the observer and wait (bounded) until it listens."""
        binary = self.binary or observer_binary()
        ready = self.log_path.with_suffix(".addresses.json")
        ready.unlink(missing_ok=True)
        argv = [str(binary), "-upstream", self.upstream, "-ready", str(ready)]
        if self.record_path is not None:
            argv += ["-record", str(self.record_path)]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._server = ServerProcess("exec " + shlex.join(argv), cwd=self.log_path.parent, env=dict(os.environ),
                                     log_path=self.log_path, cpus=self._cpus, tracker=self._tracker,
                                     role="wire-observer")
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready.is_file():
            if self._server.exit_code() is not None or time.monotonic() > deadline:
                self.stop()
                raise WireObserverUnavailable(f"the wire observer did not start; {self.log_path}:\n"
                                              f"{tail(self.log_path)}")
            time.sleep(0.02)
        addresses = json.loads(ready.read_text())
        host, _, port = addresses["listen"].rpartition(":")
        self.listen_host, self.listen_port = host.strip("[]"), int(port)
        self.control_url = f"http://{addresses['control']}"
        self._client = httpx.Client(timeout=SNAPSHOT_TIMEOUT_S)
        return self

    def read(self) -> dict[str, Any]:
        """The whole /snapshot document: `connections` (as `snapshot()`), `open_connections` (open now) and
        `peak_open_connections` (most open at once since the previous read or snapshot)."""
        if self._client is None:
            raise WireObserverUnavailable("the wire observer is not running")
        response = self._client.get(f"{self.control_url}/snapshot")
        response.raise_for_status()
        return response.json()

    def snapshot(self) -> list[dict[str, Any]]:
        """Every connection's cumulative counters so far (wire/main.go `Connection`); the peaks in them are
        since the previous snapshot."""
        return self.read()["connections"]

    def cpu_seconds(self) -> float:
        """User + system CPU seconds the observer has used (its last reading once stopped)."""
        if self._server is None:
            return self._final_cpu_s
        try:
            times = psutil.Process(self._server.pid).cpu_times()
        except psutil.Error:
            return self._final_cpu_s
        return times.user + times.system

    def stop(self) -> None:
        """Stop the observer (idempotent)."""
        if self._server is None:
            return
        self._final_cpu_s = self.cpu_seconds()
        if self._client is not None:
            self._client.close()
            self._client = None
        self._server.stop(grace_s=2.0)
        self._server = None

    def __enter__(self) -> WireObserver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
