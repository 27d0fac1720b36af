"""The clock offset of an SSH host by Cristian's method (F. Cristian, "Probabilistic clock synchronization",
Distributed Computing 3, 1989): over one connection, several round trips each read the remote
`date +%s.%N`; the remote reading happened somewhere between sending the request and reading the answer, so
for the shortest round trip the offset is remote − midpoint, give or take half that round trip."""

from __future__ import annotations

import selectors
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass

from pgarena.system.ssh.shell import remote_command
from pgarena.system.ssh.transport import DEFAULT_COMMAND_TIMEOUT_S, SshError, SshTransport, hint

DEFAULT_CLOCK_SAMPLES = 9
"""Round trips `clock_offset` makes; the shortest one gives the offset."""


@dataclass(frozen=True)
class ClockSample:
    """One round trip: local wall-clock time when the request was sent (`sent_s`), the remote clock's reading
    (`remote_s`), and the round trip measured on the local monotonic clock (`round_trip_s`)."""

    sent_s: float
    remote_s: float
    round_trip_s: float


def offset_from_samples(samples: Sequence[ClockSample]) -> tuple[float, float]:
    """(offset, uncertainty) in seconds, remote clock − local clock, from the shortest round trip: the remote
    reading happened between sending and receiving, so offset = remote − (sent + rtt/2) ± rtt/2 (Cristian 1989).
    ValueError without samples."""
    if not samples:
        raise ValueError("no clock samples")
    best = min(samples, key=lambda sample: sample.round_trip_s)
    half = best.round_trip_s / 2
    return best.remote_s - (best.sent_s + half), half


def _end(proc: subprocess.Popen) -> None:
    """Close a clock session's stdin (the remote loop ends, so does ssh); kill it if it does not."""
    try:
        proc.stdin.close()  # type: ignore[union-attr]
    except OSError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def clock_offset(host: SshTransport, samples: int = DEFAULT_CLOCK_SAMPLES,
                 timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S) -> tuple[float, float]:
    """(offset, uncertainty) in seconds: the host's clock minus this machine's, from the shortest of
    `samples` round trips over one connection to `host` (`offset_from_samples`)."""
    argv = host.ssh_argv(remote_command('while read -r _; do date +%s.%N; done'))
    deadline = time.monotonic() + timeout_s + host.connect_timeout_s
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError as exc:
        raise SshError(f"cannot measure the clock offset: no ssh client ({exc.filename})",
                       destination=host.destination) from exc
    found: list[ClockSample] = []
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]
            for _ in range(samples):
                sent, started = time.time(), time.perf_counter()
                proc.stdin.write(b"\n")  # type: ignore[union-attr]
                proc.stdin.flush()  # type: ignore[union-attr]
                if not selector.select(max(0.0, deadline - time.monotonic())):
                    raise SshError("cannot measure the clock offset: no answer in time",
                                   destination=host.destination)
                line = proc.stdout.readline()  # type: ignore[union-attr]
                round_trip = time.perf_counter() - started
                if not line:
                    break
                try:
                    remote = float(line)
                except ValueError:
                    raise SshError("cannot measure the clock offset: `date +%s.%N` printed "
                                   f"{line.decode(errors='replace').strip()!r}",
                                   destination=host.destination) from None
                found.append(ClockSample(sent_s=sent, remote_s=remote, round_trip_s=round_trip))
    except OSError:  # ssh ended (it could not connect): its stderr says why
        found = []
    finally:
        _end(proc)
    if not found:
        stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""  # type: ignore[union-attr]
        raise SshError(f"cannot measure the clock offset{hint(stderr)}", destination=host.destination,
                       stderr=stderr)
    return offset_from_samples(found)

