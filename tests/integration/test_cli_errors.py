"""A user's mistake or a full/read-only disk: one line on stderr, exit code 2, no traceback (issue 10, item 20).

Every test runs the real CLI as a subprocess. Disk full and read-only folders are real tmpfs mounts
(pgarena's tests run as root); where mounting is not allowed, those tests skip and say so.
"""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from pgarena.results.store import load, save
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres
from tests.fixtures.report_run import sample_results


def pgarena(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pgarena", *args], cwd=PROJECT_DIR, capture_output=True,
                          text=True, timeout=timeout)


def assert_one_line_error(done: subprocess.CompletedProcess, *needles: str) -> str:
    """Exit 2, exactly one non-empty line on stderr, no traceback, and every needle in that line."""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert len(lines) == 1, done.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@contextmanager
def tmpfs(path: Path, options: str):
    """A tmpfs mounted at `path` (skips the test if this machine does not allow mounting)."""
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root outside a locked-down container): "
                    f"{mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _fill(folder: Path) -> None:
    """Fill the file system of `folder` to the last byte."""
    with open(folder / "filler", "wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 4096)
        except OSError:
            pass


@pytest.mark.parametrize(("content", "needle"), [
    ("[1, 2, 3]", "not a pgarena results document"),
    ('{"name": "something else"}', "not a pgarena results document"),
    ('{"schema_version": 2, "run_id": "x"}', "not a valid pgarena results document"),
    ("", "not valid JSON"),
], ids=["a-list", "another-document", "wrong-shape", "empty"])
def test_report_on_a_json_file_of_the_wrong_shape(tmp_path, content, needle):
    path = tmp_path / "results.json"
    path.write_text(content)
    assert_one_line_error(pgarena("report", str(path)), str(path), needle)


def test_report_on_a_truncated_results_file(tmp_path):
    save(sample_results(), tmp_path)
    text = (tmp_path / "results.json").read_text()
    (tmp_path / "results.json").write_text(text[: len(text) // 2])
    assert_one_line_error(pgarena("report", str(tmp_path)), "not valid JSON (truncated?)")


def test_report_on_a_folder_without_results(tmp_path):
    assert_one_line_error(pgarena("report", str(tmp_path)), "no results.json in this folder")


@pytest.mark.parametrize("run_id", ["../escaped", "/tmp/absolute", "a/b", "..", ".hidden"])
def test_run_id_cannot_leave_the_results_folder(tmp_path, run_id):
    results_dir = tmp_path / "results"
    done = pgarena("verify", "--stacks-dir", str(FIXTURE_STACKS), "--stacks", "fixture-good",
                   "--results-dir", str(results_dir), "--run-id", run_id)
    assert_one_line_error(done, "--run-id", "not a plain folder name")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize(("args", "needles"), [
    (["--repetitions", "5", "--max-repetitions", "3"], ["--max-repetitions (3) is below --repetitions (5)"]),
    (["--rows", "0"], ["--rows:"]),
    (["--duration", "0"], ["--duration:"]),
    (["--limits", "0"], ["--limits:"]),
    (["--rates", "fast"], ["--rates:"]),
    (["--stacks", "no-such-stack"], ["--stacks: unknown stack 'no-such-stack'"]),
])
def test_errors_name_the_real_options(tmp_path, args, needles):
    done = pgarena("run", "--stacks-dir", str(FIXTURE_STACKS), "--results-dir", str(tmp_path), *args)
    line = assert_one_line_error(done, *needles)
    for field in ("max_repetitions", "perf_test_rows", "duration_s", "users_limits", "arrival_rates"):
        assert field not in line


def test_bad_paths(tmp_path):
    (tmp_path / "a-file").write_text("")
    assert_one_line_error(pgarena("verify", "--stacks-dir", str(FIXTURE_STACKS), "--stacks", "fixture-good",
                                  "--results-dir", str(tmp_path / "a-file")), "--results-dir", "is a file")
    assert_one_line_error(pgarena("verify", "--stacks-dir", str(tmp_path / "nowhere"), "--results-dir",
                                  str(tmp_path)), "no stacks selected", "--stacks-dir")
    assert_one_line_error(pgarena("run", "--resume", str(tmp_path / "nowhere")), "--resume", "no such run folder")
    assert_one_line_error(pgarena("run", "--resume", str(tmp_path)), "no results.json in this folder")


def test_a_read_only_results_folder(tmp_path):
    with tmpfs(tmp_path / "ro", "ro,size=64k") as folder:
        done = pgarena("verify", "--stacks-dir", str(FIXTURE_STACKS), "--stacks", "fixture-good",
                       "--results-dir", str(folder / "results"))
        assert_one_line_error(done, "--results-dir", "Read-only file system")


def test_report_on_a_full_disk_keeps_the_previous_report_whole(tmp_path):
    with tmpfs(tmp_path / "full", "size=256k") as folder:
        save(sample_results(), folder)
        (folder / "report.md").write_text("previous report\n")
        _fill(folder)
        done = pgarena("report", str(folder))
        assert_one_line_error(done, "cannot write the reports", "No space left on device")
        assert (folder / "report.md").read_text() == "previous report\n", "written atomically or not at all"
        assert sorted(p.name for p in folder.iterdir()) == ["filler", "report.md", "results.json"]


@pytest.mark.postgres
@needs_postgres
def test_a_disk_that_fills_during_a_run_fails_it_with_the_reason_stored(tmp_path, fixture_env):
    """1 MB for the run folder: results.json and the logs fit, the HTML report does not. (mode=0700: the
    postgres user cannot enter it, so the managed cluster lives in a private folder elsewhere.)"""
    with tmpfs(tmp_path / "small", "size=1m,mode=0700") as folder:
        done = pgarena("verify", "--stacks-dir", str(FIXTURE_STACKS), "--stacks", "fixture-good",
                       "--workloads", "static", "--results-dir", str(folder), "--run-id", "full")
        assert_one_line_error(done, "No space left on device", "report.html")
        results = load(folder / "full")
        assert results.status == "failed" and "No space left on device" in results.error
        assert json.loads((folder / "full" / "pids.json").read_text())["finished"] is True
