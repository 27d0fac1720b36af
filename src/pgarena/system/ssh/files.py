"""Copying to and from an SSH host: a stack folder with rsync when both ends have it (`--delete`, incremental)
or scp of a filtered copy otherwise, leaving out what pgarena's own .gitignore and the stack's .gitignore call
build output (`DEFAULT_EXCLUDES`, `stack_excludes`); and single files with scp (`put_files`, `get_files`)."""

from __future__ import annotations

import fnmatch
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pgarena.system.ssh.shell import remote_command
from pgarena.system.ssh.transport import (
    DEFAULT_COMMAND_TIMEOUT_S,
    DEFAULT_COPY_TIMEOUT_S,
    LOCAL_MARGIN_S,
    SshError,
    SshTransport,
    hint,
    text_of,
)

DEFAULT_EXCLUDES = ("/bin/", "/.venv", "/node_modules/", "/target/", "__pycache__/", "/.git/")
"""Build outputs never copied to a host, in .gitignore syntax relative to the stack folder.

NOTE: the same as the project's .gitignore says for `stacks/*/` (bin/, .venv — a folder, or the Python stacks'
link into pgarena's tool cache, hence no trailing slash —, node_modules/, target/, __pycache__/), plus .git; a
stack's own .gitignore adds more (`stack_excludes`). tests/unit/test_ssh.py checks that they agree."""


@dataclass(frozen=True)
class ExcludeRule:
    """One .gitignore line: `glob` matched against a path's last component (unanchored) or against the whole
    path relative to the folder (`anchored`: the line had a leading or inner slash); `directory_only` for a
    trailing slash. `*` and `?` never match `/`, as in git."""

    glob: str
    anchored: bool
    directory_only: bool

    @property
    def rsync_pattern(self) -> str:
        """The rule as an rsync `--exclude` pattern (rsync anchors only with a leading slash)."""
        return ("/" if self.anchored else "") + self.glob + ("/" if self.directory_only else "")


def parse_ignore_lines(lines: Sequence[str]) -> list[ExcludeRule]:
    """The rules of .gitignore lines. Blank lines and comments are skipped, and so are what this simple
    reading does not model — negations (`!`) and `**` — so such a file copies more, never less."""
    rules = []
    for raw in lines:
        line = raw.rstrip("\n").rstrip()
        if not line or line.startswith("#") or line.startswith("!") or "**" in line:
            continue
        directory_only = line.endswith("/")
        line = line.rstrip("/")
        anchored = "/" in line
        glob = line.lstrip("/")
        if glob:
            rules.append(ExcludeRule(glob=glob, anchored=anchored, directory_only=directory_only))
    return rules


def stack_excludes(local: Path) -> list[ExcludeRule]:
    """What `copy_folder` leaves out of `local`: `DEFAULT_EXCLUDES` and the lines of `local/.gitignore`."""
    rules = parse_ignore_lines(DEFAULT_EXCLUDES)
    try:
        rules += parse_ignore_lines((local / ".gitignore").read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError):
        pass
    return rules


def is_excluded(relative: PurePosixPath, is_dir: bool, rules: Sequence[ExcludeRule]) -> bool:
    """True if the path (relative to the copied folder) matches a rule; its parents are not looked at (the
    copy does not descend into an excluded folder)."""
    for rule in rules:
        if rule.directory_only and not is_dir:
            continue
        if rule.anchored:
            pattern = PurePosixPath(rule.glob).parts
            if len(pattern) == len(relative.parts) and all(
                    fnmatch.fnmatchcase(part, glob) for part, glob in zip(relative.parts, pattern)):
                return True
        elif fnmatch.fnmatchcase(relative.name, rule.glob):
            return True
    return False


def _check_remote_folder(remote: str) -> str:
    """`remote` if it names a folder pgarena may replace (ValueError for '', '/', '.', '~', '..' and the like)."""
    path = PurePosixPath(remote)
    if (not remote.strip() or "\n" in remote or remote.startswith("-") or str(path) in ("/", ".")
            or ".." in path.parts or path.parts[0].startswith("~")):
        raise ValueError(f"remote folder {remote!r}: give a folder of its own (absolute, or relative to the "
                         "login's home), not '/', '.', '~' or one with '..'")
    return str(path)



def _copy_filtered(local: Path, target: Path, rules: Sequence[ExcludeRule]) -> None:
    """Copy `local` to `target` without what `rules` exclude (symbolic links as links)."""
    def ignore(folder: str, names: list[str]) -> list[str]:
        base = PurePosixPath(Path(folder).relative_to(local).as_posix())
        return [name for name in names
                if is_excluded(base / name, os.path.isdir(os.path.join(folder, name)) and
                               not os.path.islink(os.path.join(folder, name)), rules)]

    shutil.copytree(local, target, symlinks=True, ignore=ignore)


class SshFiles(SshTransport):
    """An SSH host that files and folders can be copied to and from (`SshTransport` plus `copy_folder`,
    `put_files`, `get_files`)."""

    def copy_folder(self, local: Path, remote: str, *, timeout_s: float = DEFAULT_COPY_TIMEOUT_S) -> str:
        """Make the remote folder `remote` a copy of `local` without its build outputs (`stack_excludes`);
        return the tool used ("rsync" or "scp").

        rsync (`-a --delete`) keeps the host's excluded build outputs between copies, so builds stay
        incremental; with scp the remote folder is removed and copied anew.
        """
        remote = _check_remote_folder(remote)
        if not local.is_dir():
            raise ValueError(f"{local} is not a folder")
        tool = self.copy_tool
        if tool is None:
            if self._remote_rsync is None:
                self.check()
            tool = "rsync" if self._remote_rsync and shutil.which("rsync") else "scp"
        rules = stack_excludes(local)
        parent = str(PurePosixPath(remote).parent)
        if tool == "rsync":
            self._call(remote_command('mkdir -p -- "$1"', remote), timeout_s=DEFAULT_COMMAND_TIMEOUT_S,
                       what=f"create {remote}")
            argv = ["rsync", "-a", "--delete", f"--timeout={int(timeout_s)}", "-e", shlex.join(self.ssh_base()),
                    *[f"--exclude={rule.rsync_pattern}" for rule in rules], f"{local}/", self.remote_spec(f"{remote}/")]
            self._copy(argv, timeout_s, remote, tool)
            return tool
        self._call(remote_command('rm -rf -- "$1" && mkdir -p -- "$2"', remote, parent),
                   timeout_s=DEFAULT_COMMAND_TIMEOUT_S, what=f"replace {remote}")
        with tempfile.TemporaryDirectory(prefix="pgarena-scp-") as tmp:
            staged = Path(tmp) / "stack"
            _copy_filtered(local, staged, rules)
            argv = ["scp", "-r", "-p", "-q", "-P", str(self.port), *self._common_options(), "--", str(staged),
                    self.remote_spec(remote)]
            self._copy(argv, timeout_s, remote, tool)
        return tool

    def put_files(self, local: Sequence[Path], remote_dir: str, *, timeout_s: float = DEFAULT_COPY_TIMEOUT_S) -> None:
        """Copy single files into the remote folder `remote_dir` (created if missing), keeping their names."""
        remote_dir = _check_remote_folder(remote_dir)
        self._call(remote_command('mkdir -p -- "$1"', remote_dir), timeout_s=DEFAULT_COMMAND_TIMEOUT_S,
                   what=f"create {remote_dir}")
        argv = ["scp", "-p", "-q", "-P", str(self.port), *self._common_options(), "--", *map(str, local),
                self.remote_spec(f"{remote_dir}/")]
        self._copy(argv, timeout_s, remote_dir, "scp")

    def get_files(self, remote: Sequence[str], local_dir: Path, *, timeout_s: float = DEFAULT_COPY_TIMEOUT_S) -> None:
        """Copy remote files into the local folder `local_dir`, keeping their names."""
        local_dir.mkdir(parents=True, exist_ok=True)
        argv = ["scp", "-p", "-q", "-P", str(self.port), *self._common_options(), "--",
                *[self.remote_spec(path) for path in remote], f"{local_dir}/"]
        self._copy(argv, timeout_s, str(local_dir), "scp")

    def _copy(self, argv: list[str], timeout_s: float, remote: str, tool: str) -> None:
        what = f"copy to {remote} with {tool}"
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace",
                                  timeout=timeout_s + self.connect_timeout_s + LOCAL_MARGIN_S)
        except FileNotFoundError as exc:
            raise SshError(f"cannot {what}: {exc.filename} is not installed", destination=self.destination) from exc
        except subprocess.TimeoutExpired as exc:
            raise SshError(f"cannot {what}: not done within {timeout_s:.0f} s", destination=self.destination,
                           stderr=text_of(exc.stderr)) from exc
        if done.returncode != 0:
            raise SshError(f"cannot {what} (exit code {done.returncode}){hint(done.stderr)}",
                           destination=self.destination, stderr=done.stderr)

