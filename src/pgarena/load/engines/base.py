"""The load-generator interface: build a command for one measured window, parse its JSON output."""

from __future__ import annotations

import os
import re
import shutil
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from pgarena.results.models import Errors, Latency


class EngineUnavailable(Exception):
    """The generator's binary is missing; the message says how to install it."""


class EngineOutputError(Exception):
    """The generator's machine-readable output is missing or not understood."""


@dataclass(frozen=True)
class LoadSpec:
    """One window. Closed model (rate None): `connections` concurrent clients repeat one request for
    `duration_s`. Open model: requests start at `rate` per second on a fixed schedule whatever the answers
    do, with at most `connections` in flight; latency counts from each request's scheduled start."""

    url: str
    method: str
    connections: int
    duration_s: float
    timeout_s: float
    body: bytes | None = None
    content_type: str | None = None
    bodies_file: Path | None = None
    """One request body per line; each request takes one (tx: pre-generated random transactions)."""
    workload: str = ""
    rate: float | None = None
    urls_file: Path | None = None
    """One absolute URL per line; each request takes one at random (the cell's variants). `url` is then
    the first of them."""
    timeline_path: Path | None = None
    """k6: also write every request to this file (`--out json=`), for a resilience timeline."""
    latencies: bool = True
    """oha: keep every request's latency (`--db-url`) for the percentiles; False for windows that are not
    counted (warm-ups, re-warms), which then skip writing and reading it (about 30 ms a window)."""
    lead_in_s: float = 0.0
    """Load before the measured `duration_s` in the same generator process, over the same connections (the
    re-warm, for an engine with `lead_in`): the window counts only the answers that ended after it."""


@dataclass(frozen=True)
class LoadOutcome:
    """What a generator measured in one window (request latency, not iteration time)."""

    requests: int
    """Completed requests, failed ones included (requests cut off at the window's deadline are not)."""
    duration_seconds: float
    latency: Latency
    errors: Errors
    status_codes: dict[str, int]
    checks_total: int = 0
    checks_failed: int = 0
    dropped: int | None = None
    """Open model: requests the generator itself reports it could not start on schedule (k6's
    dropped_iterations); None when it does not report them (oha: the caller uses offered − completed)."""
    uncounted_2xx: int = 0
    uncounted_other: int = 0
    """A window after a lead-in: the 2xx and the other answers of the same process outside the measured span
    (the lead-in's, and those that ended after the deadline). They reached the stack and its database like
    the counted ones, so the database's bookkeeping (tx, statements per request) adds them."""

    @property
    def answered_2xx(self) -> int:
        """Answers with a 2xx status."""
        return sum(count for code, count in self.status_codes.items() if code.startswith("2"))

    @property
    def rps(self) -> float:
        """Answered work: 2xx answers per second of the window. Failed requests are not throughput."""
        return self.answered_2xx / self.duration_seconds if self.duration_seconds else 0.0

    @property
    def requests_per_second_all(self) -> float:
        """Every completed request per second, failed ones included (what the generator did)."""
        return self.requests / self.duration_seconds if self.duration_seconds else 0.0


def tool_cache_dir() -> Path:
    """Where pgarena installs pinned tools (outside the repo, so fresh clones reuse them)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pgarena" / "tools"


def find_binary(name: str, extra: list[Path]) -> Path | None:
    """`name` next to this Python (a venv's bin), in `extra` locations, or on PATH."""
    candidates = [Path(sys.executable).parent / name, *extra]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(name)
    return Path(found) if found else None


class Engine(ABC):
    """A load generator. Subclasses name their pinned version and how to install it."""

    lead_in = False
    """Whether a window may start with a lead-in in the same process (LoadSpec.lead_in_s): the engine can tell
    when each answer ended, so the measured span is cut from the process's own timeline."""

    name: str
    pinned_version: str
    install_hint: str
    @abstractmethod
    def request_headers(self, spec: LoadSpec) -> list[tuple[str, str | None]]:
        """The headers the generator sends with each request of `spec`, in its order and spelling; a None
        value is filled per request (Host: the target's host:port; Content-Length: the body's length, only
        when there is a body). pgarena's sampler sends exactly these (checks.py)."""

    def __init__(self) -> None:
        self._binary: Path | None = None
        self.argv_prefix: tuple[str, ...] = ()
        """How the generator is started where it runs (`ip netns exec NAME` under --netns; () here)."""

    @abstractmethod
    def locate(self) -> Path | None:
        """The generator's binary, or None."""

    @property
    def binary(self) -> Path:
        if self._binary is None:
            self._binary = self.locate()
            if self._binary is None:
                raise EngineUnavailable(f"{self.name} {self.pinned_version} not found; install it: {self.install_hint}")
        return self._binary

    @abstractmethod
    def version(self) -> str:
        """The generator's version as it reports it."""

    def version_number(self) -> str:
        """The x.y.z of the binary in use (the pinned version if its version line has none); cached."""
        if not hasattr(self, "_version_number"):
            match = re.search(r"\d+\.\d+\.\d+", self.version() or "")
            self._version_number = match.group(0) if match else self.pinned_version
        return self._version_number

    @abstractmethod
    def command(self, spec: LoadSpec, workdir: Path, stem: str) -> list[str]:
        """argv for one window; output files go to `workdir` named from `stem`."""

    @abstractmethod
    def parse(self, workdir: Path, stem: str, timeout_s: float | None = None,
              offered: int | None = None) -> LoadOutcome:
        """Read the window's machine-readable output (raise EngineOutputError if unusable). `timeout_s`
        is the window's HTTP timeout: requests without an answer count at it in the latency, and so do the
        open model's dropped requests; `offered` (open model: requests scheduled in the window) tells an
        engine that does not count its dropped requests how many there were (offered − completed)."""

    def parse_after_lead_in(self, workdir: Path, stem: str, *, lead_in_s: float, window_s: float,
                            timeout_s: float) -> LoadOutcome:
        """The measured span of a window that began with a lead-in (engines with `lead_in` only)."""
        raise NotImplementedError(f"{self.name} cannot cut a window from its lead-in")

    @abstractmethod
    def raw_output(self, workdir: Path, stem: str) -> Path:
        """The file that holds the window's machine-readable output."""
