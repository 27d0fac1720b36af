"""What a stack's build depends on, as one digest (`StackInfo.build_inputs_sha256`).

A resumed run (`pgarena run --resume`) starts every stack again in a new process. When a stack's
verification was stored before the interruption and its build inputs are unchanged since, the new process
runs the same code against the same data, so it gets the brief check a pool-size restart gets
(verify/restart.py: one request per workload judged whole) instead of the whole verification again
(pipeline/lifecycle.py). The digest covers the stack's resolved definition (stack.toml with what it
`extends`: build and run commands, environment) and the contents of its input files: every file of its
folder that git does not ignore, tracked or not (build outputs such as bin/, target/, node_modules/ are
ignored by the project's .gitignore), and every file its `source_globs` name (a variant's sources may lie in
another stack's folder). A folder outside a git work tree has no digest: its outputs cannot be told from
its inputs, so it is verified whole again.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from pgarena.config.stackdef import Stack

GIT_TIMEOUT_S = 30
"""The longest `git ls-files` may take in a stack's folder."""


def _git_files(directory: Path) -> list[Path] | None:
    """The files of `directory` that git does not ignore (tracked, or untracked and not ignored); None when
    it is not in a git work tree or git is missing."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "."],
                                cwd=directory, capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if listed.returncode != 0:
        return None
    return [directory / name for name in listed.stdout.decode("utf-8", "surrogateescape").split("\0") if name]


def build_inputs_sha256(stack: Stack) -> str | None:
    """The SHA-256 (hex) of the stack's definition and input files (see the module docstring); None for a
    stack whose folder is not in a git work tree, and for a remote target (pgarena does not build it)."""
    if stack.target_url is not None:
        return None
    files = _git_files(stack.directory)
    if files is None:
        return None
    files += [p for pattern in stack.definition.source_globs for p in stack.directory.glob(pattern)]
    digest = hashlib.sha256(stack.definition.model_dump_json().encode())
    for path in sorted({p.resolve() for p in files}):
        digest.update(os.path.relpath(path, stack.directory.resolve()).encode("utf-8", "surrogateescape") + b"\0")
        try:
            digest.update(hashlib.sha256(path.read_bytes()).digest() if path.is_file() else b"not a file")
        except OSError:
            digest.update(b"unreadable")
    return digest.hexdigest()
