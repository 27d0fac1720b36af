"""Sockets inside pgarena's network namespaces: `socket_in` opens one from Python (setns(2) in a short-lived
thread), `can_connect` polls a server from a role's namespace, and `verify_connectivity` checks that every
role of a topology reaches every other across the bridge (system/netns.py runs it after `create`)."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import socket
import threading
from pathlib import Path

from pgarena.system.netns_plan import NetnsError, Topology

DEFAULT_CONNECT_TIMEOUT_S = 2.0
"""Longest one TCP connect of the connectivity check may take."""
NETNS_RUN_DIR = Path("/run/netns")
"""Where iproute2 keeps named network namespaces (`ip netns add NAME` bind-mounts `/run/netns/NAME`)."""
CLONE_NEWNET = 0x40000000
"""setns(2)'s flag for a network namespace."""


@functools.cache
def _setns() -> ctypes._CFuncPtr:
    return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True).setns


def socket_in(namespace: str, family: int = socket.AF_INET, kind: int = socket.SOCK_STREAM) -> socket.socket:
    """A new socket that belongs to the named network namespace (it binds and connects there).

    Made by a short-lived thread that enters the namespace (setns(2) changes only the calling thread's
    network namespace) and ends right after, so no thread of pgarena stays inside.
    """
    result: dict = {}

    def enter_and_open() -> None:
        try:
            fd = os.open(NETNS_RUN_DIR / namespace, os.O_RDONLY)
            try:
                if _setns()(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
            finally:
                os.close(fd)
            result["socket"] = socket.socket(family, kind)
        except OSError as exc:
            result["error"] = exc

    thread = threading.Thread(target=enter_and_open, name=f"netns-{namespace}", daemon=True)
    thread.start()
    thread.join()
    if "error" in result:
        raise NetnsError(f"cannot open a socket in network namespace {namespace}", stderr=str(result["error"]))
    return result["socket"]


def can_connect(topology: Topology, role: str, host: str, port: int,
                timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S) -> bool:
    """True if a TCP connection from `role`'s namespace to `host:port` succeeds within `timeout_s`
    (e.g. to poll a database listening on its namespace address from the stack's)."""
    with socket_in(topology.link(role).namespace) as sock:
        sock.settimeout(timeout_s)
        try:
            sock.connect((host, port))
        except OSError:
            return False
    return True


def verify_connectivity(topology: Topology, timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S) -> None:
    """Check that each role reaches its own loopback and every other role's address over TCP, and that
    the other side sees the caller's own address (the traffic crossed the bridge); NetnsError if not."""
    with contextlib.ExitStack() as stack:
        listeners = {}
        for link in topology.links:
            for host in (link.address, "127.0.0.1"):
                listener = stack.enter_context(socket_in(link.namespace))
                listener.settimeout(timeout_s)
                try:
                    listener.bind((host, 0))
                    listener.listen(len(topology.links) + 1)
                except OSError as exc:
                    raise NetnsError(f"cannot listen on {host} in {link.namespace}", stderr=str(exc)) from exc
                listeners[link.role, host] = listener
        for source in topology.links:
            for target in topology.links:
                host = "127.0.0.1" if source is target else target.address
                listener = listeners[target.role, host]
                port = listener.getsockname()[1]
                what = f"TCP connect from {source.role} ({source.namespace}) to {target.role} at {host}:{port}"
                expected = host if source is target else source.address
                with socket_in(source.namespace) as client:
                    client.settimeout(timeout_s)
                    try:
                        client.connect((host, port))
                        conn, peer = listener.accept()
                        conn.close()
                    except OSError as exc:
                        raise NetnsError(f"{what} failed within {timeout_s:g} s", stderr=str(exc)) from exc
                if peer[0] != expected:
                    raise NetnsError(f"{what} arrived from {peer[0]}, not from {expected}")
        if topology.host_address:
            for target in topology.links:
                listener = listeners[target.role, target.address]
                port = listener.getsockname()[1]
                what = f"TCP connect from the host ({topology.host_interface}) to {target.role} at " \
                       f"{target.address}:{port}"
                try:
                    with socket.create_connection((target.address, port), timeout=timeout_s,
                                                  source_address=(topology.host_address, 0)):
                        conn, peer = listener.accept()
                        conn.close()
                except OSError as exc:
                    raise NetnsError(f"{what} failed within {timeout_s:g} s", stderr=str(exc)) from exc
                if peer[0] != topology.host_address:
                    raise NetnsError(f"{what} arrived from {peer[0]}, not from {topology.host_address}")

