"""Topology files (`--topology topology.toml`): which host each role of a run lives on.

A host is `local` (this machine), `netns` (a network namespace pgarena creates for the run and removes,
system/netns.py: the test bed on one machine) or `ssh` (another machine reached with the OpenSSH client,
system/ssh). The roles are one or more **generators**, the **stack** (every stack of the run) and the
**database** (the managed PostgreSQL; left out, the run uses your own server given with --database-url). Validated like stack.toml: every error names the file and the key.

    [hosts.gen1]
    kind = "netns"
    [hosts.gen2]
    kind = "netns"
    [hosts.app]
    kind = "netns"
    [hosts.db]
    kind = "netns"

    [roles]
    generators = ["gen1", "gen2"]
    stack = "app"
    database = "db"

An `ssh` host names its `destination` (`user@host`, as for `ssh`), optionally `port`, `identity_file`,
`address` (where the other roles reach it; default: the destination's host part) and `workdir` (where stack
folders are copied; default /tmp/pgarena). A `local` host may give `address`: the address of this machine
that the other roles reach it at (default 127.0.0.1, enough when every role is local or in a namespace).
Where each role may live, and why: docs/topology.md.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

HOST_NAME = re.compile(r"^[a-z][a-z0-9]{0,7}$")
"""Host names: short (a namespace host's name is part of interface names, at most 15 characters)."""
DEFAULT_SSH_WORKDIR = "/tmp/pgarena"
ROLE_KINDS = {
    "generators": ("local", "netns", "ssh"),
    "stack": ("local", "netns", "ssh"),
    "database": ("local", "netns"),
}
"""Where each role may live. The managed database over SSH would need initdb and pg_ctl there (use
--database-url for a server on another host)."""


class TopologyError(ValueError):
    """A topology file that cannot be used; the message names the file and the key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class HostDef(_Strict):
    kind: Literal["local", "netns", "ssh"]
    destination: str | None = Field(None, description="ssh: user@host as given to ssh")
    port: int = Field(22, ge=1, le=65535, description="ssh: the sshd port")
    identity_file: str | None = Field(None, description="ssh: the private key (else ssh's own choice)")
    address: str | None = Field(None, description="where the other roles reach this host")
    workdir: str = Field(DEFAULT_SSH_WORKDIR, description="ssh: the folder stack folders are copied into")
    options: dict[str, str] = Field(default_factory=dict, description=(
        "ssh: `-o NAME=VALUE` options (e.g. UserKnownHostsFile); BatchMode is always yes"))

    @field_validator("address")
    @classmethod
    def _ip(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                ipaddress.ip_address(value)
            except ValueError:
                raise ValueError(f"'{value}' is not an IP address") from None
        return value

    @model_validator(mode="after")
    def _fields_of_kind(self) -> HostDef:
        if self.kind == "ssh" and not self.destination:
            raise ValueError("an ssh host needs 'destination' (user@host)")
        if self.kind != "ssh" and self.destination:
            raise ValueError(f"'destination' is for ssh hosts, not {self.kind}")
        if self.kind != "ssh" and self.options:
            raise ValueError(f"'options' are ssh options, not for {self.kind} hosts")
        if self.kind == "netns" and self.address:
            raise ValueError("a netns host's address is assigned by pgarena; remove 'address'")
        return self

    @property
    def reach_address(self) -> str | None:
        """ssh: the given address, else the destination's host part."""
        if self.address or self.kind != "ssh" or not self.destination:
            return self.address
        return self.destination.rsplit("@", 1)[-1]


class RolesDef(_Strict):
    generators: list[str] = Field(min_length=1)
    stack: str
    database: str | None = Field(None, description=(
        "the managed PostgreSQL's host; leave it out to run against your own server (--database-url)"))


class TopologyDef(_Strict):
    hosts: dict[str, HostDef] = Field(min_length=1)
    roles: RolesDef

    @field_validator("hosts")
    @classmethod
    def _names(cls, hosts: dict[str, HostDef]) -> dict[str, HostDef]:
        for name in hosts:
            if not HOST_NAME.match(name):
                raise ValueError(f"host name '{name}': a lower-case letter, then up to 7 letters or digits")
        return hosts

    @model_validator(mode="after")
    def _roles_on_known_hosts(self) -> TopologyDef:
        roles = {"generators": self.roles.generators, "stack": [self.roles.stack],
                 "database": [self.roles.database] if self.roles.database else []}
        for role, names in roles.items():
            for name in names:
                if name not in self.hosts:
                    guess = difflib.get_close_matches(name, list(self.hosts), n=1)
                    hint = f" (did you mean '{guess[0]}'?)" if guess else ""
                    raise ValueError(f"roles.{role}: no host '{name}'{hint}; hosts: {', '.join(self.hosts)}")
                kind = self.hosts[name].kind
                if kind not in ROLE_KINDS[role]:
                    raise ValueError(f"roles.{role}: host '{name}' is {kind}; the {role} may live on "
                                     f"{' or '.join(ROLE_KINDS[role])} hosts (docs/topology.md says why)")
        if len(set(self.roles.generators)) != len(self.roles.generators):
            raise ValueError("roles.generators: each host once (several generators need several hosts)")
        return self

    def kind(self, name: str) -> str:
        return self.hosts[name].kind

    @property
    def netns_hosts(self) -> list[str]:
        """The hosts pgarena creates as namespaces, in file order."""
        return [name for name, host in self.hosts.items() if host.kind == "netns"]


def load_topology(path: Path) -> TopologyDef:
    """Read and validate a topology file; TopologyError with one readable line per problem."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise TopologyError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise TopologyError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return TopologyDef.model_validate(raw)
    except ValidationError as exc:
        lines = []
        for item in exc.errors():
            key = ".".join(str(p) for p in item["loc"]) or "(top level)"
            message = item["msg"].removeprefix("Value error, ")
            if item["type"] == "extra_forbidden":
                message = "unknown key"
            elif item["type"] == "missing":
                message = "missing"
            lines.append(f"{path}: {key}: {message}")
        raise TopologyError("\n".join(lines)) from None
