"""Under CI=true a skipped test fails the session unless it is on the allow-list (tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ALLOWED_SKIPS, PROJECT_DIR, unexpected_skips

PROBE = '''
import pytest

def test_runs():
    pass

def test_skips():
    pytest.skip("no widget on this machine")
'''


def _pytest(tmp_path, ci: str | None) -> subprocess.CompletedProcess:
    """The probe tests under this project's conftest (copied beside them), with CI set or not."""
    (tmp_path / "conftest.py").write_text((PROJECT_DIR / "tests" / "conftest.py").read_text())
    (tmp_path / "test_probe.py").write_text(PROBE)
    env = {k: v for k, v in __import__("os").environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    env["PYTHONPATH"] = str(PROJECT_DIR)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)


def test_a_skip_fails_the_session_under_ci_and_says_which(tmp_path):
    done = _pytest(tmp_path, "true")
    assert done.returncode == 1, done.stdout
    assert "SKIPPED UNDER CI test_probe.py::test_skips: no widget on this machine" in done.stdout


def test_outside_ci_a_skip_is_only_reported(tmp_path):
    assert _pytest(tmp_path, None).returncode == 0
    assert _pytest(tmp_path, "false").returncode == 0


def test_allow_listed_skips_are_accepted_and_each_has_a_reason():
    skipped = [("tests/e2e/test_every_stack_verifies.py::test_stack_builds_and_verifies[postgrest]", "no binary"),
               ("tests/e2e/test_every_stack_verifies.py::test_stack_builds_and_verifies[go-nethttp-pgx]", "x")]
    assert unexpected_skips(skipped, ALLOWED_SKIPS) == [skipped[1]]
    assert all(len(reason) > 20 for reason in ALLOWED_SKIPS.values())
