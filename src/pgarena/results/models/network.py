"""How the roles of the run were placed and linked: the added round trip (--db-rtt) and the namespaces or
hosts of a topology."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from pgarena.results.models.base import Record


class NetworkInfo(Record):
    """How the stacks reached PostgreSQL when a round trip was added (--db-rtt)."""

    mode: Literal["toxiproxy"]
    description: str
    proxy: str = Field(description="the proxy and its version")
    proxy_cpus: list[int] = Field(description="CPUs the proxy was pinned to (its CPU is counted apart)")
    db_rtt_ms: list[float] = Field(description="the configured round trips, the run's load dimension")
    overhead: list[dict[str, float | int]] = Field(default_factory=list, description=(
        "per configured round trip: what the proxy added to request/response round trips against the same "
        "round trips straight to an echo server (median and p99 µs) and its CPU µs per round trip"))
    stack_rtt_ms: float = Field(0, description=(
        "--stack-rtt: round trip added between the generator and each stack (a proxy in front of the stack)"))


class RolePlace(Record):
    """Where one role of the run ran."""

    host: str = Field(description="'local' (this machine), the network namespace's name, or 'ssh <destination>'")
    address: str = Field(description="the address the other roles reach it at")
    interface: str | None = Field(None, description="its interface in its namespace")
    kind: Literal["local", "netns", "ssh"] = "netns"
    name: str | None = Field(None, description="the host's name in the topology file (None: --netns or pgarena)")
    environment: dict[str, Any] | None = Field(None, description=(
        "ssh hosts: the host's CPU, memory, kernel, OS and toolchain versions as read over SSH (a value it could "
        "not read is null: not measured); None for this machine and its namespaces (see `environment`)"))


class TopologyInfo(Record):
    """Where the generators, the stacks and PostgreSQL ran and how they were linked (--netns, --topology)."""

    mode: Literal["netns", "topology"] = Field(description="netns: every role in a namespace pgarena created")
    description: str
    subnet: str | None = Field(None, description="the namespaces' subnet (None: no namespace)")
    roles: dict[str, RolePlace] = Field(description=(
        "role (generator or 'generator N', stack, database, pgarena) → where it ran"))
    links: list[str] = Field(default_factory=list, description="the links between the roles, one line each")
