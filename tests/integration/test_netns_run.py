"""--netns and --stack-rtt through the real pipeline (issue 14): the generator, the stack and PostgreSQL each
in a namespace pgarena creates, traffic crossing the bridge (the stack sees the generator's and pgarena's
addresses, never the loopback), the topology in results.json and the report, nothing left afterwards, and a
killed run's namespaces removed by the reaper."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from pgarena.config.profiles import build_config
from pgarena.pipeline import runner
from pgarena.report.markdown import render_markdown
from pgarena.results.store import load
from pgarena.system import netns, reaper
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres, require_load_path

REASON = netns.available()
pytestmark = [pytest.mark.postgres, needs_postgres,
              pytest.mark.skipif(REASON is not None, reason=f"cannot create network namespaces here: {REASON}")]

SHORT = {"stacks_dir": FIXTURE_STACKS, "stacks": ["fixture-good"], "workloads": ["users"], "users_limits": [5],
         "vus": [2], "repetitions": 2, "warmup_s": 1.0, "duration_s": 1.5, "cold_start_requests": 1, "ceiling_s": 0,
         "warmup_cap_s": 1}


def test_roles_run_in_their_namespaces_and_leave_nothing(tmp_path, fixture_env, monkeypatch):
    require_load_path("oha")
    peers = tmp_path / "peers"
    monkeypatch.setenv("FIXTURE_PEERS", str(peers))
    monkeypatch.setenv("FIXTURE_POOL", "1")  # a fixed pool: its connections live long enough to be seen
    before = set(netns.list_namespaces())
    config = build_config(project_dir=tmp_path, overrides={
        **SHORT, "results_dir": tmp_path, "run_id": "ns", "netns": True, "headroom": True})
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="test", log=lambda _: None)
    results = load(run_dir)
    t = results.topology
    assert t is not None and t.mode == "netns"
    addresses = {role: place.address for role, place in t.roles.items()}
    assert set(addresses) == {"generator", "stack", "database", "pgarena"}
    assert all(a.startswith(t.subnet.rsplit(".", 1)[0] + ".") for a in addresses.values())
    # the stack saw pgarena (verification, samplers) and the generator, over the bridge, never the loopback
    assert set(peers.read_text().split()) == {addresses["pgarena"], addresses["generator"]}
    stack = results.stack("fixture-good")
    assert stack.status == "ok" and stack.listen_addresses and all(
        a.startswith(addresses["stack"] + ":") for a in stack.listen_addresses)
    assert stack.peak_connections == config.pool_size  # its sockets read in the stack's namespace
    assert results.database.url.split("@")[1].startswith(addresses["database"] + ":")
    assert results.generator_headroom is not None  # generator → trivial endpoint across the bridge too
    assert all(c.status == "ok" and c.summary for c in results.cells)
    assert "network namespaces, subnet " + t.subnet in render_markdown(results)
    assert set(netns.list_namespaces()) == before and not (run_dir / "netns.json").exists()


def test_a_stack_round_trip_delays_the_generator_only(tmp_path, fixture_env, monkeypatch):
    require_load_path("oha")
    # a fixed pool: without it each request opens its own PostgreSQL connection, 20–60 ms on a busy machine,
    # and a direct request could not be told from one through the 20 ms proxy (CI's 23 ms first request)
    monkeypatch.setenv("FIXTURE_POOL", "1")
    config = build_config(project_dir=tmp_path, overrides={
        **SHORT, "results_dir": tmp_path, "run_id": "front", "stack_rtt_ms": "20ms", "headroom": False,
        "cold_start_requests": 3})
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="test", log=lambda _: None)
    results = load(run_dir)
    assert results.network is not None and results.network.stack_rtt_ms == 20 and results.network.db_rtt_ms == []
    (cell,) = results.cells
    assert cell.status == "ok" and min(r.latency.p50_ms for r in cell.repetitions) >= 20
    # verification went direct: its requests are not slowed by the proxy
    cold = results.stack("fixture-good").cold_start
    assert cold is not None and min(cold.first_requests_ms) < 20
    assert "the generator reaches each stack through one Toxiproxy proxy" in render_markdown(results)


CREATOR = """
import sys, time
from pathlib import Path
from pgarena.system import netns
topology = netns.create(["generator", "stack", "database"], state_file=Path(sys.argv[1]), host_link=True)
print(topology.prefix, flush=True)
time.sleep(60)
"""


def test_the_reaper_removes_a_killed_runs_namespaces(tmp_path):
    run_dir = tmp_path / "killed"
    run_dir.mkdir()
    creator = subprocess.Popen([sys.executable, "-c", CREATOR, str(run_dir / reaper.NETNS_STATE_FILE)],
                               stdout=subprocess.PIPE, text=True, cwd=PROJECT_DIR,
                               env={**os.environ, "PYTHONPATH": str(PROJECT_DIR / "src")})
    try:
        prefix = creator.stdout.readline().strip()
        assert prefix and f"{prefix}-stk" in netns.list_namespaces()
    finally:
        creator.send_signal(signal.SIGKILL)
        creator.wait(timeout=10)
    lines = reaper.reap_namespaces(run_dir)
    assert any(f"{prefix}-stk" in line for line in lines)
    assert not [n for n in netns.list_namespaces() if n.startswith(prefix)]
    assert not (run_dir / reaper.NETNS_STATE_FILE).exists()
