"""Network namespaces for pgarena's roles: each role (generator, stack, database) in its own namespace,
all joined by one bridge, so that traffic between them crosses a veth link instead of the loopback. This
module makes and removes them with iproute2's `ip`; the names, addresses and the state file are planned in
system/netns_plan.py (its docstring draws the layout), sockets inside are opened by system/netns_sockets.py.

Start any command inside a role's namespace with `exec_prefix(topology, role) + argv`; open a socket in
one from Python with `netns_sockets.socket_in`, or poll a server with `netns_sockets.can_connect`.
Creating namespaces needs root and iproute2 (`available()` says).

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
import functools
import ipaddress
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import psutil

from pgarena.system.netns_plan import (
    DEFAULT_PREFIX_BASE,
    NetnsError,
    NetnsInUse,
    Topology,
    choose_subnet,
    host_networks,
    new_prefix,
    owner_alias,
    parse_owner_alias,
    plan,
    read_state,
    run_of,
    write_state,
)
from pgarena.system.netns_sockets import NETNS_RUN_DIR, verify_connectivity
from pgarena.system.pidregistry import is_alive

DEFAULT_COMMAND_TIMEOUT_S = 10.0
"""Longest an `ip` command may take before it counts as failed."""
DEFAULT_KILL_GRACE_S = 2.0
"""Seconds between SIGTERM and SIGKILL for processes still inside a namespace being removed."""
UNOWNED_RECHECK_S = 0.5
"""A run whose hub names no owner is looked at again after this long before it counts as a leftover:
`create` sets the owner a few milliseconds after making the hub namespace."""
IP_SEARCH_DIRS = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")
"""Where `ip` is looked for when it is not on PATH (a non-root PATH often lacks the sbin folders)."""


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
    """True if the `{"pid", "start_time"}` owner is this process or still runs (same pid, same start time)."""
    return owner is not None and (owner["pid"] == os.getpid() or is_alive(owner))


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
