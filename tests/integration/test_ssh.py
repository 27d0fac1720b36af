"""SSH hosts (system/ssh) against a real OpenSSH server: an sshd inside a network namespace of its own stands
in for another machine, reached from the host over the topology's host link.

The sshd gets its own host key, an authorized_keys with a key the test generates, and a known_hosts the client
uses (StrictHostKeyChecking=yes, `-F /dev/null`: the machine's ssh configuration plays no part). A tiny stdlib
stack (tests/fixtures/ssh-stack) is copied, built, started with environment values that need quoting, asked
for /health, stopped; nothing may be left running in the namespace nor in the state files afterwards.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

from pgarena.config.profiles import build_config
from pgarena.pipeline import runner
from pgarena.report.markdown import render_markdown
from pgarena.results.store import load
from pgarena.system import netns
from pgarena.system.ssh.clock import clock_offset
from pgarena.system.ssh.host import SshHost, reap_state_file
from pgarena.system.ssh.process import RemoteProcess, read_state
from pgarena.system.ssh.shell import TOKEN_VARIABLE
from pgarena.system.ssh.transport import SshError
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres, require_load_path

SSHD = Path("/usr/sbin/sshd")
FIXTURE = PROJECT_DIR / "tests" / "fixtures" / "ssh-stack"
STEP_TIMEOUT_S = 10.0
MARKER = "it's a \"quoted\" $HOME `value` with spaces; \\ and ünïcode"


def _unavailable() -> str | None:
    if not SSHD.exists():
        return f"{SSHD} is missing (Debian's openssh-server; scripts/setup.sh installs it)"
    for tool in ("ssh", "ssh-keygen", "scp"):
        if shutil.which(tool) is None:
            return f"no {tool} on PATH (Debian's openssh-client)"
    reason = netns.available()
    return f"cannot create network namespaces here: {reason}" if reason else None


REASON = _unavailable()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "pgarena-test", "-f", str(path)],
                   check=True, timeout=STEP_TIMEOUT_S)
    return path.with_suffix(".pub").read_text().strip()


def _wait_for_port(address: str, port: int, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + STEP_TIMEOUT_S
    while True:
        try:
            with socket.create_connection((address, port), timeout=1):
                return
        except OSError:
            assert proc.poll() is None, f"sshd exited: {log.read_text()}"
            assert time.monotonic() < deadline, f"sshd not listening after {STEP_TIMEOUT_S} s: {log.read_text()}"
            time.sleep(0.05)


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    """(topology, sshd process, a function making an SshHost for it, the tmp folder)."""
    tmp = tmp_path_factory.mktemp("sshd")
    host_key_pub = _keygen(tmp / "host_key")
    client_key_pub = _keygen(tmp / "client_key")
    (tmp / "authorized_keys").write_text(client_key_pub + "\n")
    created_privsep = not Path("/run/sshd").exists()  # sshd refuses to start without its privilege-separation dir
    if created_privsep:
        Path("/run/sshd").mkdir(mode=0o755)
    topology = netns.create(["stack"], host_link=True, state_file=tmp / "netns.json")
    proc = None
    try:
        address = topology.addresses["stack"]
        (tmp / "known_hosts").write_text(f"{address} {host_key_pub}\n")
        (tmp / "sshd_config").write_text("\n".join([
            f"ListenAddress {address}", "Port 22", f"HostKey {tmp / 'host_key'}",
            f"AuthorizedKeysFile {tmp / 'authorized_keys'}", f"PidFile {tmp / 'sshd.pid'}",
            "UsePAM no", "PermitRootLogin prohibit-password", "PasswordAuthentication no",
            "KbdInteractiveAuthentication no", "StrictModes no", "LogLevel VERBOSE",
            "Subsystem sftp internal-sftp", ""]))
        log = tmp / "sshd.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(netns.exec_prefix(topology, "stack") + [
                str(SSHD), "-D", "-e", "-f", str(tmp / "sshd_config")], stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)
        _wait_for_port(address, 22, proc, log)

        def make(**kwargs) -> SshHost:
            options = {"UserKnownHostsFile": str(tmp / "known_hosts"), "GlobalKnownHostsFile": "/dev/null",
                       "StrictHostKeyChecking": "yes", **kwargs.pop("options", {})}
            kwargs.setdefault("identity_file", tmp / "client_key")
            kwargs.setdefault("remote_state_dir", str(tmp / "remote-state"))
            return SshHost(f"root@{address}", options=options, config_file=Path("/dev/null"),
                           connect_timeout_s=5, **kwargs)

        yield topology, proc, make, tmp
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=STEP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        netns.teardown(topology)
        if created_privsep:
            shutil.rmtree("/run/sshd", ignore_errors=True)


def _processes_carrying(token: str) -> list[int]:
    """Live processes on this machine whose environment holds the token (none may survive a stop)."""
    entry = f"{TOKEN_VARIABLE}={token}".encode()
    found = []
    for proc in psutil.process_iter():
        try:
            with open(f"/proc/{proc.pid}/environ", "rb") as handle:
                if entry in handle.read().split(b"\0") and proc.status() != psutil.STATUS_ZOMBIE:
                    found.append(proc.pid)
        except (OSError, psutil.Error):
            continue
    return found


def _only_sshd_left(namespace: str, sshd_pid: int) -> list[int]:
    """The live processes in the namespace besides the listening sshd, after its per-connection children
    (which end a moment after their client) have had a few seconds to go."""
    deadline = time.monotonic() + STEP_TIMEOUT_S
    while True:
        others = []
        for pid in netns.processes_in(namespace):
            try:
                if pid != sshd_pid and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    others.append(pid)
            except psutil.Error:
                continue
        if not others or time.monotonic() > deadline:
            return others
        time.sleep(0.1)


def _stack_copy(tmp: Path) -> Path:
    """The fixture stack with the build outputs and junk a real folder has, none of which may be copied."""
    local = tmp / "local-stack"
    shutil.rmtree(local, ignore_errors=True)
    shutil.copytree(FIXTURE, local)
    for junk in ("bin/tool", "node_modules/x/index.js", "__pycache__/app.cpython-311.pyc", "build/old", "debug.log",
                 ".venv/bin/python", "target/release/app"):
        (local / junk).parent.mkdir(parents=True, exist_ok=True)
        (local / junk).write_text("junk\n")
    for kept in ("sub/keep.txt", "sub/bin/kept"):  # `bin/` is build output at the top only
        (local / kept).parent.mkdir(parents=True, exist_ok=True)
        (local / kept).write_text("kept\n")
    return local


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_check_environment_and_clock(sshd):
    topology, sshd_proc, make, _ = sshd
    host = make()
    host.check()
    env = host.environment(version_commands=[[sys.executable, "--version"], ["no-such-tool-here", "--version"]])
    # The "remote" host is this machine behind a namespace: the same kernel, CPUs and memory.
    assert env["kernel"] == os.uname().release
    assert env["cpu_count"] == os.cpu_count()
    assert env["memory_bytes"] == psutil.virtual_memory().total
    assert env["hostname"] == socket.gethostname()
    assert env["toolchains"] == {f"{sys.executable} --version": f"Python {sys.version.split()[0]}",
                                 "no-such-tool-here --version": "not available"}
    started = time.monotonic()
    overran = host.run(["sleep", "30"], timeout_s=1)  # bounded on the host by `timeout`: exit code 124
    assert overran.returncode == 124 and time.monotonic() - started < 10
    offset_s, uncertainty_s = clock_offset(host)
    # The same clock on both ends: the true offset is 0, within half the shortest round trip of it.
    assert 0 < uncertainty_s < 0.5
    assert abs(offset_s) <= uncertainty_s
    assert _only_sshd_left(topology.namespaces["stack"], sshd_proc.pid) == []  # `sleep 30` was stopped too


def test_a_key_the_host_does_not_accept_is_one_clear_error(sshd, tmp_path):
    _, _, make, _ = sshd
    _keygen(tmp_path / "other_key")
    with pytest.raises(SshError, match="Permission denied") as raised:
        make(identity_file=tmp_path / "other_key").check()
    assert raised.value.destination.startswith("root@") and "key only, BatchMode=yes" in str(raised.value)


def test_an_unknown_host_key_is_refused(sshd, tmp_path):
    _, _, make, _ = sshd
    (tmp_path / "empty_known_hosts").write_text("")
    with pytest.raises(SshError, match="Host key verification failed"):
        make(options={"UserKnownHostsFile": str(tmp_path / "empty_known_hosts")}).check()


@pytest.mark.parametrize("tool", ["rsync", "scp"])
def test_copy_folder_leaves_out_build_outputs(sshd, tool):
    _, _, make, tmp = sshd
    if tool == "rsync" and shutil.which("rsync") is None:
        pytest.skip("no rsync on this machine (Debian's rsync; scripts/setup.sh installs it)")
    local = _stack_copy(tmp)
    remote = tmp / f"remote-{tool}" / "stack"
    host = make(copy_tool=tool)
    assert host.copy_folder(local, str(remote)) == tool
    expected = [".gitignore", "app.py", "build.py", "sub/bin/kept", "sub/keep.txt"]
    assert _files(remote) == expected
    (local / "app.py").write_text("# changed\n")  # a second copy brings the change
    (local / "build.py").unlink()
    host.copy_folder(local, str(remote))
    assert (remote / "app.py").read_text() == "# changed\n"
    assert _files(remote) == [name for name in expected if name != "build.py"]


def test_a_stack_copied_built_started_and_stopped_leaves_nothing(sshd, tmp_path):
    topology, sshd_proc, make, tmp = sshd
    state_file = tmp_path / "run" / "ssh.json"
    host = make(state_file=state_file)
    host.check()
    remote = tmp_path / "remote" / "stack"
    host.copy_folder(_stack_copy(tmp), str(remote))
    env = {"FIXTURE_PYTHON": sys.executable, "FIXTURE_MARKER": MARKER}
    build = host.run('"$FIXTURE_PYTHON" build.py', cwd=str(remote), env=env, timeout_s=30,
                     log_path=tmp_path / "run" / "build.log")
    assert build.returncode == 0, (tmp_path / "run" / "build.log").read_text()
    assert (remote / "build" / "stamp").exists()
    echoed = host.run(["printf", "%s", MARKER], timeout_s=10)  # an argv arrives word for word too
    assert (echoed.returncode, echoed.stdout) == (0, MARKER)

    address, port = topology.addresses["stack"], 18080
    log_path = tmp_path / "run" / "logs" / "stack.log"
    process = host.start('exec "$FIXTURE_PYTHON" app.py', cwd=str(remote), log_path=log_path,
                         env={**env, "PGARENA_HOST": address, "PGARENA_PORT": str(port)})
    try:
        assert [record["id"] for record in read_state(state_file)["processes"]] == [process.id]
        assert (tmp / "remote-state" / f"{process.id}.pid").read_text().strip() == str(process.pgid)
        deadline = time.monotonic() + STEP_TIMEOUT_S
        with httpx.Client(timeout=2.0) as client:
            while True:
                try:
                    answer = client.get(f"http://{address}:{port}/health")
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline and process.alive(), log_path.read_text(errors="replace")
                    time.sleep(0.1)
        assert answer.status_code == 200
        assert answer.json()["marker"] == MARKER and answer.json()["built"] is True
        assert process.alive() and process.exit_code() is None
        worker = psutil.Process(answer.json()["worker_pid"])
        assert os.getpgid(worker.pid) == process.pgid  # the app's child is in the started session
        usage = process.usage()
        assert usage is not None and usage.processes >= 3  # the wrapper shell, the app, its worker
        assert usage.cpu_seconds > 0 and usage.rss_bytes > 5_000_000
    finally:
        process.stop(grace_s=2.0)
    assert not process.alive()
    assert _processes_carrying(process.id) == []
    assert not worker.is_running() or worker.status() == psutil.STATUS_ZOMBIE
    assert _only_sshd_left(topology.namespaces["stack"], sshd_proc.pid) == []
    assert not state_file.exists()  # its last record went with the stop
    assert not (tmp / "remote-state").exists()  # pid, exit and log files removed, then the folder
    assert f"listening on {address}:{port}" in log_path.read_text()
    process.stop()  # idempotent


def test_a_command_that_ends_by_itself_reports_its_exit_code(sshd, tmp_path):
    _, _, make, tmp = sshd
    host = make(state_file=tmp_path / "ssh.json")
    process = host.start("echo about to fail; exit 7", cwd="/", log_path=tmp_path / "failing.log")
    deadline = time.monotonic() + STEP_TIMEOUT_S
    while (code := process.exit_code()) is None:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert code == 7 and not process.alive()
    process.stop()
    assert "about to fail" in (tmp_path / "failing.log").read_text()
    assert not (tmp_path / "ssh.json").exists() and not (tmp / "remote-state").exists()


def test_a_pid_file_naming_someone_elses_process_stops_nothing(sshd, tmp_path):
    """A pid file whose pid now belongs to another process (reused, or written by someone else): stop signals
    only processes carrying the token, so the other process lives on."""
    _, _, make, tmp = sshd
    host = make()
    other = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        process = RemoteProcess(host, "e" * 32, command="gone long ago", cwd="/", log_path=None)
        (tmp / "remote-state").mkdir(exist_ok=True)
        (tmp / "remote-state" / f"{process.id}.pid").write_text(f"{other.pid}\n")
        assert not process.alive()
        process.stop(grace_s=0.5)
        assert other.poll() is None  # not signalled
        assert not (tmp / "remote-state").exists()
    finally:
        other.kill()
        other.wait()


# Starts the fixture stack on the host described by argv[1] (JSON), recording it in argv[2], prints the
# process id, then waits to be killed.
CREATOR = """
import json, sys, time
from pathlib import Path
from pgarena.system.ssh.host import SshHost
host = SshHost.from_dict(json.loads(sys.argv[1]), state_file=Path(sys.argv[2]))
process = host.start('exec "$FIXTURE_PYTHON" app.py', cwd=sys.argv[3], log_path=Path(sys.argv[4]),
                     env={"FIXTURE_PYTHON": sys.executable, "PGARENA_HOST": sys.argv[5], "PGARENA_PORT": "18081"})
print(process.id, flush=True)
time.sleep(60)
"""


def test_a_killed_runs_remote_stack_is_stopped_by_the_reaper(sshd, tmp_path):
    topology, sshd_proc, make, tmp = sshd
    host = make()
    remote = tmp_path / "remote" / "stack"
    host.copy_folder(FIXTURE, str(remote))
    state_file, log_path = tmp_path / "run" / "ssh.json", tmp_path / "run" / "stack.log"
    creator = subprocess.Popen(
        [sys.executable, "-c", CREATOR, json.dumps(host.as_dict()), str(state_file), str(remote),
         str(log_path), topology.addresses["stack"]],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(PROJECT_DIR / "src")})
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(creator.stdout, selectors.EVENT_READ)
            assert selector.select(STEP_TIMEOUT_S * 2), "the creator printed nothing"
        process_id = creator.stdout.readline().strip()
        assert len(process_id) == 32, creator.communicate(timeout=STEP_TIMEOUT_S)
        deadline = time.monotonic() + STEP_TIMEOUT_S
        while len(_processes_carrying(process_id)) < 3:  # the wrapper, the app and its worker
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        creator.send_signal(signal.SIGKILL)
        creator.wait(timeout=STEP_TIMEOUT_S)
    assert len(_processes_carrying(process_id)) == 3  # pgarena's death did not reach the remote stack
    lines = reap_state_file(state_file, grace_s=2.0)
    assert lines == [f"{host.destination}: stopped 3 process(es) of 'exec \"$FIXTURE_PYTHON\" app.py'"]
    assert _processes_carrying(process_id) == []
    assert _only_sshd_left(topology.namespaces["stack"], sshd_proc.pid) == []
    assert not state_file.exists() and not (tmp / "remote-state").exists()
    assert "fetched by the reaper" in log_path.read_text()
    assert reap_state_file(state_file) == []


def _write_topology(path: Path, topology, keys: Path, name: str, workdir: Path, *, generators: str, stack: str) -> None:
    """A topology file: this machine (`here`, on the host link's address) with PostgreSQL, and the sshd's
    namespace as the SSH host `name`."""
    path.write_text(f"""
[hosts.here]
kind = "local"
address = "{topology.host_address}"

[hosts.{name}]
kind = "ssh"
destination = "root@{topology.addresses['stack']}"
identity_file = "{keys / 'client_key'}"
workdir = "{workdir}"
options = {{ UserKnownHostsFile = "{keys / 'known_hosts'}", GlobalKnownHostsFile = "/dev/null", StrictHostKeyChecking = "yes" }}

[roles]
generators = {generators}
stack = "{stack}"
database = "here"
""")


@pytest.mark.postgres
@needs_postgres
def test_a_run_with_its_stack_on_an_ssh_host(sshd, tmp_path):
    """--topology with the stack on the SSH host: copied, built, started there, verified and loaded from here,
    PostgreSQL here on the host link's address; the stack's CPU and memory not measured; nothing left."""
    require_load_path("oha")
    topology, _, _, keys = sshd
    stacks = tmp_path / "stacks"
    shutil.copytree(FIXTURE_STACKS / "fixture-good", stacks / "fixture-good")
    toml = stacks / "fixture-good" / "stack.toml"  # the "remote" host shares this filesystem: this Python has psycopg
    toml.write_text(toml.read_text().replace(  # FIXTURE_POOL=1: a fixed pool, connections long-lived enough to count
        'exec "$FIXTURE_PYTHON" server.py', f"FIXTURE_POOL=1 exec {sys.executable} server.py"))
    _write_topology(tmp_path / "topology.toml", topology, keys, "app", tmp_path / "remote",
                    generators='["here"]', stack="app")
    config = build_config(project_dir=tmp_path, overrides={
        "stacks_dir": stacks, "stacks": ["fixture-good"], "workloads": ["users"], "users_limits": [5], "vus": [2],
        "repetitions": 2, "warmup_s": 1.0, "duration_s": 1.5, "cold_start_requests": 1, "ceiling_s": 0,
        "headroom": False, "warmup_cap_s": 1, "results_dir": tmp_path, "run_id": "remote",
        "topology": str(tmp_path / "topology.toml")})
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="test", log=lambda _: None)
    results = load(run_dir)
    roles = results.topology.roles
    assert roles["stack"].kind == "ssh" and roles["stack"].address == topology.addresses["stack"]
    assert roles["stack"].environment and roles["stack"].environment["kernel"]  # read over SSH
    assert roles["database"].kind == "local" and results.database.url.split("@")[1].startswith(topology.host_address)
    stack = results.stack("fixture-good")
    assert stack.status == "ok", stack.reason
    assert (tmp_path / "remote" / "fixture-good" / "server.py").exists()  # copied to the host's workdir
    (cell,) = results.cells
    assert cell.status == "ok" and cell.summary
    assert all(r.stack_cpu_seconds is None and r.stack_rss_peak_bytes is None for r in cell.repetitions)
    assert stack.peak_connections == config.pool_size  # PostgreSQL's side: measured
    assert roles["pgarena"].address == topology.host_address
    assert "not measured" in render_markdown(results)
    assert not (run_dir / "ssh.json").exists() or not json.loads((run_dir / "ssh.json").read_text()).get("processes")
    assert _only_sshd_left(topology.namespaces["stack"], sshd[1].pid) == []


@pytest.mark.postgres
@needs_postgres
def test_a_generator_on_an_ssh_host_splits_the_load_with_one_here(sshd, tmp_path, fixture_env):
    """Two generators, one here and one on the SSH host: k6 copied there, each window's load split with
    execution segments, the host's outputs copied back and merged exactly; its clock offset measured, its
    CPU not; its folder removed at the end."""
    require_load_path("k6")
    topology, _, _, keys = sshd
    workdir = tmp_path / "remote"
    _write_topology(tmp_path / "topology.toml", topology, keys, "far", workdir, generators='["here", "far"]',
                    stack="here")
    config = build_config(project_dir=tmp_path, overrides={
        "stacks_dir": FIXTURE_STACKS, "stacks": ["fixture-good"], "workloads": ["users"], "users_limits": [5],
        "vus": [4], "repetitions": 2, "warmup_s": 1.0, "duration_s": 1.5, "cold_start_requests": 1, "ceiling_s": 0,
        "headroom": False, "warmup_cap_s": 1, "results_dir": tmp_path, "run_id": "farload",
        "topology": str(tmp_path / "topology.toml")})
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="test", log=lambda _: None)
    (cell,) = load(run_dir).cells
    assert cell.status == "ok", (cell.error, cell.flags)
    for rep in cell.repetitions:
        here, far = rep.generators.places
        assert (here.name, far.name) == ("here", "far") and far.host == f"ssh root@{topology.addresses['stack']}"
        assert here.requests > 0 and far.requests > 0 and rep.requests == here.requests + far.requests
        assert far.cpu_seconds is None and here.cpu_seconds is not None  # the host's k6 CPU is not measured
        assert far.clock_offset_seconds is not None and abs(far.clock_offset_seconds) < 0.05  # same kernel clock
        assert (run_dir / far.raw_samples).exists()  # copied back from the host
    assert not list(workdir.glob("generators/*/far"))  # the run's folder on the host is gone
    assert _only_sshd_left(topology.namespaces["stack"], sshd[1].pid) == []
