"""cgroup CPU accounting on fake hierarchies: counter parsing, group names, mount tables, probing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pgarena.system import cgroups
from pgarena.system.cgroups import CgroupBackend, probe

CPU_STAT = """\
usage_usec 2500000
user_usec 2000000
system_usec 500000
nr_periods 0
nr_throttled 0
throttled_usec 0
"""

HYBRID_MOUNTS = r"""
sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0
tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0
cgroup /sys/fs/cgroup/cpuacct cgroup rw,relatime,cpuacct 0 0
cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
"""


def _fake_group(tmp_path: Path, version: int, usage_text: str):
    group = CgroupBackend(version, tmp_path).create("stack")
    usage_file = "cpuacct.usage" if version == 1 else "cpu.stat"
    (group.path / usage_file).write_text(usage_text)
    return group


def test_cpuacct_usage_is_nanoseconds(tmp_path):
    assert _fake_group(tmp_path, 1, "1500000000\n").cpu_seconds() == pytest.approx(1.5)


def test_cpu_stat_reads_usage_usec_not_user_usec(tmp_path):
    text = "user_usec 7000000\n" + CPU_STAT  # an out-of-order line must not be taken for usage
    assert _fake_group(tmp_path, 2, text).cpu_seconds() == pytest.approx(2.5)


def test_cpu_stat_without_usage_usec_says_so(tmp_path):
    group = _fake_group(tmp_path, 2, "nr_periods 0\nnr_throttled 0\n")
    with pytest.raises(ValueError, match="usage_usec"):
        group.cpu_seconds()


def test_groups_live_under_the_parent_with_safe_distinct_names(tmp_path):
    backend = CgroupBackend(2, tmp_path)
    hostile = backend.create("../../etc/passwd")
    first, second = backend.create("stack"), backend.create("stack")
    for group in (hostile, first, second):
        assert group.path.parent == tmp_path / "pgarena" and group.path.is_dir()
        assert "/" not in group.path.name and "." not in group.path.name
    assert first.path != second.path
    assert first.path.name.startswith("stack-")


def test_pids_are_deduplicated_and_sorted(tmp_path):
    group = CgroupBackend(1, tmp_path).create("stack")
    (group.path / "cgroup.procs").write_text("4242\n17\n4242\n")  # v1 may list a process twice
    assert group.pids() == [17, 4242]


def test_preexec_writes_zero_to_cgroup_procs_then_chains(tmp_path):
    group = CgroupBackend(2, tmp_path).create("stack")
    (group.path / "cgroup.procs").write_text("")
    chained = []
    group.preexec_fn(then=lambda: chained.append(True))()  # called here, not in a child
    assert (group.path / "cgroup.procs").read_text() == "0"
    assert chained == [True]


def test_cleanup_never_raises_and_reports_a_leftover(tmp_path):
    group = CgroupBackend(2, tmp_path).create("stack")
    (group.path / "cpu.stat").write_text(CPU_STAT)  # a plain directory with a file cannot be rmdir'ed
    with group:
        pass
    assert group.path.exists() and "cannot remove" in (group.cleanup_error or "")
    group.close()  # idempotent


def test_cleanup_removes_an_empty_group(tmp_path):
    with CgroupBackend(1, tmp_path).create("stack") as group:
        assert group.path.is_dir()
    assert not group.path.exists() and group.cleanup_error is None
    assert (tmp_path / "pgarena").is_dir()  # the shared parent stays


@pytest.mark.parametrize(
    ("mounts", "expected"),
    [
        pytest.param(HYBRID_MOUNTS, [(1, "/sys/fs/cgroup/cpuacct"), (2, "/sys/fs/cgroup/unified")], id="hybrid"),
        pytest.param("cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n", [(2, "/sys/fs/cgroup")], id="pure-v2"),
        pytest.param(
            "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n"
            "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n",
            [(2, "/sys/fs/cgroup/unified"), (1, "/sys/fs/cgroup/cpu,cpuacct")],
            id="co-mounted-cpu-last",
        ),
        pytest.param(
            "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\ncgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n"
            "cgroup /sys/fs/cgroup/cpuacct cgroup rw,cpuacct 0 0\n",
            [(2, "/sys/fs/cgroup"), (1, "/sys/fs/cgroup/cpuacct"), (2, "/sys/fs/cgroup/unified")],
            id="pure-v2-first",
        ),
        pytest.param(r"cgroup2 /mnt/my\040cg cgroup2 rw 0 0", [(2, "/mnt/my cg")], id="escaped-space"),
        pytest.param("cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n", [], id="no-cpuacct"),
    ],
)
def test_probe_order(mounts, expected):
    assert [(b.version, str(b.mount)) for b in cgroups._candidates(mounts)] == expected


def test_probe_without_cgroups_says_why(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text("proc /proc proc rw 0 0\ncgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n")
    reason = probe(mounts)
    assert isinstance(reason, str) and "no cgroup filesystem" in reason


def test_probe_proves_a_mount_works_instead_of_trusting_it(tmp_path):
    """A 'cgroup2' mount that is really a plain directory: a group can be made but no process moved in."""
    fake = tmp_path / "fake cg"
    fake.mkdir()
    mounts = tmp_path / "mounts"
    mounts.write_text(f"cgroup2 {str(fake).replace(' ', chr(92) + '040')} cgroup2 rw 0 0\n")
    reason = probe(mounts)
    assert isinstance(reason, str) and "cannot move a process" in reason and str(fake) in reason
    assert list((fake / "pgarena").iterdir()) == []  # the test group was removed


def test_probe_reports_a_mount_point_that_is_no_directory(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text(f"cgroup {tmp_path}/gone cgroup rw,cpuacct 0 0\n")
    (tmp_path / "gone").touch()  # a file where the hierarchy should be: mkdir under it fails
    reason = probe(mounts)
    assert isinstance(reason, str) and "cannot create a group" in reason


def test_sweep_removes_empty_groups_of_dead_processes_only(tmp_path, monkeypatch):
    backend = CgroupBackend(1, tmp_path)
    parent = tmp_path / backend.parent
    dead, alive, busy, foreign = (parent / "stack-999999-1", parent / f"stack-{os.getpid()}-1",
                                  parent / "postgres-999998-2", parent / "not-ours")
    for path in (dead, alive, busy, foreign):
        path.mkdir(parents=True)
    (busy / "cgroup.procs").write_text("123\n")  # a real group with processes cannot be removed
    monkeypatch.setattr("pgarena.system.cgroups.psutil.pid_exists", lambda pid: pid == os.getpid())
    assert backend.sweep_stale() == [dead]
    assert not dead.exists() and alive.exists() and busy.exists() and foreign.exists()
