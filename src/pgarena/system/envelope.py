"""The envelope as it ran: what a stack listens on, which CPUs PostgreSQL and pgarena itself run on.

The report states an envelope (loopback only, server and generator CPU sets); these functions read
what the operating system says actually happened, so a stack bound to 0.0.0.0 or a server not pinned
where the report claims is recorded as such instead of assumed (docs/methodology.md, "The envelope").
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import psutil

from pgarena.contract.flags import LISTENS_WIDE
from pgarena.results.models import StackInfo
from pgarena.system import procnet

LOOPBACK = "127.0.0.1"
NOT_PINNED_EXTERNAL = "not pinned (external)"
"""DatabaseInfo.cpu_affinity_note of a server pgarena did not start (--database-url)."""


def listen_addresses(root_pid: int) -> list[str]:
    """'address:port' of every TCP socket in LISTEN state held by the process tree of `root_pid`, sorted.

    IPv6 addresses are written '[addr]:port'. Processes that vanish or cannot be inspected are skipped.
    A tree in another network namespace (`--netns`) is read from that namespace's tables (procnet).
    """
    if procnet.in_other_namespace(root_pid):
        return sorted({f"[{s.local_ip}]:{s.local_port}" if ":" in s.local_ip else f"{s.local_ip}:{s.local_port}"
                       for s in procnet.tree_sockets(root_pid) if s.listening})
    try:
        root = psutil.Process(root_pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.Error:
        return []
    found: set[str] = set()
    for proc in tree:
        try:
            sockets = proc.net_connections(kind="tcp")
        except psutil.Error:
            continue
        for sock in sockets:
            if sock.status != psutil.CONN_LISTEN or not sock.laddr:
                continue
            ip, port = sock.laddr.ip, sock.laddr.port
            found.add(f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}")
    return sorted(found)


def wide_addresses(addresses: Sequence[str], host: str = LOOPBACK) -> list[str]:
    """The listening addresses bound to anything but `host` (the loopback address the stack was given).

    An IPv6 socket bound to the IPv4-mapped form of `host` (`::ffff:127.0.0.1`, as a JVM on a dual-stack
    system reports it) accepts exactly the connections to `host`: it is not wide."""
    def same(address: str) -> bool:
        bound = address.rsplit(":", 1)[0].strip("[]")
        try:
            ip = ipaddress.ip_address(bound)
        except ValueError:
            return bound == host
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return str(ip) == host

    return [a for a in addresses if not same(a)]


def record_listening(info: StackInfo, root_pid: int, host: str, log: Callable[[str], None]) -> None:
    """Add the addresses the stack's processes listen on now to `info`; flag 'listens-wide' (once) when any is
    bound to something other than `host`."""
    info.listen_addresses = sorted(set(info.listen_addresses) | set(listen_addresses(root_pid)))
    wide = wide_addresses(info.listen_addresses, host)
    if wide and LISTENS_WIDE not in info.flags:
        info.flags.append(LISTENS_WIDE)
        log(f"[{info.id}] listens on {', '.join(wide)}, not only on {host} ({LISTENS_WIDE})")


def process_affinity(pid: int | None) -> list[int] | None:
    """The CPUs a process may run on, as the kernel reports them (None: no such process or not readable)."""
    if not pid:
        return None
    try:
        return sorted(psutil.Process(pid).cpu_affinity())
    except (psutil.Error, AttributeError):
        return None


def _thread_ids() -> list[int]:
    try:
        return [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:
        return [0]


@contextmanager
def pinned_to(cpus: Sequence[int]) -> Iterator[list[int] | None]:
    """Pin every thread of this process to `cpus` for the block (threads started inside inherit it); yield
    the CPU set now in force, or None if pinning is not possible here. The previous affinity is restored
    afterwards, so a library caller (a test, a notebook) gets its process back unchanged.

    Children started inside inherit the set unless they are pinned themselves: stacks and the managed
    PostgreSQL are (process._preexec, cluster.ManagedCluster._pin), the load generator is too.
    """
    if not cpus or not hasattr(os, "sched_setaffinity"):
        yield None
        return
    before = {tid: os.sched_getaffinity(tid) for tid in _thread_ids() if _readable(tid)}
    try:
        for tid in before:
            _set(tid, set(cpus))
        yield sorted(os.sched_getaffinity(0))
    finally:
        for tid, previous in before.items():
            _set(tid, previous)


def _readable(tid: int) -> bool:
    try:
        os.sched_getaffinity(tid)
        return True
    except OSError:
        return False


def _set(tid: int, cpus: set[int]) -> None:
    try:
        os.sched_setaffinity(tid, cpus)
    except OSError:
        pass  # a thread that ended meanwhile, or a CPU outside this cgroup's set
