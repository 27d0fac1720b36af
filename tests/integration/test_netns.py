"""Real network namespaces (system/netns.py): the roles reach each other over the bridge and nothing else,
and nothing is left behind after a teardown, a failed create or a creator killed with SIGKILL.

Every test looks only at names with its own run's prefix: other pgarena runs on this machine may have
namespaces of their own at the same time.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest

from pgarena.system import netns, netns_plan, netns_sockets
from pgarena.system.netns_plan import NetnsError
from tests.conftest import PROJECT_DIR

REASON = netns.available()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"cannot create network namespaces here: {REASON}")

ROLES = ["generator", "stack", "database"]
STEP_TIMEOUT_S = 10.0

# Accepts one connection on argv[1] (an ephemeral port, printed first) and answers with the peer's address.
SERVER = """
import socket, sys
server = socket.socket()
server.settimeout(10)
server.bind((sys.argv[1], 0))
server.listen(1)
print(server.getsockname()[1], flush=True)
conn, peer = server.accept()
conn.sendall(peer[0].encode())
conn.close()
"""

# Connects to argv[1]:argv[2] (bounded) and prints what the server sent.
CLIENT = """
import socket, sys
with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5) as conn:
    print(conn.recv(100).decode())
"""

# Creates a topology (state file argv[1]), starts a process inside the database namespace, prints the
# prefix and that process's pid, then waits to be killed.
CREATOR = """
import subprocess, sys, time
from pathlib import Path
from pgarena.system import netns
state = Path(sys.argv[1]) if sys.argv[1] != "-" else None
topology = netns.create(["generator", "stack", "database"], state_file=state)
inside = subprocess.Popen(netns.exec_prefix(topology, "database") + [sys.executable, "-c",
                          "import time; time.sleep(60)"], start_new_session=True)
deadline = time.monotonic() + 10
while inside.pid not in netns.processes_in(topology.namespaces["database"]) and time.monotonic() < deadline:
    time.sleep(0.01)
print(topology.prefix, inside.pid, flush=True)
time.sleep(60)
"""


def _ours(prefix: str) -> list[str]:
    """Namespaces and host links whose names carry `prefix`."""
    names = netns.list_namespaces()
    names += [link["ifname"] for link in json.loads(subprocess.run(
        ["ip", "-j", "link", "show"], capture_output=True, text=True, check=True).stdout)]
    return sorted(name for name in names if name.startswith(prefix + "-"))


def _read_line(proc: subprocess.Popen, timeout_s: float = STEP_TIMEOUT_S) -> str:
    """The next line of a child's stdout, waited for at most `timeout_s`."""
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        if not selector.select(timeout_s):
            raise AssertionError(f"no output from {proc.args} within {timeout_s} s")
    return proc.stdout.readline().strip()


def _run_in(topology: netns_plan.Topology, role: str, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(netns.exec_prefix(topology, role) + list(argv), capture_output=True, text=True,
                          timeout=STEP_TIMEOUT_S)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=STEP_TIMEOUT_S)


def test_stack_reaches_the_database_on_its_address_across_the_bridge():
    with netns.namespaces(ROLES) as topology:
        database = topology.addresses["database"]
        server = subprocess.Popen(netns.exec_prefix(topology, "database") + [sys.executable, "-c", SERVER, database],
                                  stdout=subprocess.PIPE, text=True)
        try:
            port = int(_read_line(server))
            answer = _run_in(topology, "stack", sys.executable, "-c", CLIENT, database, str(port))
            assert answer.returncode == 0, answer.stderr
            # The server saw the stack's own address: the connection crossed the veth links and the bridge.
            assert answer.stdout.strip() == topology.addresses["stack"]
            assert server.wait(timeout=STEP_TIMEOUT_S) == 0
        finally:
            _stop(server)


def test_generator_cannot_use_the_host_loopback_or_leave_the_subnet():
    with socket.socket() as host_server, netns.namespaces(ROLES) as topology:
        host_server.bind(("127.0.0.1", 0))
        host_server.listen(1)
        port = host_server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass  # the host itself reaches it
        assert not netns_sockets.can_connect(topology, "generator", "127.0.0.1", port, timeout_s=2.0)
        refused = _run_in(topology, "generator", sys.executable, "-c", CLIENT, "127.0.0.1", str(port))
        assert refused.returncode != 0 and "ConnectionRefusedError" in refused.stderr
        routes = json.loads(_run_in(topology, "generator", "ip", "-4", "-j", "route").stdout)
        assert [route["dst"] for route in routes] == [topology.subnet]  # no default route: no way out
        links = json.loads(_run_in(topology, "generator", "ip", "-j", "link").stdout)
        assert sorted(link["ifname"] for link in links) == sorted(["lo", topology.link("generator").interface])


def test_teardown_leaves_nothing_and_is_idempotent(tmp_path):
    state = tmp_path / "netns.json"
    topology = netns.create(ROLES, state_file=state)
    try:
        assert _ours(topology.prefix) == sorted(topology.all_namespaces())  # no link on the host at all
        assert netns_plan.read_state(state) == topology
        assert netns.leftovers(topology.prefix) == []  # its owner, this process, is alive
        assert netns.leftovers(topology.prefix, include_live=True) == sorted(topology.all_namespaces())
    finally:
        lines = netns.teardown(topology)
    assert len(lines) == 4
    assert _ours(topology.prefix) == []
    assert not state.exists()
    assert netns.teardown(topology) == []


def test_teardown_stops_processes_left_inside():
    topology = netns.create(ROLES)
    try:
        inside = subprocess.Popen(netns.exec_prefix(topology, "stack") + [sys.executable, "-c",
                                  "import time; time.sleep(60)"], start_new_session=True)
        deadline = time.monotonic() + STEP_TIMEOUT_S
        while inside.pid not in netns.processes_in(topology.namespaces["stack"]):  # `ip netns exec` has entered
            assert time.monotonic() < deadline and inside.poll() is None
            time.sleep(0.01)
    finally:
        lines = netns.teardown(topology, grace_s=2.0)
    inside.wait(timeout=STEP_TIMEOUT_S)  # reaped by teardown's psutil already: the code is not kept
    assert not psutil.pid_exists(inside.pid)
    assert f"removed network namespace {topology.namespaces['stack']} (stopped 1 process(es))" in lines
    assert _ours(topology.prefix) == []


def test_a_broken_link_fails_the_connectivity_check():
    with netns.namespaces(ROLES) as topology:
        link = topology.link("database")
        subprocess.run(["ip", "-n", link.namespace, "link", "set", "dev", link.interface, "down"], check=True)
        with pytest.raises(NetnsError, match="to database at"):
            netns_sockets.verify_connectivity(topology, timeout_s=0.5)


def test_a_failed_create_removes_what_it_made(tmp_path, monkeypatch):
    def broken(topology, timeout_s=0.0):
        raise NetnsError("injected failure")

    monkeypatch.setattr(netns, "verify_connectivity", broken)
    prefix = netns_plan.new_prefix()
    state = tmp_path / "netns.json"
    with pytest.raises(NetnsError, match="injected failure"):
        netns.create(ROLES, prefix, state_file=state)
    assert _ours(prefix) == []
    assert not state.exists()


def test_a_prefix_in_use_is_refused_and_the_other_run_kept():
    with netns.namespaces(ROLES) as topology:
        with pytest.raises(NetnsError, match="exist already"):
            netns.create(ROLES, topology.prefix)
        netns_sockets.verify_connectivity(topology)  # untouched


@pytest.mark.parametrize("cleanup", ["reap_state_file", "remove_leftovers"])
def test_a_killed_creator_leaves_nothing_after_the_reaper(tmp_path, cleanup):
    state = tmp_path / "netns.json"
    env = {**os.environ, "PYTHONPATH": str(PROJECT_DIR / "src")}
    creator = subprocess.Popen([sys.executable, "-c", CREATOR, str(state) if cleanup == "reap_state_file" else "-"],
                               stdout=subprocess.PIPE, text=True, env=env)
    prefix = None
    try:
        prefix, inside_pid = _read_line(creator).split()
        inside = psutil.Process(int(inside_pid))
        os.kill(creator.pid, signal.SIGKILL)
        creator.wait(timeout=STEP_TIMEOUT_S)
        left = netns.leftovers(prefix)
        assert left == sorted(f"{prefix}-{short}" for short in ("gen", "stk", "db", "hub"))
        if cleanup == "reap_state_file":
            lines = netns.reap_state_file(state)
            assert not state.exists()
        else:
            lines = netns.remove_leftovers(prefix)
        assert len(lines) == 4 and f"removed network namespace {prefix}-db (stopped 1 process(es))" in lines
        assert _ours(prefix) == []
        assert not inside.is_running() or inside.status() == psutil.STATUS_ZOMBIE
    finally:
        _stop(creator)
        if prefix is not None:
            netns.remove_leftovers(prefix, include_live=True)


def test_unowned_namespaces_and_host_links_are_leftovers():
    prefix = netns_plan.new_prefix()
    try:
        # A run killed between creating its hub and naming its owner, and a link someone left on the host.
        subprocess.run(["ip", "netns", "add", f"{prefix}-hub"], check=True)
        subprocess.run(["ip", "link", "add", f"{prefix}-a", "type", "veth", "peer", "name", f"{prefix}-b"],
                       check=True)
        assert netns.leftovers(prefix) == [f"{prefix}-a", f"{prefix}-b", f"{prefix}-hub"]
        lines = netns.remove_leftovers(prefix)
        assert f"removed network namespace {prefix}-hub" in lines and f"removed link {prefix}-a" in lines
        assert _ours(prefix) == []
    finally:
        for name in _ours(prefix):
            subprocess.run(["ip", "netns", "delete", name], capture_output=True)
            subprocess.run(["ip", "link", "delete", name], capture_output=True)


def test_a_host_link_reaches_every_role_and_goes_with_the_topology(tmp_path):
    topology = netns.create(ROLES, state_file=tmp_path / "netns.json", host_link=True)
    try:  # create() checked host → each role over TCP; here a server in the database namespace sees the host
        assert _ours(topology.prefix) == sorted(topology.all_namespaces() + [topology.host_interface])
        server = subprocess.Popen(netns.exec_prefix(topology, "database") + [
            sys.executable, "-c", SERVER, topology.addresses["database"]], stdout=subprocess.PIPE, text=True)
        try:
            port = int(_read_line(server))
            with socket.create_connection((topology.addresses["database"], port), timeout=5) as conn:
                assert conn.recv(100).decode() == topology.host_address
        finally:
            _stop(server)
    finally:
        netns.teardown(topology)
    assert _ours(topology.prefix) == []  # the host's end went with the hub


def test_the_reaper_removes_a_killed_runs_host_link(tmp_path):
    state = tmp_path / "netns.json"
    creator = subprocess.Popen([sys.executable, "-c", CREATOR.replace(
        "state_file=state)", "state_file=state, host_link=True)"), str(state)], stdout=subprocess.PIPE, text=True,
        cwd=PROJECT_DIR, env={**os.environ, "PYTHONPATH": str(PROJECT_DIR / "src")})
    try:
        prefix, _ = _read_line(creator).split()
        assert f"{prefix}-hst" in _ours(prefix)
    finally:
        creator.send_signal(signal.SIGKILL)
        creator.wait(timeout=STEP_TIMEOUT_S)
    netns.reap_state_file(state)
    assert _ours(prefix) == []
