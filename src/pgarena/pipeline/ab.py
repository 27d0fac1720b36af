"""An A/B of two versions of one stack, prepared as two stacks of one interleaved run (issue 24).

`prepare_ab` turns each side's *source* into a stack folder of its own under a work folder, so the ordinary
pipeline builds, verifies and measures both in the same rounds, and the verdict pairs them round by round
(analysis/abgate.py). A source is

- `current` — the stack's folder as it is (base and head both `current`: a self-A/B, two builds of one code);
- a name of the stack.toml's `[versions]` table — the stack's folder with that version's overrides
  (config/versions.py: its version pins, its recorded driver/framework version);
- `git:<ref>` — the stack's folder as committed at <ref> of the repository it lives in (`git archive`);
- a folder path — another checkout of the stack (a folder with its own stack.toml).

Each version's folder is a copy (builds write into their folder, so two versions cannot share one) without
the build outputs named in `COPY_IGNORE`. Its stack.toml extends the copied source's (kept in
`versions.SOURCE_FOLDER`), so it is validated like any stack.toml and verified like any stack before load.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pgarena.config.stackdef import StackConfigError, parse_stack_toml
from pgarena.config.versions import SOURCE_FOLDER, VersionSpec, version_toml
from pgarena.pipeline.context import RunError

CURRENT = "current"
"""The source naming the stack's folder as it is."""
GIT_PREFIX = "git:"
COPY_IGNORE = ("bin", "target", "node_modules", ".venv", "__pycache__", ".git", SOURCE_FOLDER)
"""Build outputs and caches not copied into a version's folder (each version builds its own)."""
SIDES = ("base", "head")


@dataclass(frozen=True)
class Version:
    """One side of an A/B, prepared as a stack."""

    side: str
    """'base' or 'head'."""
    source: str
    """What the user named (`current`, a `[versions]` name, `git:<ref>` or a folder)."""
    stack_id: str
    """The id it runs under: `<stack>-<side>`."""
    label: str
    """What the history records as its version: the source, with the driver version it records."""
    directory: Path


@dataclass(frozen=True)
class ABPlan:
    """Both sides of an A/B, ready to run from `stacks_dir`."""

    stack: str
    stacks_dir: Path
    base: Version
    head: Version

    @property
    def names(self) -> dict[str, tuple[str, str]]:
        """run's stack id → (the stack, its version label), for the history."""
        return {v.stack_id: (self.stack, v.label) for v in (self.base, self.head)}


def _copy(source: Path, target: Path) -> None:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(*COPY_IGNORE), symlinks=True)


def _from_git(stack_dir: Path, ref: str, target: Path) -> None:
    """The stack's folder as committed at `ref`, extracted into `target`."""
    where = subprocess.run(["git", "-C", str(stack_dir), "rev-parse", "--show-toplevel", "--show-prefix"],
                           capture_output=True, text=True, check=False).stdout.splitlines()
    top, prefix = (where + [str(stack_dir), ""])[:2]  # outside git: archive fails below with git's reason
    done = subprocess.run(["git", "-C", top, "archive", "--format=tar", f"{ref}:{prefix}"],
                          capture_output=True, check=False)
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise RunError(f"git:{ref}: cannot read {stack_dir} at {ref}: {message[-1] if message else 'git failed'}")
    target.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
        archive.extractall(target, filter="data")


def _source_folder(stack_dir: Path, source: str, target: Path) -> VersionSpec | None:
    """Fill `target` with the source's files; return the source's `[versions]` spec (None: not one)."""
    if source.startswith(GIT_PREFIX):
        _from_git(stack_dir, source.removeprefix(GIT_PREFIX), target)
        return None
    if source == CURRENT:
        _copy(stack_dir, target)
        return None
    try:
        definition = parse_stack_toml(stack_dir / "stack.toml")
    except StackConfigError as exc:
        raise RunError(str(exc)) from None
    if source in definition.versions:
        _copy(stack_dir, target)
        return definition.versions[source]
    folder = Path(source).expanduser()
    if folder.is_dir():
        if not (folder / "stack.toml").is_file():
            raise RunError(f"{source}: a folder given as a version must hold a stack.toml (a checkout of the stack)")
        _copy(folder, target)
        return None
    known = ", ".join(definition.versions) or "none declared"
    raise RunError(f"{source}: not '{CURRENT}', 'git:<ref>', a folder, or a version of {definition.id}'s "
                   f"[versions] ({known})")


def _prepare(stack_dir: Path, stack: str, side: str, source: str, work_dir: Path) -> Version:
    stack_id = f"{stack}-{side}"
    folder = work_dir / stack_id
    spec = _source_folder(stack_dir, source, folder)
    if not (folder / "stack.toml").is_file():
        raise RunError(f"{source}: has no stack.toml (at that ref, the stack's folder did not exist yet?)")
    text = (folder / "stack.toml").read_text(encoding="utf-8")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RunError(f"{source}: its stack.toml is not valid TOML: {exc}") from None
    source_id = raw.get("id") if isinstance(raw.get("id"), str) else stack
    kept = folder / SOURCE_FOLDER / source_id  # a folder named like the id, as parse_stack_toml wants
    kept.mkdir(parents=True)
    if isinstance(raw.get("extends"), str):  # a variant: its parent stays where it is in the stacks folder
        text = text.replace(raw["extends"], (stack_dir / raw["extends"]).resolve().as_posix(), 1)
    (kept / "stack.toml").write_text(text, encoding="utf-8")
    (folder / "stack.toml").unlink()
    try:
        original = parse_stack_toml(kept / "stack.toml")
    except StackConfigError as exc:
        raise RunError(f"{source}: {exc}") from None
    driver = spec.driver_version if spec and spec.driver_version else original.driver_version
    label = Path(source).name if spec is None and Path(source).expanduser().is_dir() and source != CURRENT else source
    (folder / "stack.toml").write_text(version_toml(
        stack_id=stack_id, title=f"{original.title} @ {side}", extends=f"{SOURCE_FOLDER}/{source_id}", spec=spec,
        notes=[f"A/B {side}: {source} (driver {driver})", *original.notes], has_build=original.build is not None),
        encoding="utf-8")
    try:
        parse_stack_toml(folder / "stack.toml")
    except StackConfigError as exc:
        raise RunError(str(exc)) from None
    return Version(side=side, source=source, stack_id=stack_id, label=f"{label} ({driver})", directory=folder)


def prepare_ab(stacks_dir: Path, stack: str, base: str, head: str, work_dir: Path) -> ABPlan:
    """Prepare `stack`'s two versions as stacks `<stack>-base` and `<stack>-head` in `work_dir` (created; it
    must not exist). RunError, naming the source, for an unknown stack or source."""
    stack_dir = stacks_dir / stack
    if not (stack_dir / "stack.toml").is_file():
        known = ", ".join(sorted(p.parent.name for p in stacks_dir.glob("*/stack.toml"))) or "none"
        raise RunError(f"unknown stack '{stack}'; stacks in {stacks_dir}: {known}")
    if work_dir.exists():
        raise RunError(f"{work_dir} exists already: an A/B prepares its versions in a new folder")
    work_dir.mkdir(parents=True)
    versions = [_prepare(stack_dir.resolve(), stack, side, source, work_dir) for side, source in zip(SIDES, (base, head))]
    return ABPlan(stack=stack, stacks_dir=work_dir, base=versions[0], head=versions[1])
