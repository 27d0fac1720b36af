"""The TCP sockets of a process tree read from its own network namespace's tables.

psutil reads /proc/net/tcp, the table of the *calling* process's network namespace, so it sees no socket
of a stack started inside a namespace pgarena created (`--netns`). This reads `/proc/<pid>/net/tcp{,6}`
(the table of the namespace `pid` lives in) and keeps the rows whose socket inode one of the tree's
processes holds (`/proc/<pid>/fd/* -> socket:[inode]`): the same sockets psutil would list, whichever
namespace the tree is in.
"""

from __future__ import annotations

import ipaddress
import os
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


def parse_table(text: str) -> dict[int, TcpSocket]:
    """Inode → socket, from the text of a /proc/net/tcp or tcp6 file."""
    sockets: dict[int, TcpSocket] = {}
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10:
            continue
        local_ip, local_port = _address(fields[1])
        remote_ip, remote_port = _address(fields[2])
        inode = int(fields[9])
        if inode:
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


def tree_sockets(root_pid: int) -> list[TcpSocket]:
    """The TCP sockets (IPv4 and IPv6) the process tree of `root_pid` holds, from its namespace's tables."""
    try:
        root = psutil.Process(root_pid)
        pids = [root.pid] + [child.pid for child in root.children(recursive=True)]
    except psutil.Error:
        return []
    table: dict[int, TcpSocket] = {}
    for name in ("tcp", "tcp6"):
        try:
            table.update(parse_table((PROC / str(root_pid) / "net" / name).read_text()))
        except OSError:
            continue
    found = []
    for pid in pids:
        found += [table[inode] for inode in _socket_inodes(pid) if inode in table]
    return found
