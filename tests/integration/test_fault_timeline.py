"""A real stall under real load: oha and k6 drive a small server that stops answering for 0.6 s in the
middle of the window; their per-request files, read by load/timeline.py, must show the gap where it was
and analysis/recovery.py must see the server come back.

The server is in this process (a thread per request); the stall holds every request that arrives
during it until it is released. Each run takes about 4 s. Nothing is left behind: the generator runs
under `run_measured` (own process group, killed at its deadline), its files are in pytest's tmp_path,
the server is shut down.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from pgarena.analysis.recovery import recovery
from pgarena.load.engines import EngineUnavailable, get_engine
from pgarena.load.engines.base import LoadSpec
from pgarena.load.timeline import k6_json_args, read_k6_timeline, read_oha_timeline
from pgarena.system.children import run_measured
from tests.fixtures.local_http import JsonHandler, serving

RATE = 200.0
WINDOW_S = 3.5
SKIP_S = 0.5
"""Bins start this long after the generator was started (k6 needs ~0.2 s before its first request)."""
STALL_AT_S, STALL_S = 1.5, 0.6
"""The stall: from STALL_AT_S after the generator was started, for STALL_S."""


class _Gate:
    """Open: requests are answered at once. Closed: they wait (at most 5 s) until it opens."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.open.set()


class _Handler(JsonHandler):
    gate: _Gate

    def do_GET(self) -> None:
        self.gate.open.wait(timeout=5.0)
        self.reply(200, b'{"ok":true}')


@pytest.fixture
def stallable_server():
    gate = _Gate()
    with serving(type("Handler", (_Handler,), {"gate": gate})) as base_url:
        yield f"{base_url}/ok", gate
        gate.open.set()  # before the server stops: no request is left waiting


def _stall(gate: _Gate, zero: float, times: dict[str, float]) -> None:
    time.sleep(max(0.0, zero + STALL_AT_S - time.time()))
    gate.open.clear()
    times["start"] = time.time()
    time.sleep(STALL_S)
    gate.open.set()
    times["end"] = time.time()


@pytest.mark.parametrize("engine_name", ["oha", "k6"])
def test_a_stall_shows_in_the_timeline_and_the_stack_recovers(stallable_server, engine_name, tmp_path: Path):
    url, gate = stallable_server
    engine = get_engine(engine_name)
    try:
        engine.binary  # noqa: B018
    except EngineUnavailable as exc:
        pytest.skip(f"{engine_name} not installed: {exc}")
    spec = LoadSpec(url=url, method="GET", connections=20, duration_s=WINDOW_S, timeout_s=2.0, rate=RATE)
    stem = "stall"
    argv = engine.command(spec, tmp_path, stem)
    k6_out = tmp_path / "stall.k6.json"
    if engine_name == "k6":
        argv[2:2] = k6_json_args(k6_out)
    times: dict[str, float] = {}
    zero = time.time()
    staller = threading.Thread(target=_stall, args=(gate, zero, times), daemon=True)
    staller.start()
    code, _cpu = run_measured(argv, stdout_path=tmp_path / f"{stem}.stdout", stderr_path=tmp_path / f"{stem}.stderr",
                              cpus=None, timeout_s=30)
    staller.join(timeout=10)
    assert code == 0 and set(times) == {"start", "end"}

    def read(origin: float, duration_s: float):
        if engine_name == "oha":
            return read_oha_timeline(engine.requests_file(tmp_path, stem), zero_unix_s=zero, origin_unix_s=origin,
                                     duration_s=duration_s)
        return read_k6_timeline(k6_out, origin_unix_s=origin, duration_s=duration_s)

    everything = read(zero - 1.0, WINDOW_S + 10.0)  # every request, to compare with the generator's count
    timeline = read(zero + SKIP_S, WINDOW_S - SKIP_S)
    outcome = engine.parse(tmp_path, stem, timeout_s=spec.timeout_s)  # (removes oha's file)
    assert sum(everything.ok_2xx) == outcome.answered_2xx and everything.outside == 0

    fault_start = timeline.seconds_after_origin(times["start"])
    fault_end = timeline.seconds_after_origin(times["end"])
    # nothing answered while the server held every request (a bin's margin each side: oha's times are
    # early by its start-up, up to ~0.05 s)
    inside = range(int(fault_start / timeline.bin_s) + 1, int(fault_end / timeline.bin_s) - 1)
    assert len(inside) >= 3
    assert [timeline.ok_2xx[k] for k in inside] == [0] * len(inside)

    rec = recovery(timeline, fault_start, fault_end, baseline_window_s=0.9, tolerance=0.25, sustain_s=0.5)
    print(f"{engine_name}: {rec}\n{timeline.ok_2xx}")
    assert rec.baseline_rps == pytest.approx(RATE, rel=0.25)
    assert rec.status == "recovered"
    assert rec.first_ok_after_s is not None and rec.first_ok_after_s <= 0.1
    assert rec.recovered_after_s is not None and rec.recovered_after_s < 1.0
    if engine_name == "k6":
        # a stall shorter than the timeout fails no request that was sent, but it holds every connection, so the
        # requests due meanwhile beyond those in flight are never sent: dropped, and failed (issue 22)
        assert rec.unanswered == 0 and rec.errors_by_kind["non_2xx"] == 0
        dropped = rec.errors_by_kind["dropped"]
        assert rec.failed_requests == dropped == pytest.approx(RATE * STALL_S - spec.connections, abs=30)
    else:
        assert rec.failed_requests is None and rec.errors_by_kind == {"non_2xx": 0}
