"""The real toxiproxy server (pgarena.system.toxiproxy): started, pinned, proxying to a local echo server,
delaying round trips, stalling, resetting and dropping connections, and gone afterwards.

Needs the pinned binary: found in the tool cache, or built with Go (about 2 minutes cold); the tests skip
when neither is possible. The namespace test needs root and `ip` (it creates and deletes its own network
namespace and veth pair).
"""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
import time
from pathlib import Path

import httpx
import psutil
import pytest

from pgarena.system import toxiproxy, toxiproxy_install
from pgarena.system.toxiproxy import Toxiproxy, ToxiproxyError
from pgarena.system.toxiproxy_install import ToxiproxyUnavailable
from pgarena.system.toxiproxy_overhead import EchoServer, connect, measure_overhead, round_trip_ns

PAYLOAD = b"ping" * 16
IO_TIMEOUT_S = 5.0


@pytest.fixture(scope="module")
def binary() -> Path:
    """The pinned server binary (built once into the tool cache when Go is here)."""
    found = toxiproxy_install.locate()
    if found is not None:
        return found
    if shutil.which("go") is None:
        pytest.skip(f"toxiproxy {toxiproxy_install.TOXIPROXY_VERSION} is not installed and Go (which builds it) is not "
                    f"on PATH: {toxiproxy_install.install_hint()}")
    try:
        return toxiproxy_install.install()
    except ToxiproxyUnavailable as exc:
        pytest.skip(f"toxiproxy cannot be built here: {exc}")


def _children_running(binary: Path) -> list[psutil.Process]:
    """This test process's descendants that run the toxiproxy binary."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE and child.exe() == str(binary):
                found.append(child)
        except psutil.Error:
            continue
    return found


@pytest.fixture
def server(binary, tmp_path):
    with Toxiproxy(binary, log_path=tmp_path / "toxiproxy.log") as running:
        yield running
    assert _children_running(binary) == []


@pytest.fixture
def echo():
    with EchoServer() as running:
        yield running


def test_starts_reports_its_version_and_stops_without_leftovers(binary, tmp_path):
    with Toxiproxy(binary, log_path=tmp_path / "toxiproxy.log", cpus=[0]) as server:
        pid = server.pid
        assert server.version() == toxiproxy_install.TOXIPROXY_VERSION
        assert psutil.Process(pid).exe() == str(binary)  # exec'd, no shell in between
        threads = psutil.Process(pid).threads()
        assert len(threads) > 1 and all(psutil.Process(t.id).cpu_affinity() == [0] for t in threads)
        with pytest.raises(ToxiproxyError, match="already running"):
            server.start()
        server.proxy("quiet", upstream="127.0.0.1:9")  # at log level info this logs "Started proxy"
        api_port = int(server.api_url.rsplit(":", 1)[1])
    assert not psutil.pid_exists(pid)
    assert _children_running(binary) == []
    assert "Started proxy" not in (tmp_path / "toxiproxy.log").read_text()  # info lines are not logged
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", api_port), timeout=1).close()
    with pytest.raises(ToxiproxyError, match="not running"):
        server.version()


def test_a_server_that_exits_at_start_is_an_error_with_its_log(tmp_path):
    fake = tmp_path / "fake-server"
    fake.write_text("#!/bin/sh\necho 'listen tcp: address already in use' >&2\nexit 1\n")
    fake.chmod(0o755)
    started = time.monotonic()
    with pytest.raises(ToxiproxyError, match="(?s)did not start.*exited with code 1.*address already in use"):
        Toxiproxy(fake, log_path=tmp_path / "toxiproxy.log", start_timeout_s=10).start()
    assert time.monotonic() - started < 10
    assert (tmp_path / "toxiproxy.log").read_text().count("address already in use") == toxiproxy.START_ATTEMPTS


def test_proxy_listens_on_a_port_it_picked_and_forwards(server, echo):
    proxy = server.proxy("db", upstream=echo.address)
    assert proxy.host == "127.0.0.1" and proxy.port > 0
    with connect(proxy.listen, IO_TIMEOUT_S) as sock:
        round_trip_ns(sock, PAYLOAD)
    with pytest.raises(ToxiproxyError, match="409"):
        server.proxy("db", upstream=echo.address)  # names are unique


def test_api_errors_carry_toxiproxys_message(server, echo):
    proxy = server.proxy("db", upstream=echo.address)
    with pytest.raises(ToxiproxyError, match="invalid toxic type"):
        proxy.add_toxic("no_such_toxic", "upstream", {})
    with pytest.raises(ToxiproxyError, match="404"):
        proxy.remove_toxic("absent")


def test_zero_rtt_overhead_is_small_and_its_cpu_is_counted(server):
    result = measure_overhead(server, round_trips=1000, max_seconds=30)
    assert result.round_trips >= 200
    assert 0 < result.added_median_us < 5_000  # a loopback hop through Go channels, not milliseconds
    assert result.toxiproxy_cpu_seconds >= 0
    assert server.cpu_seconds() > 0
    with httpx.Client(trust_env=False) as client:
        assert client.get(f"{server.api_url}/proxies").json() == {}  # its temporary proxy was deleted


def test_rtt_4ms_adds_4ms_per_round_trip(server):
    result = measure_overhead(server, rtt_ms=4, round_trips=60, warmup_round_trips=5, max_seconds=30)
    assert result.round_trips >= 20
    assert 3_500 <= result.added_median_us < 40_000
    assert 3_500 <= result.proxied_median_us


def test_set_rtt_changes_and_removes_the_latency_toxics(server, echo):
    proxy = server.proxy("db", upstream=echo.address)
    proxy.set_rtt(5)
    toxics = {t["name"]: (t["stream"], t["attributes"]["latency"]) for t in proxy.toxics()}
    assert toxics == {"pgarena_rtt_upstream": ("upstream", 3), "pgarena_rtt_downstream": ("downstream", 2)}
    proxy.set_rtt(1)
    assert {t["name"]: t["attributes"]["latency"] for t in proxy.toxics()} == {"pgarena_rtt_upstream": 1}
    with connect(proxy.listen, IO_TIMEOUT_S) as sock:
        assert round_trip_ns(sock, PAYLOAD) >= 900_000
    proxy.set_rtt(0)
    assert proxy.toxics() == []


def test_timeout_stalls_then_closes(server, echo):
    proxy = server.proxy("db", upstream=echo.address)
    with connect(proxy.listen, IO_TIMEOUT_S) as sock:
        round_trip_ns(sock, PAYLOAD)
        names = proxy.timeout(400)
        assert names == ["pgarena_timeout_upstream", "pgarena_timeout_downstream"]
        started = time.monotonic()
        sock.sendall(PAYLOAD)
        data = sock.recv(1024)
        stalled_s = time.monotonic() - started
    assert data == b""  # nothing came through; the connection was closed (FIN)
    assert 0.3 <= stalled_s < IO_TIMEOUT_S


def test_timeout_zero_stalls_until_removed(server, echo):
    proxy = server.proxy("db", upstream=echo.address)
    names = proxy.timeout(0)
    with connect(proxy.listen, 0.5) as sock:
        sock.sendall(PAYLOAD)
        with pytest.raises(TimeoutError):
            sock.recv(1024)
        for name in names:
            proxy.remove_toxic(name)
    with connect(proxy.listen, IO_TIMEOUT_S) as sock:
        round_trip_ns(sock, PAYLOAD)  # new connections flow again


def test_reset_peer_resets_new_connections(server, echo):
    proxy = server.proxy("db", upstream=echo.address)
    with connect(proxy.listen, IO_TIMEOUT_S) as before:
        round_trip_ns(before, PAYLOAD)
        proxy.reset_peer()
        with connect(proxy.listen, IO_TIMEOUT_S) as sock:
            sock.sendall(PAYLOAD)
            with pytest.raises(ConnectionResetError):
                sock.recv(1024)
        # A connection that was open before the toxic is closed too, but without RST (toxiproxy 2.5.0
        # sets SO_LINGER 0 only when a connection starts): the client reads end-of-file.
        before.sendall(PAYLOAD)
        assert before.recv(1024) == b""


def test_disable_drops_connections_and_enable_restores_the_port(server, echo):
    proxy = server.proxy("db", upstream=echo.address)
    port = proxy.port
    with connect(proxy.listen, IO_TIMEOUT_S) as sock:
        round_trip_ns(sock, PAYLOAD)
        proxy.disable()
        assert sock.recv(1024) == b""  # closed (FIN)
    with pytest.raises(ConnectionRefusedError):
        connect(proxy.listen, IO_TIMEOUT_S)
    proxy.enable()
    assert proxy.port == port
    with connect(proxy.listen, IO_TIMEOUT_S) as sock:
        round_trip_ns(sock, PAYLOAD)


def test_reset_removes_every_toxic_and_enables(server, echo):
    proxy = server.proxy("db", upstream=echo.address)
    proxy.set_rtt(2)
    proxy.disable()
    server.reset()
    assert proxy.toxics() == []
    with connect(proxy.listen, IO_TIMEOUT_S) as sock:
        round_trip_ns(sock, PAYLOAD)


def test_prefix_runs_the_server_through_another_command(binary, tmp_path):
    expected_nice = min(psutil.Process().nice() + 7, 19)
    with Toxiproxy(binary, log_path=tmp_path / "toxiproxy.log", prefix=["nice", "-n", "7"]) as server:
        proc = psutil.Process(server.pid)
        assert proc.exe() == str(binary) and proc.nice() == expected_nice
        assert server.version() == toxiproxy_install.TOXIPROXY_VERSION


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)


def _free_subnet() -> int:
    """A third octet x with 10.213.x.0/30 on no interface of this namespace."""
    used = _ip("-4", "-o", "addr").stdout
    for _ in range(50):
        octet = secrets.randbelow(250) + 1
        if f"10.213.{octet}." not in used:
            return octet
    pytest.skip("no free 10.213.x.0/30 subnet found for the test's veth pair")


@pytest.fixture
def namespace():
    """A network namespace joined to this one by a veth pair: (name, address here, address there).

    Teardown deletes the pair (deleting one end deletes both) and the namespace, then checks that neither
    is left (polled: the kernel finishes a namespace's cleanup asynchronously).
    """
    if shutil.which("ip") is None:
        pytest.skip("the `ip` command (iproute2) is not installed")
    name = f"pgarena-tpx-{secrets.token_hex(3)}"
    created = _ip("netns", "add", name)
    if created.returncode != 0:
        pytest.skip(f"cannot create a network namespace here (needs root): {created.stderr.strip()}")
    octet = _free_subnet()
    outer, inner = f"10.213.{octet}.1", f"10.213.{octet}.2"
    veth = f"vtpx{secrets.token_hex(3)}"
    try:
        for args in (["link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", name],
                     ["addr", "add", f"{outer}/30", "dev", veth], ["link", "set", veth, "up"],
                     ["-n", name, "addr", "add", f"{inner}/30", "dev", "eth0"],
                     ["-n", name, "link", "set", "eth0", "up"],
                     ["-n", name, "link", "set", "lo", "up"]):
            done = _ip(*args)
            assert done.returncode == 0, f"ip {' '.join(args)}: {done.stderr}"
        yield name, outer, inner
    finally:
        _ip("link", "del", veth)
        _ip("netns", "del", name)
    deadline = time.monotonic() + 10
    while veth in _ip("-o", "link").stdout and time.monotonic() < deadline:
        time.sleep(0.1)
    assert veth not in _ip("-o", "link").stdout
    assert name not in _ip("netns", "list").stdout


def test_runs_inside_a_network_namespace(binary, tmp_path, namespace):
    name, outer, inner = namespace
    prefix = ["ip", "netns", "exec", name]
    with Toxiproxy(binary, log_path=tmp_path / "toxiproxy.log", host=inner, prefix=prefix, cpus=[1]) as server:
        pid = server.pid
        assert psutil.Process(pid).exe() == str(binary)
        assert Path(f"/proc/{pid}/ns/net").resolve() != Path("/proc/self/ns/net").resolve()
        result = measure_overhead(server, rtt_ms=2, round_trips=40, warmup_round_trips=5, max_seconds=30,
                                  echo_host=outer)
        assert 1_800 <= result.added_median_us < 40_000
    assert not psutil.pid_exists(pid)
