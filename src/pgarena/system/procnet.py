"""The TCP sockets of a process tree read from its own network namespace's tables.

psutil reads /proc/net/tcp, the table of the *calling* process's network namespace, so it sees no socket
of a stack started inside a namespace pgarena created (`--netns`). This reads `/proc/<pid>/net/tcp{,6}`
(the table of the namespace `pid` lives in) and keeps the rows whose socket inode one of the tree's
processes holds (`/proc/<pid>/fd/* -> socket:[inode]`): the same sockets psutil would list, whichever
namespace the tree is in.
"""

from __future__ import annotations

import ipaddress
import math
import os
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import psutil

PROC = Path("/proc")
TCP_LISTEN = "0A"
"""The `st` column of a listening socket in /proc/net/tcp (include/net/tcp_states.h: TCP_LISTEN = 10)."""


@dataclass(frozen=True)
class TcpSocket:
    local_ip: str
    local_port: int
    remote_ip: str
    remote_port: int
    listening: bool


def in_other_namespace(pid: int) -> bool:
    """True if `pid` lives in another network namespace than this process (False if it cannot be read)."""
    try:
        return os.readlink(PROC / str(pid) / "ns" / "net") != os.readlink(PROC / "self" / "ns" / "net")
    except OSError:
        return False


def _address(hex_address: str) -> tuple[str, int]:
    """'0100007F:1F90' → ('127.0.0.1', 8080); IPv6 rows hold four little-endian 32-bit words."""
    host, port = hex_address.split(":")
    raw = bytes.fromhex(host)
    if len(raw) == 4:
        ip = ipaddress.IPv4Address(raw[::-1])
    else:
        ip = ipaddress.IPv6Address(b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
        if ip.ipv4_mapped:
            ip = ip.ipv4_mapped
    return str(ip), int(port, 16)


def parse_table(text: str, inodes: Collection[int] | None = None) -> dict[int, TcpSocket]:
    """Inode → socket, from the text of a /proc/net/tcp or tcp6 file (with `inodes`: only theirs; the table
    holds every socket of the namespace, and the connection poller reads it several times a second)."""
    sockets: dict[int, TcpSocket] = {}
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10:
            continue
        inode = int(fields[9])
        if not inode or (inodes is not None and inode not in inodes):
            continue
        local_ip, local_port = _address(fields[1])
        remote_ip, remote_port = _address(fields[2])
        sockets[inode] = TcpSocket(local_ip, local_port, remote_ip, remote_port, fields[3] == TCP_LISTEN)
    return sockets


def _socket_inodes(pid: int) -> set[int]:
    inodes = set()
    try:
        for fd in os.listdir(PROC / str(pid) / "fd"):
            try:
                target = os.readlink(PROC / str(pid) / "fd" / fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(int(target[8:-1]))
    except OSError:
        pass
    return inodes


RECHECK_S = 1.0
"""A socket inode the tables did not hold (a UNIX or UDP socket, or a TCP socket not yet connected) is looked up
again after this long."""


def _tree_pids(root_pid: int) -> list[int]:
    try:
        root = psutil.Process(root_pid)
        return [root.pid] + [child.pid for child in root.children(recursive=True)]
    except psutil.Error:
        return []


class SocketCache:
    """`tree_sockets` with a memory, for a caller that reads one tree many times a second (the connection poller).
    A socket's addresses do not change while its inode lives, and reading a namespace's table costs the kernel a
    walk of its whole hash (~10 ms here, however few sockets it holds), so the tables are read again only when the
    tree holds an inode not seen before (or, after RECHECK_S, one they did not hold)."""

    def __init__(self) -> None:
        self._known: dict[int, TcpSocket] = {}
        self._absent: dict[int, float] = {}

    def tree(self, root_pid: int) -> list[TcpSocket]:
        pids = _tree_pids(root_pid)
        held = {pid: _socket_inodes(pid) for pid in pids}
        inodes = set().union(*held.values())
        now = time.monotonic()
        unknown = {inode for inode in inodes
                   if inode not in self._known and now - self._absent.get(inode, -math.inf) >= RECHECK_S}
        if unknown:
            found: dict[int, TcpSocket] = {}
            for name in ("tcp", "tcp6"):
                try:
                    found.update(parse_table((PROC / str(root_pid) / "net" / name).read_text(), unknown))
                except OSError:
                    continue
            self._known.update(found)
            self._absent.update(dict.fromkeys(unknown - found.keys(), now))
        self._known = {inode: sock for inode, sock in self._known.items() if inode in inodes}
        self._absent = {inode: seen for inode, seen in self._absent.items() if inode in inodes}
        return [self._known[inode] for pid in pids for inode in held[pid] if inode in self._known]


def tree_sockets(root_pid: int) -> list[TcpSocket]:
    """The TCP sockets (IPv4 and IPv6) the process tree of `root_pid` holds, from its namespace's tables."""
    return SocketCache().tree(root_pid)
