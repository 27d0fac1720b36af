"""The build-inputs digest a resumed run compares before it re-checks a stack briefly (stack/inputs.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pgarena.config.stackdef import Stack, load_stacks
from pgarena.stack.inputs import build_inputs_sha256
from tests.conftest import FIXTURE_STACKS

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def load_stack(folder: Path) -> Stack:
    (stack,), _ = load_stacks(folder.parent)
    return stack


def _copy(tmp_path: Path, *, git: bool) -> Path:
    folder = tmp_path / "stacks" / "fixture-good"
    shutil.copytree(FIXTURE_STACKS / "fixture-good", folder)
    (folder.parent / ".gitignore").write_text("bin/\n")
    if git:
        subprocess.run(["git", "init", "-q", str(folder.parent)], check=True)
    return folder


def test_the_digest_follows_sources_and_definition_not_build_outputs(tmp_path):
    folder = _copy(tmp_path, git=True)
    before = build_inputs_sha256(load_stack(folder))
    assert before is not None and len(before) == 64
    (folder / "bin").mkdir()
    (folder / "bin" / "server").write_bytes(b"\x7fELF built")
    assert build_inputs_sha256(load_stack(folder)) == before, "an ignored build output is not an input"
    (folder / "server.py").write_text((folder / "server.py").read_text() + "# changed\n")
    changed = build_inputs_sha256(load_stack(folder))
    assert changed != before
    toml = folder / "stack.toml"
    toml.write_text(toml.read_text().replace("startup_timeout_s = 30", "startup_timeout_s = 31"))
    assert build_inputs_sha256(load_stack(folder)) not in (before, changed), "the definition is an input"


def test_a_folder_outside_git_has_no_digest(tmp_path):
    assert build_inputs_sha256(load_stack(_copy(tmp_path, git=False))) is None
