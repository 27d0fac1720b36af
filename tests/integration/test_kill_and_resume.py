"""`kill -9` of a running `pgarena run`: nothing of it is left, and `run --resume` completes (issue 10, item 19)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from pgarena.db.cluster import ManagedCluster
from pgarena.db.postgres import PostgresError, find_bin_dir
from pgarena.results.store import load
from pgarena.system import pidregistry, reaper
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres

pytestmark = [pytest.mark.postgres, needs_postgres]


def _alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    left = []
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                left.append(proc)
        except psutil.NoSuchProcess:
            pass
    return left


def _wait_until_gone(procs: list[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout_s
    while _alive(procs) and time.monotonic() < deadline:
        time.sleep(0.2)
    return _alive(procs)


def _describe(procs: list[psutil.Process]) -> list[str]:
    out = []
    for proc in procs:
        try:
            out.append(f"{proc.pid} {' '.join(proc.cmdline())[:120]}")
        except psutil.Error:
            out.append(str(proc.pid))
    return out


@pytest.mark.parametrize("watchdog_too", [False, True], ids=["pgarena-killed", "pgarena-and-watchdog-killed"])
def test_kill_9_leaves_nothing_behind_and_resume_completes(tmp_path, fixture_env, watchdog_too):
    """pgarena alone: its watchdog stops the run's processes. pgarena and its watchdog together (as
    `kill -9 -1` or the OOM killer might): PostgreSQL, daemonized by pg_ctl, survives, and the resumed
    run finds it through pids.json and postmaster.pid, stops it, and reuses the folder."""
    run_dir = tmp_path / "killed"
    argv = [sys.executable, "-m", "pgarena", "run", "--stacks-dir", str(FIXTURE_STACKS), "--stacks", "fixture-good",
            "--workloads", "static", "--vus", "1,2,3", "--duration", "1", "--warmup", "1", "--repetitions", "1",
            "--warmup-cap", "1", "--engine", "k6", "--no-headroom", "--results-dir", str(tmp_path),
            "--run-id", "killed"]
    proc = subprocess.Popen(argv, cwd=PROJECT_DIR, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:  # a cell finished and the stack still runs: the next cell is running
        state = pidregistry.read_state(run_dir) or {}
        results_path = run_dir / "results.json"
        if (state.get("processes") and results_path.exists()
                and json.loads(results_path.read_text()).get("cells")):
            break
        assert proc.poll() is None, proc.stdout.read()
        time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("no cell finished within 180 s")
    data_dir = Path(state["postgres"][0]["data_dir"])  # <run>/postgres/data, or a private folder
    postmaster = reaper.postmaster_of(data_dir)
    assert postmaster is not None, "the managed cluster is recorded in pids.json and running"
    watchdog = psutil.Process(state["watchdog"]["pid"])
    run_processes = [*psutil.Process(proc.pid).children(recursive=True), postmaster,
                     *postmaster.children(recursive=True)]
    run_processes = [p for p in run_processes if p.pid != watchdog.pid]
    assert len(run_processes) >= 3  # the stack, PostgreSQL and its backends (and k6, mid-cell)

    if watchdog_too:
        watchdog.send_signal(signal.SIGKILL)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    if watchdog_too:
        time.sleep(2)
        left = _alive(run_processes)
        assert postmaster in left, "without the watchdog, the daemonized PostgreSQL survives until the next run"
        assert load(run_dir).status == "running"
    else:
        left = _wait_until_gone(run_processes, timeout_s=60)
        assert not left, _describe(left)

    done = subprocess.run([sys.executable, "-m", "pgarena", "run", "--resume", str(run_dir)], cwd=PROJECT_DIR,
                          capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    if watchdog_too:
        assert f"stopped PostgreSQL (pid {postmaster.pid})" in done.stdout
    left = _alive(run_processes)
    assert not left, _describe(left)
    resumed = load(run_dir)
    assert resumed.status == "complete" and len(resumed.cells) == 3
    assert all(c.status == "ok" for c in resumed.cells)
    assert pidregistry.read_state(run_dir)["finished"] is True
    assert not data_dir.exists(), "the killed run's throwaway cluster is removed once its server is stopped"


@pytest.fixture
def open_dir():
    """A folder the postgres OS user can enter (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="pgarena-test-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_data_directory_a_live_server_uses_is_never_deleted(open_dir):
    """A second cluster in the same folder (a resume while the old server still runs) refuses to start."""
    tmp_path = open_dir
    bin_dir = find_bin_dir()
    first = ManagedCluster(tmp_path, bin_dir=bin_dir)
    first.start()
    assert first.home == tmp_path / "postgres"
    try:
        second = ManagedCluster(tmp_path, bin_dir=bin_dir)
        with pytest.raises(PostgresError, match="in use by a running PostgreSQL"):
            second.start()
        assert (first.data_dir / "PG_VERSION").exists()
        assert reaper.postmaster_of(first.data_dir) is not None
    finally:
        first.stop()
    assert not first.home.exists()
    # a stale folder without a live server (a killed run's, server since stopped) is replaced
    (tmp_path / "postgres" / "data").mkdir(parents=True)
    (tmp_path / "postgres" / "data" / "postmaster.pid").write_text(f"{os.getpid()}\n/x\n1\n")
    again = ManagedCluster(tmp_path, bin_dir=bin_dir)
    again.start()
    again.stop()
