"""Where the run's roles live: all on this machine's loopback (the default), or each in a network namespace
pgarena creates (`--netns`, system/netns.py).

Under --netns the generator, the stacks and PostgreSQL each get a namespace on one bridge, and the host a
link into it (`host_link`), so that pgarena's own work — verification, the samplers, the connection
poller, the accounting, Toxiproxy — keeps running here and reaches the roles by address. What is started
in a role's namespace: PostgreSQL (`pg_ctl`, also on a restart), each stack's run command (its build runs
here: it may need the registries, which the namespaces cannot reach), the generator, and the headroom's
trivial endpoint (with the stacks). The namespaces exist from before PostgreSQL starts until after it
stopped; a killed run's are removed by the next run's reaper (run_dir/netns.json).
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from pgarena.db.postgres import Place
from pgarena.results.models import RolePlace, TopologyInfo
from pgarena.system import netns

ROLES = ("generator", "stack", "database")
STATE_FILE = "netns.json"
"""The run folder's record of its namespaces, for the reaper (netns.reap_state_file)."""
LOOPBACK = "127.0.0.1"


class PlacementError(Exception):
    """--netns cannot be honoured here (not root, no iproute2, or creating the namespaces failed)."""


@dataclass(frozen=True)
class Placement:
    """The roles' namespaces, or none (everything on the loopback)."""

    topology: netns.Topology | None = None

    @classmethod
    def create(cls, enabled: bool, run_dir: Path, scope: ExitStack) -> Placement:
        """No namespaces unless `enabled`; else the run's, removed when `scope` closes."""
        if not enabled:
            return cls()
        reason = netns.available()
        if reason is not None:
            raise PlacementError(f"--netns: {reason}")
        try:
            topology = scope.enter_context(netns.namespaces(ROLES, state_file=run_dir / STATE_FILE, host_link=True))
        except netns.NetnsError as exc:
            raise PlacementError(f"--netns: {exc}") from None
        return cls(topology)

    def prefix(self, role: str) -> tuple[str, ...]:
        """The argv prefix that starts a command in `role`'s place (() on the loopback)."""
        return tuple(netns.exec_prefix(self.topology, role)) if self.topology else ()

    def address(self, role: str) -> str:
        """Where the other roles (and pgarena) reach `role`."""
        return self.topology.addresses[role] if self.topology else LOOPBACK

    @property
    def here(self) -> str:
        """The address of pgarena's own side (its listeners, e.g. Toxiproxy's proxies, bind there)."""
        return self.topology.host_address if self.topology and self.topology.host_address else LOOPBACK

    def database_place(self) -> Place | None:
        if self.topology is None:
            return None
        return Place(argv_prefix=self.prefix("database"), address=self.address("database"),
                     subnet=self.topology.subnet)

    def info(self) -> TopologyInfo | None:
        """The topology for results.json (None on the loopback)."""
        t = self.topology
        if t is None:
            return None
        roles = {link.role: RolePlace(host=link.namespace, address=link.address, interface=link.interface)
                 for link in t.links}
        roles["pgarena"] = RolePlace(host="local", address=t.host_address or LOOPBACK, interface=t.host_interface)
        return TopologyInfo(
            mode="netns", subnet=t.subnet, roles=roles,
            description=(f"each role in its own network namespace on bridge {t.bridge} (namespace {t.hub}), one veth "
                         f"pair each; pgarena (verification, samplers, accounting, Toxiproxy) on this machine through "
                         f"{t.host_interface}; no role has a route out of {t.subnet}"),
            links=[f"generator {t.addresses['generator']} → stack {t.addresses['stack']} (HTTP)",
                   f"stack {t.addresses['stack']} → database {t.addresses['database']} (PostgreSQL)",
                   f"pgarena {t.host_address} → stack, database (verification, accounting)"])
