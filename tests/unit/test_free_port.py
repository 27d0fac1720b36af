"""A port pgarena listens on lies outside the kernel's ephemeral range where the machine leaves room, so an
outgoing connection cannot take it between `free_port` and the server's bind (a fresh-clone CI, 2026-11-29)."""

from __future__ import annotations

import random
import socket

from pgarena.db import postgres
from pgarena.db.postgres import MIN_LISTEN_PORTS, ephemeral_range, free_port, listen_ports


def test_ephemeral_range_reads_the_kernel_file_and_tolerates_its_absence(tmp_path):
    file = tmp_path / "ip_local_port_range"
    file.write_text("32768\t60999\n")
    assert ephemeral_range(file) == (32768, 60999)
    assert ephemeral_range(tmp_path / "absent") is None
    file.write_text("garbage\n")
    assert ephemeral_range(file) is None


def test_listen_ports_are_the_spans_outside_the_ephemeral_range():
    assert listen_ports((32768, 60999)) == [range(10000, 32768), range(61000, 65536)]
    assert listen_ports((1024, 65535)) == []
    assert listen_ports((5000, 9000)) == [range(10000, 65536)]
    assert listen_ports(None) == []


def test_free_port_is_outside_the_ephemeral_range_and_binds():
    ephemeral = (32768, 60999)
    rng = random.Random(7)
    ports = {free_port(ephemeral, rng) for _ in range(50)}
    assert all(not 32768 <= port <= 60999 and port >= 10000 for port in ports)
    assert len(ports) > 40  # random, so two workers rarely pick the same one
    port = ports.pop()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_free_port_skips_a_port_in_use(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]

        class Picks(random.Random):
            def __init__(self):
                super().__init__(0)
                self.first = True

            def choice(self, seq):
                if self.first:
                    self.first = False
                    return busy
                return super().choice(seq)

        port = free_port((1024, 1024 + 10), Picks())  # listen spans: 10000.. up
        assert port != busy and port >= 10000


def test_free_port_falls_back_to_the_kernels_pick_without_room(monkeypatch):
    monkeypatch.setattr(postgres, "LISTEN_PORTS_FROM", 65536 - (MIN_LISTEN_PORTS - 1))
    picks = []
    monkeypatch.setattr(postgres, "_bindable", lambda port: picks.append(port) or True)
    port = free_port((1024, 2048))
    assert picks == []  # 999 ports outside the range: the kernel picks
    kernels = ephemeral_range()
    if kernels is not None:
        assert kernels[0] <= port <= kernels[1]
