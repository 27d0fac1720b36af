"""Where the run's roles live: all on this machine's loopback (the default), each in a network namespace
pgarena creates (`--netns`), or as a topology file says (`--topology`, config/topology.py: local, netns and
ssh hosts).

Namespace hosts share one bridge (system/netns.py), and the host gets a link into it (`host_link`), so that
pgarena's own work — verification, the samplers, the connection poller, the accounting, Toxiproxy — keeps
running here and reaches the roles by address. What is started in a role's namespace: PostgreSQL (`pg_ctl`,
also on a restart), each stack's run command (its build runs here: it may need the registries, which the
namespaces cannot reach), the generators, and the headroom's trivial endpoint (with the stacks). The
namespaces exist from before PostgreSQL starts until after it stopped; a killed run's are removed by the
next run's reaper (run_dir/netns.json).
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from pgarena.config.topology import HostDef, RolesDef, TopologyDef
from pgarena.db.cluster import Place
from pgarena.results.models import RolePlace, TopologyInfo
from pgarena.system import netns, netns_plan, reaper

LOOPBACK = "127.0.0.1"
NETNS_DEFAULT = TopologyDef.model_construct(
    hosts={"gen": HostDef(kind="netns"), "stk": HostDef(kind="netns"), "db": HostDef(kind="netns")},
    roles=RolesDef(generators=["gen"], stack="stk", database="db"))
"""`--netns`: the generator, the stacks and PostgreSQL each in a namespace of its own."""


class PlacementError(Exception):
    """The topology cannot be set up here (not root, no iproute2, or creating the namespaces failed)."""


@dataclass(frozen=True)
class Placement:
    """The run's hosts and which role is on which; no definition: everything on the loopback."""

    definition: TopologyDef | None = None
    topology: netns_plan.Topology | None = None
    """The namespaces pgarena created for the definition's netns hosts (None: none)."""
    source: str = field(default="", compare=False)
    """What asked for this placement ('--netns', or the topology file's path)."""

    @classmethod
    def create(cls, definition: TopologyDef | None, run_dir: Path, scope: ExitStack, *, source: str = "") -> Placement:
        """The namespaces of `definition`'s netns hosts, removed when `scope` closes (none without any)."""
        if definition is None or not definition.netns_hosts:
            return cls(definition, None, source)
        reason = netns.available()
        if reason is not None:
            raise PlacementError(f"{source}: {reason}")
        try:
            topology = scope.enter_context(netns.namespaces(
                definition.netns_hosts, state_file=run_dir / reaper.NETNS_STATE_FILE, host_link=True))
        except (netns_plan.NetnsError, ValueError) as exc:
            raise PlacementError(f"{source}: {exc}") from None
        return cls(definition, topology, source)

    def host_of(self, role: str) -> str | None:
        """The host name of 'stack', 'database' or 'generator' (the first generator); None on the loopback."""
        if self.definition is None:
            return None
        roles = self.definition.roles
        return {"stack": roles.stack, "database": roles.database, "generator": roles.generators[0]}[role]
        # NOTE: a topology without roles.database runs against --database-url: host_of("database") is None

    def kind(self, role: str) -> str:
        host = self.host_of(role)
        return "local" if host is None else self.definition.hosts[host].kind  # type: ignore[union-attr]

    def _host_prefix(self, host: str | None) -> tuple[str, ...]:
        if host is None or self.definition.hosts[host].kind != "netns":  # type: ignore[union-attr]
            return ()
        return tuple(netns.exec_prefix(self.topology, host))  # type: ignore[arg-type]

    def _host_address(self, host: str | None) -> str:
        if host is None:
            return LOOPBACK
        spec = self.definition.hosts[host]  # type: ignore[union-attr]
        if spec.kind == "netns":
            return self.topology.addresses[host]  # type: ignore[union-attr]
        return spec.reach_address or LOOPBACK

    def prefix(self, role: str) -> tuple[str, ...]:
        """The argv prefix that starts a command in `role`'s namespace (() when it runs here)."""
        return self._host_prefix(self.host_of(role))

    def address(self, role: str) -> str:
        """Where the other roles (and pgarena) reach `role`."""
        return self._host_address(self.host_of(role))

    def generators(self) -> list[tuple[str, tuple[str, ...]]]:
        """Every generator host: (name, argv prefix); one unnamed local generator on the loopback."""
        if self.definition is None:
            return [("local", ())]
        return [(name, self._host_prefix(name)) for name in self.definition.roles.generators]

    def remote_generators(self) -> list[str]:
        """The generator hosts reached over SSH."""
        if self.definition is None:
            return []
        return [n for n in self.definition.roles.generators if self.definition.hosts[n].kind == "ssh"]

    @property
    def here(self) -> str:
        """The address of pgarena's own side (its listeners, e.g. Toxiproxy's proxies, bind there): the host
        link's with namespaces, else the address a `local` host of the topology gives, else the loopback."""
        if self.topology and self.topology.host_address:
            return self.topology.host_address
        local = [h.address for h in (self.definition.hosts.values() if self.definition else ()) if
                 h.kind == "local" and h.address]
        return local[0] if local else LOOPBACK

    def database_place(self) -> Place | None:
        """The managed cluster's place; None: this machine's loopback, as without a topology."""
        address = self.address("database")
        if self.definition is None or (self.kind("database") == "local" and address == LOOPBACK):
            return None
        return Place(argv_prefix=self.prefix("database"), address=address, remote_clients=True)

    def info(self) -> TopologyInfo | None:
        """The topology for results.json (None on the loopback)."""
        d, t = self.definition, self.topology
        if d is None:
            return None
        roles: dict[str, RolePlace] = {}
        for index, name in enumerate(d.roles.generators):
            key = "generator" if len(d.roles.generators) == 1 else f"generator {index + 1}"
            roles[key] = self._role_place(name)
        roles["stack"] = self._role_place(d.roles.stack)
        if d.roles.database is not None:
            roles["database"] = self._role_place(d.roles.database)
        roles["pgarena"] = RolePlace(host="local", address=self.here, interface=t.host_interface if t else None,
                                     kind="local")
        kinds = sorted({h.kind for h in d.hosts.values()})
        bridge = (f"; namespaces on bridge {t.bridge} (namespace {t.hub}), one veth pair each, pgarena through "
                  f"{t.host_interface}; no namespace has a route out of {t.subnet}") if t else ""
        generators = ", ".join(self._host_address(n) for n in d.roles.generators)
        return TopologyInfo(
            mode="netns" if kinds == ["netns"] else "topology", subnet=t.subnet if t else None, roles=roles,
            description=f"{self.source or 'topology'}: hosts of kind {', '.join(kinds)}{bridge}",
            links=[f"generator(s) {generators} → stack {self.address('stack')} (HTTP)",
                   f"stack {self.address('stack')} → database "
                   + (self.address("database") if d.roles.database else "of --database-url") + " (PostgreSQL)",
                   f"pgarena {self.here} → stack, database (verification, accounting)"])

    def _role_place(self, host: str) -> RolePlace:
        spec = self.definition.hosts[host]  # type: ignore[union-attr]
        if spec.kind == "netns":
            link = self.topology.link(host)  # type: ignore[union-attr]
            return RolePlace(host=link.namespace, address=link.address, interface=link.interface, kind="netns",
                             name=host)
        if spec.kind == "ssh":
            return RolePlace(host=f"ssh {spec.destination}", address=self._host_address(host), kind="ssh", name=host)
        return RolePlace(host="local", address=self._host_address(host), kind="local", name=host)
