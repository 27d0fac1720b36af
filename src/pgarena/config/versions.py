"""Versions of one stack (issue 24): the `[versions]` table of a stack.toml, and the stack.toml a version runs as.

A version is a stack of its own in the same interleaved rounds as the stack's other versions, so an A/B of two
versions is a paired ratio like any pair of stacks. A version named in `[versions.<name>]` overrides the
stack's build (its version pins) and records what it is:

    [versions.pgx-5-7]
    driver_version = "5.7.5"
    build_command = "go get github.com/jackc/pgx/v5@v5.7.5 && go build -trimpath -o bin/server ."

The version runs from its own copy of the stack's folder (pipeline/ab.py), whose stack.toml is written by
`version_toml`: it `extends` the source's stack.toml (kept in `SOURCE_FOLDER`) and overrides id, title, the
recorded versions and the build, so everything else — workloads, run command, notes — is the stack's own.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field

SOURCE_FOLDER = ".source"
"""Where a version's folder keeps the stack.toml it was copied from (its own stack.toml extends it)."""


class VersionSpec(BaseModel):
    """`[versions.<name>]`: one version of the stack. Unset keys keep the stack's own."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    framework_version: str | None = Field(None, description="the framework version this version records")
    driver_version: str | None = Field(None, description="the driver version this version records")
    build_command: str | None = Field(None, description="replaces [build] command (e.g. pins another version)")
    build_env: dict[str, str] = Field(default_factory=dict, description="added to [build.env]")
    run_env: dict[str, str] = Field(default_factory=dict, description="added to [run.env]")
    notes: list[str] = Field(default_factory=list, description="added to the stack's notes in the report")


def _string(value: str) -> str:
    # NOTE: a JSON string with ASCII escapes is a valid TOML basic string.
    return json.dumps(value, ensure_ascii=True)


def _table(name: str, values: dict[str, str]) -> list[str]:
    return [f"[{name}]", *(f"{_string(k)} = {_string(v)}" for k, v in values.items())] if values else []


def version_toml(*, stack_id: str, title: str, extends: str, spec: VersionSpec | None, notes: list[str],
                 has_build: bool) -> str:
    """The stack.toml of one version's folder: `extends` the source stack.toml (a folder path), with id and
    title replaced, `notes` as the version's notes (the caller includes the source's: TOML lists replace) plus
    the spec's, and the spec's overrides applied. `has_build`: the source
    declares `[build]` (a `build_command` needs one to override; `build_env` without one is ignored)."""
    spec = spec or VersionSpec()
    lines = [f"extends = {_string(extends)}", f"id = {_string(stack_id)}", f"title = {_string(title)}"]
    for key in ("framework_version", "driver_version"):
        value = getattr(spec, key)
        if value is not None:
            lines.append(f"{key} = {_string(value)}")
    lines.append(f"notes = [{', '.join(_string(n) for n in [*notes, *spec.notes])}]")
    build: dict[str, str] = {}
    if spec.build_command is not None:
        build["command"] = spec.build_command
    if build or (spec.build_env and has_build):
        lines += _table("build", build) or ["[build]"]
        lines += _table("build.env", spec.build_env)
    lines += _table("run.env", spec.run_env)
    return "\n".join(lines) + "\n"
