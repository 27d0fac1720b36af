"""A killed run's processes are found and stopped, and nothing else is (pgarena.system.reaper, process.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from pgarena.system import pidregistry, reaper
from pgarena.system.process import ServerProcess, _prctl

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and uses prctl (Linux)")

SLEEP = [sys.executable, "-c", "import time; time.sleep(120)"]


def _token() -> str:
    """A run token of this test's own: the reaper stops every process carrying its token, so two tests running at
    once under pytest-xdist must never share one (a shared "t" * 32 let one test's reap stop the other's carriers)."""
    return uuid.uuid4().hex


def _gone(proc: subprocess.Popen | psutil.Process, timeout_s: float = 20.0) -> bool:
    """True once the process has exited (polled against a deadline)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if isinstance(proc, subprocess.Popen):
            if proc.poll() is not None:
                return True
        elif not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def spawned():
    """Start helper processes; whatever is left is killed after the test."""
    procs: list[subprocess.Popen] = []

    def spawn(argv=SLEEP, **kwargs) -> subprocess.Popen:
        proc = subprocess.Popen(argv, **kwargs)
        procs.append(proc)
        return proc

    yield spawn
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _state(**extra) -> dict:
    return {"owner": {"pid": 999_999_999, "start_time": 1.0, "role": "pgarena"}, "token": None, "finished": False,
            "machine": pidregistry.machine_identity(), "watchdog": None, "processes": [], "postgres": [], **extra}


def _orphaned_group(spawned, env: dict) -> tuple[int, psutil.Process]:
    """A process group whose leader (a shell) has exited while its child sleeps on: (group id, the child)."""
    leader = spawned(["/bin/sh", "-c", f"'{sys.executable}' -c 'import time; time.sleep(120)' &"], env=env,
                     process_group=0)
    leader.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        members = [p for p in psutil.process_iter() if _pgid(p.pid) == leader.pid]
        if members:
            return leader.pid, members[0]
        time.sleep(0.05)
    raise AssertionError("the shell's child did not start")


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def test_a_group_whose_leader_is_gone_is_not_matched_by_its_id_alone(spawned):
    """Issue 22 item 16: the recorded leader's pid is gone and a later, unrelated group has that id (here: a
    group started after the recorded start time, without the run's token): nothing of it is stopped."""
    clean = {k: v for k, v in os.environ.items() if k != pidregistry.TOKEN_VARIABLE}
    pgid, member = _orphaned_group(spawned, clean)
    state = _state(token=_token(), processes=[{"pid": pgid, "start_time": member.create_time() - 60, "role": "stack"}])
    assert reaper.reap(state, grace_s=1) == []
    assert member.is_running() and member.status() != psutil.STATUS_ZOMBIE
    member.kill()


def test_a_group_whose_leader_is_gone_is_stopped_when_a_member_carries_the_token(spawned):
    token = _token()
    pgid, member = _orphaned_group(spawned, {**os.environ, pidregistry.TOKEN_VARIABLE: token})
    state = _state(token=token, processes=[{"pid": pgid, "start_time": member.create_time() - 1, "role": "stack"}])
    lines = reaper.reap(state, grace_s=2)
    assert _gone(member) and lines and lines[0].startswith("stopped 1 process(es)")


def test_a_run_folder_from_another_machine_or_boot_is_left_alone(tmp_path, spawned):
    """Issue 22 item 16: a copied run folder's pids and token name nothing of its own here."""
    token = _token()
    carrier = spawned(env={**os.environ, pidregistry.TOKEN_VARIABLE: token})
    for name, machine in (("copied", {"boot_id": "0" * 32, "hostname": "elsewhere"}), ("older", None)):
        state = _state(token=token)
        state.pop("machine") if machine is None else state.update(machine=machine)
        (tmp_path / name).mkdir()
        (tmp_path / name / pidregistry.PIDS_FILE).write_text(json.dumps(state))
    assert reaper.reap_abandoned(tmp_path, grace_s=1) == []
    assert reaper.reap_run(tmp_path / "copied", grace_s=1) == [
        "copied: nothing stopped: it ran on elsewhere (boot 00000000000000000000000000000000), not on this "
        "machine in this boot"]
    assert carrier.poll() is None
    assert pidregistry.read_state(tmp_path / "copied")["finished"] is False  # not even marked


def test_the_registry_records_the_machine_and_boot(tmp_path):
    with pidregistry.PidRegistry(tmp_path, watchdog=False):
        recorded = pidregistry.read_state(tmp_path)["machine"]
    assert recorded == pidregistry.machine_identity() and recorded["hostname"]
    if pidregistry.BOOT_ID_PATH.exists():
        assert len(recorded["boot_id"]) >= 32


def test_a_recorded_pid_with_another_start_time_is_not_the_same_process(spawned):
    proc = spawned()
    started = psutil.Process(proc.pid).create_time()
    assert pidregistry.is_alive({"pid": proc.pid, "start_time": started})
    assert not pidregistry.is_alive({"pid": proc.pid, "start_time": started - 5})  # the pid was reused
    state = _state(processes=[{"pid": proc.pid, "start_time": started - 5, "role": "stack"}])
    assert reaper.reap(state, grace_s=1) == []
    assert proc.poll() is None, "a process that merely reuses a recorded pid must not be killed"


def test_reap_stops_token_carriers_and_recorded_groups_but_nothing_else(spawned):
    token = _token()
    carrier = spawned(env={**os.environ, pidregistry.TOKEN_VARIABLE: token})
    other_token = spawned(env={**os.environ, pidregistry.TOKEN_VARIABLE: _token()})
    # a shell's child in the shell's process group: no token (it was cleared), found by its group
    leader = spawned(["/bin/sh", "-c", f"'{sys.executable}' -c 'import time; time.sleep(120)' & wait"],
                     env={k: v for k, v in os.environ.items() if k != pidregistry.TOKEN_VARIABLE}, process_group=0)
    deadline = time.monotonic() + 20
    while not psutil.Process(leader.pid).children() and time.monotonic() < deadline:
        time.sleep(0.05)
    grandchild = psutil.Process(leader.pid).children()[0]
    bystander = spawned()
    state = _state(token=token, processes=[pidregistry.record_of(leader.pid, "stack")])
    lines = reaper.reap(state, grace_s=2)
    assert _gone(carrier) and _gone(leader) and _gone(grandchild)
    assert other_token.poll() is None and bystander.poll() is None
    assert len(lines) == 1 and lines[0].startswith("stopped 3 process(es)")


def test_a_run_whose_pgarena_still_runs_is_refused_and_a_dead_ones_leftovers_are_stopped(tmp_path, spawned):
    owner, token = spawned(), _token()
    left = spawned(env={**os.environ, pidregistry.TOKEN_VARIABLE: token})
    state = _state(owner=pidregistry.record_of(owner.pid, "pgarena"), token=token)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / pidregistry.PIDS_FILE).write_text(json.dumps(state))
    with pytest.raises(reaper.RunInUse, match=f"still being run by pgarena \\(pid {owner.pid}\\)"):
        reaper.reap_run(tmp_path / "run", grace_s=1)
    assert reaper.reap_abandoned(tmp_path, grace_s=1) == [] and left.poll() is None
    owner.kill()
    owner.wait()
    lines = reaper.reap_abandoned(tmp_path, grace_s=1)
    assert lines and lines[0].startswith("run: stopped 1 process(es)") and _gone(left)
    assert pidregistry.read_state(tmp_path / "run")["finished"] is True
    assert reaper.reap_abandoned(tmp_path, grace_s=1) == []  # reaped once


def test_postmaster_pid_names_a_server_only_if_its_start_time_matches(tmp_path, spawned):
    proc = spawned()
    started = psutil.Process(proc.pid).create_time()
    data = tmp_path / "data"
    data.mkdir()
    (data / "postmaster.pid").write_text(f"{proc.pid}\n{data}\n{int(started)}\n5432\n")
    assert reaper.postmaster_of(data).pid == proc.pid
    (data / "postmaster.pid").write_text(f"{proc.pid}\n{data}\n{int(started) - 3600}\n5432\n")
    assert reaper.postmaster_of(data) is None
    assert reaper.postmaster_of(tmp_path / "nothing") is None


def test_the_registry_records_tracks_and_its_watchdog_reaps_on_close(tmp_path, spawned, monkeypatch):
    monkeypatch.delenv(pidregistry.TOKEN_VARIABLE, raising=False)
    with pidregistry.PidRegistry(tmp_path) as registry:
        assert os.environ[pidregistry.TOKEN_VARIABLE] == registry.token
        state = pidregistry.read_state(tmp_path)
        assert state["owner"]["pid"] == os.getpid() and state["watchdog"]["pid"] and not state["finished"]
        watchdog = psutil.Process(state["watchdog"]["pid"])
        leftover = spawned()  # inherits the token from the environment, like every child of a run
        stack = spawned(process_group=0)
        registry.track(stack.pid, "stack")
        assert [p["pid"] for p in pidregistry.read_state(tmp_path)["processes"]] == [stack.pid]
        registry.untrack(stack.pid)
        assert pidregistry.read_state(tmp_path)["processes"] == []
    assert pidregistry.TOKEN_VARIABLE not in os.environ
    assert pidregistry.read_state(tmp_path)["finished"] is True
    assert _gone(leftover), "the watchdog stops what the run left behind"
    assert _gone(watchdog) and _gone(stack)


def test_the_watchdog_reaps_when_pgarena_is_killed(tmp_path):
    script = (f"import sys, time; sys.path[:0] = {sys.path!r}\n"
              "from pathlib import Path; from pgarena.system.pidregistry import PidRegistry; import subprocess\n"
              f"r = PidRegistry(Path({str(tmp_path)!r})).__enter__()\n"
              "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'], start_new_session=True)\n"
              "print(p.pid, flush=True); time.sleep(120)\n")
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        orphan = psutil.Process(int(owner.stdout.readline()))
        watchdog = psutil.Process(pidregistry.read_state(tmp_path)["watchdog"]["pid"])
        owner.kill()
        owner.wait()
        assert _gone(orphan), "a process in a session of its own is still found by the token"
        assert _gone(watchdog)
        assert "watchdog: stopped 1 process(es)" in (tmp_path / "logs" / "watchdog.log").read_text()
    finally:
        owner.kill()
        owner.wait()


@pytest.mark.skipif(_prctl() is None, reason="no prctl in this libc")
def test_a_server_dies_with_pgarena_even_on_sigkill(tmp_path):
    """The parent-death signal: ServerProcess's child gets SIGTERM when the process that started it dies."""
    script = (f"import sys, time; sys.path[:0] = {sys.path!r}\n"
              "from pathlib import Path; from pgarena.system.process import ServerProcess\n"
              f"s = ServerProcess('exec sleep 120', cwd=Path('.'), env={{'PATH': '/usr/bin:/bin'}}, "
              f"log_path=Path({str(tmp_path / 'run.log')!r}))\n"
              "print(s.pid, flush=True); time.sleep(120)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        server = psutil.Process(int(parent.stdout.readline()))
        assert server.is_running()
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert _gone(server)
    finally:
        parent.kill()
        parent.wait()


def test_a_tracked_server_is_recorded_while_it_runs(tmp_path):
    class Tracker:
        def __init__(self):
            self.events = []

        def track(self, pid, role):
            self.events.append(("track", pid, role))

        def untrack(self, pid):
            self.events.append(("untrack", pid))

    tracker = Tracker()
    with ServerProcess("exec sleep 120", cwd=Path("."), env={"PATH": "/usr/bin:/bin"},
                       log_path=tmp_path / "run.log", tracker=tracker) as server:
        pid = server.pid
    assert tracker.events == [("track", pid, "stack"), ("untrack", pid)]
