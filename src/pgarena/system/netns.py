"""Network namespaces for pgarena's roles: each role (generator, stack, database) in its own namespace,
all joined by one bridge, so that traffic between them crosses a veth link instead of the loopback.

The layout of one run with prefix `pga-1a2b3c` (names carry the prefix so leftovers can be recognised)::

    pga-1a2b3c-gen  [pga-1a2b3c-gen 10.213.0.1/24] ──veth── [pga-1a2b3c-hgen] ┐
    pga-1a2b3c-stk  [pga-1a2b3c-stk 10.213.0.2/24] ──veth── [pga-1a2b3c-hstk] ├─ bridge pga-1a2b3c-br
    pga-1a2b3c-db   [pga-1a2b3c-db  10.213.0.3/24] ──veth── [pga-1a2b3c-hdb ] ┘  in namespace pga-1a2b3c-hub

- **A hub, not point-to-point pairs**: one bridge reaches every role from every other with one address
  per role and one route (the /24), and a delay for one role's traffic is a qdisc on that role's own
  interface (the database only ever talks to the stack, the generator only to the stack).
- **Nothing on the host** (unless asked, see `host_link` in `create`): the bridge lives in its own namespace and each veth pair is created there with
  its peer directly in the role's namespace, so no interface ever appears in the host's namespace (a
  crash half-way leaves only namespaces), and deleting the namespaces deletes every link.
- **No way out**: the role namespaces have no default route; a role reaches only the other roles (and its
  own loopback, which is not the host's).
- **The subnet** is the first /24 of 10.213.0.0/16 that overlaps no route or address of the host
  (`ip -4 -j route show table all`, `ip -4 -j addr`); role *i* (in the order given) gets host *i + 1*.
- **Owned**: the bridge's alias names the owning process (pid and start time), so `leftovers` tells a
  crashed run's namespaces from those of a run still going on this machine; `create(state_file=...)`
  also writes the names before creating anything, for `reap_state_file`.

Start any command inside a role's namespace with `exec_prefix(topology, role) + argv`; open a socket in
one from Python with `socket_in`, or poll a server with `can_connect`. Creating namespaces needs root
and iproute2 (`available()` says).

Use in a run: `with namespaces(roles, state_file=run_dir / "netns.json", host_link=True) as topology:` (the
host link lets pgarena itself reach the roles) start PostgreSQL
with `exec_prefix(topology, "database")` listening on `topology.addresses["database"]`, the stack likewise
with that address as its database host, the generator aimed at `topology.addresses["stack"]`; stop them
before the block ends (`teardown` stops what is still inside, but a command started while it runs may
escape); store `topology.as_dict()` in results.json. After a crash, `reap_state_file(run_dir /
"netns.json")` removes exactly that run's namespaces, `remove_leftovers()` those of every dead owner.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import ipaddress
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from pgarena.results.atomic import write_text_atomic

DEFAULT_PREFIX_BASE = "pga-"
"""Every name pgarena gives a namespace or link starts with this (then 6 hex digits of the run)."""
DEFAULT_SUBNET_POOL = ipaddress.IPv4Network("10.213.0.0/16")
"""The /24 subnets a topology's addresses are taken from, first free one first."""
SUBNET_PREFIX_LENGTH = 24
DEFAULT_COMMAND_TIMEOUT_S = 10.0
"""Longest an `ip` command may take before it counts as failed."""
DEFAULT_CONNECT_TIMEOUT_S = 2.0
"""Longest one TCP connect of the connectivity check may take."""
DEFAULT_KILL_GRACE_S = 2.0
"""Seconds between SIGTERM and SIGKILL for processes still inside a namespace being removed."""
UNOWNED_RECHECK_S = 0.5
"""A run whose hub names no owner is looked at again after this long before it counts as a leftover:
`create` sets the owner a few milliseconds after making the hub namespace."""
NETNS_RUN_DIR = Path("/run/netns")
"""Where iproute2 keeps named network namespaces (`ip netns add NAME` bind-mounts `/run/netns/NAME`)."""
IP_SEARCH_DIRS = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")
"""Where `ip` is looked for when it is not on PATH (a non-root PATH often lacks the sbin folders)."""
ROLE_ABBREVIATIONS = {"generator": "gen", "stack": "stk", "database": "db", "proxy": "prx"}
"""Role → the short name in its namespace and interface names; other roles of more than 3 characters use
their first 2 and their last (`gen1` → `ge1`, `gen2` → `ge2`), shorter ones themselves."""
MAX_PREFIX_LENGTH = 10
"""Interface names have at most 15 characters: prefix + `-h` + a 3-letter role abbreviation."""
STATE_VERSION = 1
"""Version of the state file (1: the topology's `as_dict` plus `version` and `owner`)."""
OWNER_START_TOLERANCE_S = 0.05
"""Two start times (psutil's create_time, seconds since the epoch) closer than this are the same process."""
OWNER_ALIAS_RE = re.compile(r"^pgarena owner pid=(\d+) start=([0-9.]+)$")
CLONE_NEWNET = 0x40000000

_PREFIX_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$")
_ROLE_RE = re.compile(r"^[a-z][a-z0-9]*$")
_RESERVED_ABBREVIATIONS = {"hub", "br"}
HOST_LINK_ABBREVIATION = "hst"
"""The host link's interfaces: `<prefix>-hst` in the host's namespace, `<prefix>-hhst` on the bridge."""


class NetnsError(Exception):
    """A namespace operation failed: the message, the command that failed and what it printed."""

    def __init__(self, message: str, *, command: Sequence[str] = (), stderr: str = "") -> None:
        self.message = message
        self.command = list(command)
        self.stderr = stderr.strip()
        detail = f" (command: {' '.join(self.command)})" if self.command else ""
        output = f": {self.stderr}" if self.stderr else ""
        super().__init__(f"{message}{detail}{output}")


class NetnsInUse(NetnsError):
    """The namespaces of a state file belong to a process that is still running."""


@dataclass(frozen=True)
class Link:
    """One role's attachment: its namespace, its interface there (which carries `address`, in the
    topology's subnet) and the veth peer of that interface on the hub's bridge."""

    role: str
    namespace: str
    interface: str
    address: str
    hub_port: str


@dataclass(frozen=True)
class Topology:
    """The namespaces of one run: its name prefix, its /24, the hub (bridge) and one `Link` per role.

    `owner_pid`/`owner_start_time` identify the process whose death makes these namespaces leftovers;
    `state_file`, if any, is removed by `teardown`.
    """

    prefix: str
    subnet: str
    hub: str
    bridge: str
    links: tuple[Link, ...]
    owner_pid: int
    owner_start_time: float | None = None
    state_file: Path | None = None
    host_address: str | None = None
    """The host's own address in the subnet when the topology has a host link (`create(host_link=True)`):
    pgarena's processes in the host's namespace reach every role, and the roles the host, through it."""

    @property
    def host_interface(self) -> str | None:
        """The host-side interface of the host link (None without one)."""
        return f"{self.prefix}-{HOST_LINK_ABBREVIATION}" if self.host_address else None

    @property
    def host_hub_port(self) -> str | None:
        return f"{self.prefix}-h{HOST_LINK_ABBREVIATION}" if self.host_address else None

    @property
    def roles(self) -> list[str]:
        return [link.role for link in self.links]

    @property
    def namespaces(self) -> dict[str, str]:
        """Role → its namespace's name."""
        return {link.role: link.namespace for link in self.links}

    @property
    def addresses(self) -> dict[str, str]:
        """Role → its IPv4 address (the other roles reach it there)."""
        return {link.role: link.address for link in self.links}

    def link(self, role: str) -> Link:
        for link in self.links:
            if link.role == role:
                return link
        raise KeyError(f"no role {role!r} in topology {self.prefix} (roles: {', '.join(self.roles)})")

    def all_namespaces(self) -> list[str]:
        """Every namespace of the run: the roles' in order, then the hub."""
        return [link.namespace for link in self.links] + [self.hub]

    def as_dict(self) -> dict:
        """The topology for results.json (and, with `owner` and `version`, for the state file)."""
        data = {
            "prefix": self.prefix,
            "subnet": self.subnet,
            "hub": {"namespace": self.hub, "bridge": self.bridge},
            "roles": {link.role: {"namespace": link.namespace, "interface": link.interface,
                                  "address": link.address, "hub_port": link.hub_port} for link in self.links},
        }
        if self.host_address:
            data["host"] = {"interface": self.host_interface, "address": self.host_address,
                            "hub_port": self.host_hub_port}
        return data

    @classmethod
    def from_dict(cls, data: dict, *, state_file: Path | None = None) -> Topology:
        """The inverse of `as_dict` (the owner from a state file's `owner`, else unknown)."""
        owner = data.get("owner") or {}
        links = tuple(Link(role=role, namespace=r["namespace"], interface=r["interface"], address=r["address"],
                           hub_port=r["hub_port"]) for role, r in data["roles"].items())
        return cls(prefix=data["prefix"], subnet=data["subnet"], hub=data["hub"]["namespace"],
                   bridge=data["hub"]["bridge"], links=links, owner_pid=int(owner.get("pid", 0)),
                   owner_start_time=owner.get("start_time"), state_file=state_file,
                   host_address=(data.get("host") or {}).get("address"))


def new_prefix(base: str = DEFAULT_PREFIX_BASE) -> str:
    """A fresh run prefix: `base` and 6 random hex digits (`pga-1a2b3c`)."""
    return f"{base}{secrets.token_hex(3)}"


def role_abbreviation(role: str) -> str:
    """The short form of a role in names: `ROLE_ABBREVIATIONS`, else itself (≤ 3 characters), else its first
    2 characters and its last."""
    if not _ROLE_RE.match(role):
        raise ValueError(f"role {role!r}: lower-case letters and digits only, starting with a letter")
    if role in ROLE_ABBREVIATIONS:
        return ROLE_ABBREVIATIONS[role]
    return role if len(role) <= 3 else role[:2] + role[-1]


def plan(roles: Sequence[str], prefix: str, subnet: ipaddress.IPv4Network, *, owner_pid: int,
         owner_start_time: float | None = None, state_file: Path | None = None,
         host_link: bool = False) -> Topology:
    """The names and addresses of a topology, without creating anything (ValueError on bad input).

    With `host_link`, the host gets the subnet's last address (roles take the first ones)."""
    if not roles:
        raise ValueError("a topology needs at least one role")
    if len(prefix) > MAX_PREFIX_LENGTH or not _PREFIX_RE.match(prefix):
        raise ValueError(f"prefix {prefix!r}: at most {MAX_PREFIX_LENGTH} characters of a-z, 0-9 and '-'")
    hosts = list(subnet.hosts())
    if len(roles) + host_link > len(hosts):
        raise ValueError(f"{len(roles)} roles do not fit in {subnet}")
    seen: dict[str, str] = {}
    links = []
    for index, role in enumerate(roles):
        short = role_abbreviation(role)
        if short in _RESERVED_ABBREVIATIONS or short == HOST_LINK_ABBREVIATION or short in seen:
            other = seen.get(short, "the hub")
            raise ValueError(f"roles {role!r} and {other!r} would share the name {prefix}-{short}")
        seen[short] = role
        links.append(Link(role=role, namespace=f"{prefix}-{short}", interface=f"{prefix}-{short}",
                          address=str(hosts[index]), hub_port=f"{prefix}-h{short}"))
    return Topology(prefix=prefix, subnet=str(subnet), hub=f"{prefix}-hub", bridge=f"{prefix}-br",
                    links=tuple(links), owner_pid=owner_pid, owner_start_time=owner_start_time,
                    state_file=state_file, host_address=str(hosts[-1]) if host_link else None)


def host_networks(routes: Iterable[dict], addresses: Iterable[dict]) -> list[ipaddress.IPv4Network]:
    """The IPv4 networks the host already uses, from `ip -j route` and `ip -j addr` output.

    The default route is left out (it covers everything, so it collides with nothing in particular).
    """
    found = set()
    for route in routes:
        dst = route.get("dst")
        if not dst or dst == "default":
            continue
        try:
            found.add(ipaddress.IPv4Network(dst, strict=False))
        except ValueError:  # IPv6 or a route type without an address
            continue
    for interface in addresses:
        for info in interface.get("addr_info", []):
            if info.get("family") != "inet":
                continue
            found.add(ipaddress.IPv4Network(f"{info['local']}/{info['prefixlen']}", strict=False))
    return sorted(found)


def choose_subnet(taken: Iterable[ipaddress.IPv4Network],
                  pool: ipaddress.IPv4Network = DEFAULT_SUBNET_POOL) -> ipaddress.IPv4Network:
    """The first /24 of `pool` that overlaps none of `taken` (NetnsError if there is none)."""
    taken = list(taken)
    for candidate in pool.subnets(new_prefix=SUBNET_PREFIX_LENGTH):
        if not any(candidate.overlaps(net) for net in taken):
            return candidate
    raise NetnsError(f"every /{SUBNET_PREFIX_LENGTH} of {pool} overlaps a route or address of this host")


def owner_alias(pid: int, start_time: float | None) -> str:
    """The bridge alias that names a topology's owner (see `parse_owner_alias`)."""
    return f"pgarena owner pid={pid} start={start_time or 0.0:.6f}"


def parse_owner_alias(alias: str | None) -> dict | None:
    """`{"pid", "start_time"}` from a bridge alias written by `owner_alias`, else None."""
    match = OWNER_ALIAS_RE.match(alias or "")
    return {"pid": int(match[1]), "start_time": float(match[2])} if match else None


def run_of(name: str) -> str:
    """The run prefix of a namespace or link name (`pga-1a2b3c-db` → `pga-1a2b3c`)."""
    return name.rsplit("-", 1)[0]


def write_state(path: Path, topology: Topology) -> None:
    """Write the state file (atomically): the topology and its owner, so `reap_state_file` can remove it."""
    data = {"version": STATE_VERSION, **topology.as_dict(),
            "owner": {"pid": topology.owner_pid, "start_time": topology.owner_start_time}}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(data, indent=2))


def read_state(path: Path) -> Topology | None:
    """The topology a state file records (None if there is no file; NetnsError if it is unreadable)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise NetnsError(f"cannot read the namespace state file {path}: {exc}") from exc
    try:
        data = json.loads(text)
        if data.get("version") != STATE_VERSION:
            raise ValueError(f"version {data.get('version')!r}, expected {STATE_VERSION}")
        return Topology.from_dict(data, state_file=path)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise NetnsError(f"the namespace state file {path} is not one pgarena wrote: {exc}") from exc


@functools.cache
def _ip_binary() -> str | None:
    found = shutil.which("ip")
    if found:
        return found
    for folder in IP_SEARCH_DIRS:
        candidate = Path(folder) / "ip"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def _ip(*args: str, timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S) -> str:
    """Run `ip ARGS`; its standard output, or NetnsError with the command and its stderr."""
    binary = _ip_binary()
    if binary is None:
        raise NetnsError("no `ip` command (iproute2) found", command=["ip", *args])
    argv = [binary, *args]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise NetnsError(f"`ip` did not finish within {timeout_s:g} s", command=argv) from exc
    if out.returncode != 0:
        raise NetnsError(f"`ip` failed with exit code {out.returncode}", command=argv, stderr=out.stderr)
    return out.stdout


def _ip_json(*args: str) -> list[dict]:
    text = _ip("-j", *args).strip()
    return json.loads(text) if text else []


def list_namespaces() -> list[str]:
    """The names of every named network namespace on this machine (`ip netns list`)."""
    return [entry["name"] for entry in _ip_json("netns", "list")]


def _host_links() -> list[str]:
    return [entry["ifname"] for entry in _ip_json("link", "show")]


def exec_prefix(topology: Topology, role: str) -> list[str]:
    """The argv prefix that runs a command inside `role`'s namespace: `exec_prefix(t, "database") + argv`.

    NOTE: `ip netns exec` execs the command itself (same pid, so process groups and kill_tree work), in
    a private mount namespace where /sys shows the role's interfaces; it needs root.
    """
    return [_ip_binary() or "ip", "netns", "exec", topology.link(role).namespace]


def available() -> str | None:
    """None if network namespaces, veth pairs and bridges can be created here, else the reason."""
    if not os.uname().sysname == "Linux":
        return f"network namespaces need Linux (this is {os.uname().sysname})"
    if _ip_binary() is None:
        return f"no `ip` command (iproute2) on PATH or in {', '.join(IP_SEARCH_DIRS)}"
    if os.geteuid() != 0:
        return f"creating network namespaces needs root (running as uid {os.geteuid()})"
    probe = f"{new_prefix()}-prb"
    try:
        _ip("netns", "add", probe)
        try:
            _ip("-n", probe, "link", "add", "p0", "type", "veth", "peer", "name", "p1")
            _ip("-n", probe, "link", "add", "b0", "type", "bridge")
        finally:
            _ip("netns", "delete", probe)
    except NetnsError as exc:
        return f"cannot create a network namespace with a veth pair and a bridge: {exc}"
    return None


def _owner_record(pid: int) -> dict:
    try:
        return {"pid": pid, "start_time": psutil.Process(pid).create_time()}
    except psutil.Error:
        return {"pid": pid, "start_time": None}


def create(roles: Sequence[str], prefix: str | None = None, *, state_file: Path | None = None,
           subnet: ipaddress.IPv4Network | None = None, owner_pid: int | None = None,
           verify: bool = True, host_link: bool = False) -> Topology:
    """Create one namespace per role and the hub joining them; return the topology.

    `prefix` defaults to a fresh `new_prefix()`, `subnet` to the first free /24 (`choose_subnet`),
    `owner_pid` to this process. With `state_file`, the topology is written there before anything is
    created (for `reap_state_file` after a crash) and removed again by `teardown`. With `verify`, every
    role must reach every other role's address and its own loopback over TCP (`verify_connectivity`).
    With `host_link`, one more veth pair joins the host's own namespace to the bridge (the host's end
    `<prefix>-hst` carries `topology.host_address`), so pgarena's processes on the host (verification,
    samplers, accounting) reach the roles by address; it is the only interface a topology puts on the
    host, and it goes when the hub does (deleting one end of a veth pair deletes both).
    On any failure, what was created is removed and NetnsError is raised.
    """
    if subnet is None:
        subnet = choose_subnet(host_networks(_ip_json("-4", "route", "show", "table", "all"),
                                             _ip_json("-4", "addr", "show")))
    owner = _owner_record(os.getpid() if owner_pid is None else owner_pid)
    topology = plan(roles, prefix or new_prefix(), subnet, owner_pid=owner["pid"],
                    owner_start_time=owner["start_time"], state_file=state_file, host_link=host_link)
    clash = sorted(set(topology.all_namespaces()) & set(list_namespaces()))
    if clash:
        raise NetnsError(f"network namespace(s) {', '.join(clash)} exist already: prefix {topology.prefix} "
                         "is in use")
    if state_file is not None:
        write_state(state_file, topology)
    try:
        _build(topology)
        if verify:
            verify_connectivity(topology)
    except BaseException:
        with contextlib.suppress(NetnsError):
            teardown(topology)
        raise
    return topology


def _build(topology: Topology) -> None:
    hub, bridge = topology.hub, topology.bridge
    prefix_length = ipaddress.IPv4Network(topology.subnet).prefixlen
    _ip("netns", "add", hub)
    _ip("-n", hub, "link", "add", bridge, "type", "bridge")
    _ip("-n", hub, "link", "set", "dev", bridge, "alias",
        owner_alias(topology.owner_pid, topology.owner_start_time))
    _ip("-n", hub, "link", "set", "dev", "lo", "up")
    _ip("-n", hub, "link", "set", "dev", bridge, "up")
    for link in topology.links:
        _ip("netns", "add", link.namespace)
        _ip("-n", link.namespace, "link", "set", "dev", "lo", "up")
        _ip("-n", hub, "link", "add", link.hub_port, "type", "veth", "peer", "name", link.interface,
            "netns", link.namespace)
        _ip("-n", hub, "link", "set", "dev", link.hub_port, "master", bridge, "up")
        _ip("-n", link.namespace, "addr", "add", f"{link.address}/{prefix_length}", "dev", link.interface)
        _ip("-n", link.namespace, "link", "set", "dev", link.interface, "up")
    if topology.host_address:
        _ip("-n", hub, "link", "add", topology.host_hub_port, "type", "veth", "peer", "name",
            topology.host_interface, "netns", str(os.getpid()))
        _ip("-n", hub, "link", "set", "dev", topology.host_hub_port, "master", bridge, "up")
        _ip("addr", "add", f"{topology.host_address}/{prefix_length}", "dev", topology.host_interface)
        _ip("link", "set", "dev", topology.host_interface, "up")


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


def processes_in(namespace: str) -> list[int]:
    """The pids of processes inside the named network namespace (this process and its ancestors excepted).

    NOTE: a command started with `exec_prefix` counts once `ip netns exec` has entered the namespace,
    a few milliseconds after it started; one started while `teardown` runs may escape it.
    """
    try:
        target = os.stat(NETNS_RUN_DIR / namespace)
    except OSError:
        return []
    spared = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
    found = []
    for pid in psutil.pids():
        if pid in spared:
            continue
        try:
            st = os.stat(f"/proc/{pid}/ns/net")
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
            found.append(pid)
    return found


def _stop_processes(pids: list[int], grace_s: float) -> int:
    """SIGTERM, then after `grace_s` SIGKILL; the number of processes that were signalled."""
    procs = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            proc.terminate()
            procs.append(proc)
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(alive, timeout=2.0)
    return len(procs)


def _remove(namespaces: Sequence[str], links: Sequence[str], grace_s: float) -> list[str]:
    """Delete the named namespaces (stopping processes still inside) and host links that exist; one line
    per thing removed. Errors are collected and raised together once everything was tried."""
    lines, errors = [], []
    existing = set(list_namespaces())
    for name in namespaces:
        if name not in existing:
            continue
        stopped = _stop_processes(processes_in(name), grace_s)
        try:
            _ip("netns", "delete", name)
        except NetnsError as exc:
            if name in list_namespaces():
                errors.append(str(exc))
            continue
        lines.append(f"removed network namespace {name}" + (f" (stopped {stopped} process(es))" if stopped else ""))
    host = set(_host_links())
    for name in links:
        if name not in host:
            continue
        try:
            _ip("link", "delete", "dev", name)
            lines.append(f"removed link {name}")
        except NetnsError as exc:
            if name in _host_links():
                errors.append(str(exc))
    if errors:
        raise NetnsError("could not remove everything: " + "; ".join(errors))
    return lines


def teardown(topology: Topology, *, grace_s: float = DEFAULT_KILL_GRACE_S) -> list[str]:
    """Remove a topology's namespaces (roles first, the hub last), any host link with its prefix and its
    state file; processes still inside a namespace are stopped first. Idempotent; returns what it did."""
    links = [name for name in _host_links() if run_of(name) == topology.prefix]
    lines = _remove(topology.all_namespaces(), links, grace_s)
    if topology.state_file is not None:
        topology.state_file.unlink(missing_ok=True)
    return lines


@contextlib.contextmanager
def namespaces(roles: Sequence[str], prefix: str | None = None, *, state_file: Path | None = None,
               subnet: ipaddress.IPv4Network | None = None, host_link: bool = False) -> Iterator[Topology]:
    """`create` on entry, `teardown` on exit however the block ends."""
    topology = create(roles, prefix, state_file=state_file, subnet=subnet, host_link=host_link)
    try:
        yield topology
    finally:
        teardown(topology)


def _run_owner(run: str) -> dict | None:
    """The owner named by a run's bridge alias (None: no hub, no bridge or no alias)."""
    try:
        entries = _ip_json("-n", f"{run}-hub", "link", "show", "dev", f"{run}-br")
    except (NetnsError, ValueError):
        return None
    return parse_owner_alias(entries[0].get("ifalias")) if entries else None


def _owner_alive(owner: dict | None) -> bool:
    """True if the `{"pid", "start_time"}` owner is this process or still runs (same pid, same start time).

    NOTE: the same test as reaper.is_alive, repeated so that reaper.py can import this module.
    """
    if owner is None:
        return False
    if owner["pid"] == os.getpid():
        return True
    try:
        proc = psutil.Process(owner["pid"])
        return (owner.get("start_time") is not None and proc.status() != psutil.STATUS_ZOMBIE
                and abs(proc.create_time() - owner["start_time"]) <= OWNER_START_TOLERANCE_S)
    except psutil.Error:
        return False


def leftovers(prefix_pattern: str = DEFAULT_PREFIX_BASE, *, include_live: bool = False) -> list[str]:
    """Namespaces and host links whose names start with `prefix_pattern` and whose run's owner is gone.

    A run is owned by the process its bridge alias names; one with no owner (a hub being created right
    now gets its alias within milliseconds) is looked at again after UNOWNED_RECHECK_S. `include_live`
    lists the namespaces of running owners too.
    """
    names = [n for n in list_namespaces() if n.startswith(prefix_pattern)]
    names += [n for n in _host_links() if n.startswith(prefix_pattern)]
    if include_live:
        return sorted(names)
    runs = {run_of(name) for name in names}
    owners = {run: _run_owner(run) for run in runs}
    if any(owner is None for owner in owners.values()):
        time.sleep(UNOWNED_RECHECK_S)
        owners.update({run: _run_owner(run) for run, owner in owners.items() if owner is None})
    return sorted(name for name in names if not _owner_alive(owners[run_of(name)]))


def remove_leftovers(prefix_pattern: str = DEFAULT_PREFIX_BASE, *, include_live: bool = False,
                     grace_s: float = DEFAULT_KILL_GRACE_S) -> list[str]:
    """Remove what `leftovers` lists (stopping processes inside); one line per thing removed."""
    names = leftovers(prefix_pattern, include_live=include_live)
    known = set(list_namespaces())
    return _remove([n for n in names if n in known], [n for n in names if n not in known], grace_s)


def reap_state_file(path: Path, *, grace_s: float = DEFAULT_KILL_GRACE_S) -> list[str]:
    """Remove exactly what a killed run's state file names, then the file; one line per thing removed.

    NetnsInUse if the run's owner still runs (and is not this process); [] if there is no file.
    """
    topology = read_state(path)
    if topology is None:
        return []
    owner = {"pid": topology.owner_pid, "start_time": topology.owner_start_time}
    if topology.owner_pid != os.getpid() and _owner_alive(owner):
        raise NetnsInUse(f"the namespaces of {path} ({topology.prefix}-*) belong to pid {topology.owner_pid}, "
                         "which is still running")
    links = [name for name in _host_links() if run_of(name) == topology.prefix]
    lines = _remove(topology.all_namespaces(), links, grace_s)
    path.unlink(missing_ok=True)
    return lines
