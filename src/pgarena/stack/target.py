"""A remote target seen from here: no process of ours, only an address that answers HTTP (or not).

The schedules treat every loaded stack alike; for a target the process-shaped parts are empty: no pid (so
no CPU or memory sampling: those figures are None, "not measured"), no exit code (pgarena cannot see it
exit; a target that goes away shows as failed requests), no log of its own.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from pgarena.system.process import NotReady

DEFAULT_TARGET_REACH_S = 5.0
"""How long pgarena tries to get a first HTTP answer from a target before it records it as unreachable."""


class RemoteServer:
    """The stand-in for a ServerProcess of a stack pgarena did not start (a remote target)."""

    pid: int | None = None
    """No process of this machine: the resource samplers skip it (their figures stay None)."""

    def __init__(self, url: str, log_path: Path) -> None:
        self.url = url
        self.log_path = log_path
        """pgarena's notes about the target (it has no log pgarena could read)."""
        self.started_at = time.monotonic()

    def exit_code(self) -> int | None:
        """Always None: pgarena cannot see a remote process exit (failed requests show it instead)."""
        return None

    def stop(self, grace_s: float = 0.0) -> None:  # noqa: ARG002 — pgarena never stops a target
        """Nothing: pgarena neither starts nor stops a target."""


def reach(url: str, *, deadline_s: float = DEFAULT_TARGET_REACH_S, timeout_s: float = 10.0) -> tuple[float, int]:
    """GET `url` until it answers at all (any HTTP status); (seconds taken, status). NotReady, with the last
    error, when nothing answered within `deadline_s` (at most `timeout_s` per attempt, a few attempts)."""
    started = time.monotonic()
    last = "no answer"
    delay = 0.1
    with httpx.Client(timeout=min(timeout_s, max(deadline_s, 1.0))) as client:
        for _ in range(50):  # bounded in count as well as in time
            try:
                response = client.get(url)
                return time.monotonic() - started, response.status_code
            except httpx.HTTPError as exc:
                detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                last = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
            if time.monotonic() - started + delay >= deadline_s:
                break
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
    raise NotReady(f"no HTTP answer from {url} within {deadline_s:g} s (last: {last})")
