"""Reading a process tree's TCP sockets from its own namespace's table (system/procnet.py)."""

from __future__ import annotations

import os
import socket

from pgarena.system import procnet

TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0200D50A:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0
   1: 0200D50A:D431 0300D50A:1538 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:0035 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 0 1 0000000000000000 100 0 0 10 0
"""
TCP6 = """  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0000000000000000FFFF00000100007F:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5151 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:1F92 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5252 1 0000000000000000 100 0 0 10 0
"""


def test_rows_are_decoded_by_inode_and_rows_without_one_skipped():
    table = procnet.parse_table(TCP)
    assert set(table) == {4242, 4343}
    assert table[4242] == procnet.TcpSocket("10.213.0.2", 8080, "0.0.0.0", 0, True)
    assert table[4343] == procnet.TcpSocket("10.213.0.2", 54321, "10.213.0.3", 5432, False)


def test_ipv6_rows_and_ipv4_mapped_addresses():
    table = procnet.parse_table(TCP6)
    assert table[5151].local_ip == "127.0.0.1" and table[5151].local_port == 8081
    assert table[5252].local_ip == "::1" and table[5252].listening


def test_this_process_listening_socket_is_found_in_its_own_table():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        found = procnet.tree_sockets(os.getpid())
    assert procnet.TcpSocket("127.0.0.1", port, "0.0.0.0", 0, True) in found
    assert not procnet.in_other_namespace(os.getpid())
    assert procnet.tree_sockets(2**22 + 12345) == []  # no such process


def test_parse_table_keeps_only_the_inodes_asked_for():
    assert set(procnet.parse_table(TCP, {4343, 9999})) == {4343}


def test_the_cache_finds_new_connections_forgets_closed_ones_and_rereads_only_for_unseen_sockets(monkeypatch):
    reads = []
    read_text = procnet.Path.read_text
    monkeypatch.setattr(procnet.Path, "read_text", lambda self, *a, **k: reads.append(self.name) or read_text(self))
    cache = procnet.SocketCache()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        port = server.getsockname()[1]

        def to_server() -> set[int]:
            return {s.local_port for s in cache.tree(os.getpid()) if s.remote_port == port}

        first = socket.create_connection(("127.0.0.1", port))
        assert to_server() == {first.getsockname()[1]}
        tables_read = len(reads)
        assert to_server() == {first.getsockname()[1]} and len(reads) == tables_read  # nothing new: no read
        second = socket.create_connection(("127.0.0.1", port))
        assert to_server() == {first.getsockname()[1], second.getsockname()[1]} and len(reads) > tables_read
        first.close()
        assert to_server() == {second.getsockname()[1]}
        # a socket not yet connected is not in the tables: looked up again only after RECHECK_S
        monkeypatch.setattr(procnet, "RECHECK_S", 3600.0)
        late = socket.socket()
        to_server()
        late.connect(("127.0.0.1", port))
        assert late.getsockname()[1] not in to_server()
        monkeypatch.setattr(procnet, "RECHECK_S", 0.0)
        assert late.getsockname()[1] in to_server()
        second.close()
        late.close()
