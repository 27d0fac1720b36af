"""Where and with what the run happened: the machine, the remote targets' hosts, the database."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pgarena.results.models.base import Record


class TargetHost(Record):
    """The host of a remote target (--target) as pgarena sees it from outside: its URL only. What pgarena
    cannot read there is None ("not measured"), never a guess or this machine's figure."""

    stack: str = Field(description="the target's stack id")
    url: str = Field(description="the base URL it was verified and loaded at (credentials redacted)")
    cpu_model: str | None = Field(None, description="not measured: pgarena cannot read a remote host's CPU")
    cpu_count: int | None = Field(None, description="not measured")
    memory_bytes: int | None = Field(None, description="not measured")
    kernel: str | None = Field(None, description="not measured")


class Environment(Record):
    """Where and with what the run happened."""

    hostname: str
    cpu_model: str
    cpu_count: int
    memory_bytes: int
    kernel: str
    os: str
    python: str
    pgarena_version: str
    pgarena_git_revision: str = Field(description="git commit of pgarena, '+dirty' if modified; 'unknown' outside git")
    postgres_version: str | None = None
    engine_versions: dict[str, str] = Field(default_factory=dict, description="load generator → version")
    toolchains: dict[str, str] = Field(default_factory=dict, description="command → first line it printed")
    generator_cpus: list[int]
    server_cpus: list[int]
    cpu_sets_shared: bool = Field(description="generator and server share CPUs (a one-CPU machine)")
    cpu_accounting: str | None = Field(None, description="how stack and PostgreSQL CPU time was measured")
    headroom_unavailable: str | None = Field(None, description="why the generator headroom was not measured")
    speed_probe: str | None = Field(None, description=(
        "how the reference speed probe on the server CPUs was scheduled ('SCHED_FIFO priority 1', or normal with "
        "the reason); None: no probe ran"))
    pgarena_cpus: list[int] | None = Field(
        None, description="CPUs pgarena's own process and its sampler threads were pinned to (the generator CPUs)")
    targets: list[TargetHost] = Field(default_factory=list, description=(
        "remote targets: where each was loaded; its host is not this machine and its CPU, memory and kernel are "
        "not measured (the CPU sets above are then the generator's and pgarena's only)"))


class DatabaseInfo(Record):
    """The database the run used."""

    mode: Literal["managed", "external"]
    version: str
    settings_profile: str | None = Field(description="pgarena settings profile applied (managed only)")
    settings: dict[str, str] = Field(description="every setting not at its built-in default")
    url: str = Field(description="application URL, password redacted")
    cpu_affinity: list[int] | None = Field(
        None, description="CPUs the postmaster may run on, read from the running server (managed only)")
    cpu_affinity_note: str | None = Field(
        None, description="why cpu_affinity is absent, e.g. 'not pinned (external)': pgarena does not pin a "
                          "server it did not start")
