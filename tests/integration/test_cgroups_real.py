"""cgroup CPU accounting against the real kernel: every hierarchy that works here, compared with rusage."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from pgarena.system import cgroups
from pgarena.system.cgroups import CgroupBackend, probe


def _backends() -> list[pytest.param]:
    try:
        mounts = cgroups.MOUNTS_FILE.read_text()
    except OSError:
        mounts = ""
    params = [pytest.param(b, id=f"v{b.version}-{b.mount.name or 'root'}") for b in cgroups._candidates(mounts)]
    if not params:
        reason = probe()
        params = [pytest.param(None, id="none", marks=pytest.mark.skip(reason=f"no cgroups here: {reason}"))]
    return params


@pytest.fixture(params=_backends())
def backend(request) -> CgroupBackend:
    backend = request.param
    reason = backend.check()
    if reason is not None:
        pytest.skip(f"this hierarchy cannot account CPU here: {reason}")
    return backend


# The child burns 1.0 s of CPU while a grandchild it forks burns 0.5 s; it reaps the grandchild, so the
# child's rusage from wait4 covers both.
BURN = """
import os, time
def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
pid = os.fork()
if pid == 0:
    burn(0.5)
    os._exit(0)
burn(1.0)
os.waitpid(pid, 0)
"""

# The child forks a grandchild; both block on stdin until the test closes it.
WAIT = """
import os, sys
pid = os.fork()
sys.stdin.read()
if pid:
    os.waitpid(pid, 0)
"""


def test_probe_picks_a_working_backend_or_says_why():
    result = probe()
    if isinstance(result, str):
        assert result  # a reason in words, never empty
    else:
        assert result.check() is None


def test_a_burning_tree_is_accounted_like_its_rusage(backend):
    with backend.create("burn") as group:
        join = group.preexec_fn()
        proc = subprocess.Popen([sys.executable, "-c", BURN], preexec_fn=join)  # noqa: PLW1509 — under test
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        assert proc.returncode == 0
        rusage_cpu = usage.ru_utime + usage.ru_stime
        group_cpu = group.cpu_seconds()
        path = group.path
        assert rusage_cpu >= 1.4, "the child did not burn what it should have"
        assert abs(group_cpu - rusage_cpu) <= 0.25 * rusage_cpu, (group_cpu, rusage_cpu)
    assert not path.exists() and group.cleanup_error is None


@pytest.mark.skipif(shutil.which("sleep") is None, reason="no `sleep` executable to idle with")
def test_an_idle_group_reports_almost_nothing(backend):
    with backend.create("idle") as group:
        subprocess.run(["sleep", "0.3"], preexec_fn=group.preexec_fn(), check=True)
        assert group.cpu_seconds() < 0.05
        empty = backend.create("empty")
        with empty:
            time.sleep(0.1)
            assert empty.cpu_seconds() < 0.05


def _cgroup_line(pid: int, backend: CgroupBackend) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        hierarchy, controllers, path = line.split(":", 2)
        if (backend.version == 2 and hierarchy == "0") or (
            backend.version == 1 and "cpuacct" in controllers.split(",")
        ):
            return path
    raise AssertionError(f"no line for {backend.description} in /proc/{pid}/cgroup")


def test_add_tree_and_cleanup_moves_processes_back(backend):
    proc = subprocess.Popen([sys.executable, "-c", WAIT], stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 5
        while not (children := psutil.Process(proc.pid).children()):
            assert time.monotonic() < deadline, "the child did not fork"
            time.sleep(0.01)
        tree = {proc.pid, children[0].pid}
        before = {pid: _cgroup_line(pid, backend) for pid in tree}
        with backend.create("tree") as group:
            assert set(group.add_tree(proc.pid)) == tree
            assert set(group.pids()) == tree
            relative = "/" + str(group.path.relative_to(backend.mount))
            assert all(_cgroup_line(pid, backend) == relative for pid in tree)
            path = group.path
        # still running at exit: moved back where they were, and the group is gone
        assert {pid: _cgroup_line(pid, backend) for pid in tree} == before
        assert not path.exists() and group.cleanup_error is None
    finally:
        proc.communicate(timeout=10)
    assert proc.returncode == 0
