"""The run's hosts before anything starts on them: where its topology comes from (`topology_of`), each SSH
host's environment read once (`read_host_environments`), and the generators' places for a distributed
window with their clock offsets (`generator_places`). Placement (pipeline/placement.py) sets the hosts up.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from pgarena.config.run import RunConfig
from pgarena.config.topology import TopologyDef, TopologyError, load_topology
from pgarena.load.distributed import GeneratorPlace
from pgarena.pipeline.context import Log, RunError
from pgarena.pipeline.placement import NETNS_DEFAULT, Placement
from pgarena.results.models import RunResults


def read_host_environments(placement: Placement, results: RunResults, run_dir: Path, version_commands: list,
                           log: Log) -> None:
    """Each SSH host's environment, read once before anything starts there (RunError if it cannot be reached)."""
    if results.topology is None or placement.definition is None:
        return
    from pgarena.pipeline.remote import ssh_host
    from pgarena.system.ssh.transport import SshError

    read: dict[str, dict] = {}
    for role, place in results.topology.roles.items():
        if place.kind != "ssh" or place.name is None:
            continue
        if place.name in read:  # one host in two roles: read once
            place.environment = read[place.name]
            continue
        name, spec = place.name, placement.definition.hosts[place.name]
        host = ssh_host(spec, run_dir)
        try:
            host.check()
            place.environment = host.environment(version_commands)
        except SshError as exc:
            raise RunError(f"{placement.source}: host '{name}': {exc}") from None
        read[name] = place.environment
        log(f"{role} host {spec.destination}: {place.environment.get('cpu_model')} × "
            f"{place.environment.get('cpu_count')}, kernel {place.environment.get('kernel')}")


def generator_places(placement: Placement, run_dir: Path, scope: ExitStack, log: Log) -> list[GeneratorPlace]:
    """The topology's generators as places of a distributed window: namespaces by their `ip netns exec`, SSH
    hosts by their SshHost, a folder of this run there (removed at the end) and their clock offset."""
    from pgarena.pipeline.remote import ssh_host
    from pgarena.system.ssh.clock import clock_offset
    from pgarena.system.ssh.transport import SshError

    places = []
    for name, prefix in placement.generators():
        spec = placement.definition.hosts[name]  # type: ignore[union-attr]
        if spec.kind != "ssh":
            places.append(GeneratorPlace(name, argv_prefix=prefix, host="local"))
            continue
        host = ssh_host(spec, run_dir)
        folder = f"{spec.workdir.rstrip('/')}/generators/{run_dir.name}/{name}"
        try:
            offset, uncertainty = clock_offset(host)
        except SshError as exc:
            raise RunError(f"{placement.source}: generator host '{name}': {exc}") from None
        scope.callback(_remove_remote_folder, host, folder)
        log(f"generator {name} on {spec.destination}: clock offset {offset * 1000:+.2f} ms "
            f"(± {uncertainty * 1000:.2f})")
        places.append(GeneratorPlace(name, host=f"ssh {spec.destination}", ssh=host, remote_dir=folder,
                                     clock_offset_s=offset,
                                     clock_offset_method=f"ssh date round trips, ± {uncertainty * 1000:.2f} ms"))
    return places


def _remove_remote_folder(host, folder: str) -> None:
    """Remove a generator's folder of this run on its SSH host (left as it is when the host is unreachable)."""
    from pgarena.system.ssh.transport import SshError

    try:
        host.run(["rm", "-rf", "--", folder], timeout_s=60)
    except SshError:
        pass  # unreachable now: its files stay (k6, the script, the raw samples), nothing runs there


def topology_of(config: RunConfig) -> tuple[TopologyDef | None, str]:
    """The run's topology definition and where it came from (None: every role on the loopback)."""
    if config.netns:
        return NETNS_DEFAULT, "--netns"
    if config.topology:
        try:
            return load_topology(Path(config.topology)), config.topology
        except TopologyError as exc:  # validated with the config; the file may have changed since
            raise RunError(str(exc)) from None
    return None, ""
