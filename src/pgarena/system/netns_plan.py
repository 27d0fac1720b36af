"""The plan of pgarena's network namespaces, without touching the system: the names, the subnet and the
addresses of a run's `Topology`, its owner, and the state file that records it (system/netns.py creates and
removes what this plans, with `ip`; system/netns_sockets.py opens sockets inside).

The layout of one run with prefix `pga-1a2b3c` (names carry the prefix so leftovers can be recognised)::

    pga-1a2b3c-gen  [pga-1a2b3c-gen 10.213.0.1/24] ──veth── [pga-1a2b3c-hgen] ┐
    pga-1a2b3c-stk  [pga-1a2b3c-stk 10.213.0.2/24] ──veth── [pga-1a2b3c-hstk] ├─ bridge pga-1a2b3c-br
    pga-1a2b3c-db   [pga-1a2b3c-db  10.213.0.3/24] ──veth── [pga-1a2b3c-hdb ] ┘  in namespace pga-1a2b3c-hub

- **A hub, not point-to-point pairs**: one bridge reaches every role from every other with one address
  per role and one route (the /24), and a delay for one role's traffic is a qdisc on that role's own
  interface (the database only ever talks to the stack, the generator only to the stack).
- **Nothing on the host** (unless asked, see `host_link` in `netns.create`): the bridge lives in its own
  namespace and each veth pair is created there with its peer directly in the role's namespace, so no
  interface ever appears in the host's namespace (a crash half-way leaves only namespaces), and deleting
  the namespaces deletes every link.
- **No way out**: the role namespaces have no default route; a role reaches only the other roles (and its
  own loopback, which is not the host's).
- **The subnet** is the first /24 of 10.213.0.0/16 that overlaps no route or address of the host
  (`ip -4 -j route show table all`, `ip -4 -j addr`); role *i* (in the order given) gets host *i + 1*.
- **Owned**: the bridge's alias names the owning process (pid and start time), so `netns.leftovers` tells a
  crashed run's namespaces from those of a run still going on this machine; `create(state_file=...)`
  also writes the names before creating anything, for `netns.reap_state_file`.
"""

from __future__ import annotations

import ipaddress
import json
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pgarena.results.atomic import write_text_atomic

DEFAULT_PREFIX_BASE = "pga-"
"""Every name pgarena gives a namespace or link starts with this (then 6 hex digits of the run)."""
DEFAULT_SUBNET_POOL = ipaddress.IPv4Network("10.213.0.0/16")
"""The /24 subnets a topology's addresses are taken from, first free one first."""
SUBNET_PREFIX_LENGTH = 24
"""Where `ip` is looked for when it is not on PATH (a non-root PATH often lacks the sbin folders)."""
ROLE_ABBREVIATIONS = {"generator": "gen", "stack": "stk", "database": "db", "proxy": "prx"}
"""Role → the short name in its namespace and interface names; other roles of more than 3 characters use
their first 2 and their last (`gen1` → `ge1`, `gen2` → `ge2`), shorter ones themselves."""
MAX_PREFIX_LENGTH = 10
"""Interface names have at most 15 characters: prefix + `-h` + a 3-letter role abbreviation."""
STATE_VERSION = 1
"""Version of the state file (1: the topology's `as_dict` plus `version` and `owner`)."""
OWNER_ALIAS_RE = re.compile(r"^pgarena owner pid=(\d+) start=([0-9.]+)$")

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
