"""Stack definitions: `stacks/<id>/stack.toml`, validated once at load.

The format is documented in docs/contract.md. Every error names the file, the key and what is allowed,
so a typo in one stack's file is one clear line, and the other stacks still load.
"""

from __future__ import annotations

import difflib
import re
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

"""Workloads a stack may declare (docs/contract.md)."""

TEMPLATE_NAMES = (
    "host",
    "port",
    "database_url",
    "db_host",
    "db_port",
    "db_user",
    "db_password",
    "db_name",
    "pool_size",
    "pool_size_per_worker",
    "pool_sizes",
    "workers",
    "stack_dir",
)
"""Names usable as `${name}` in commands and env values; upper-case `${NAME}` is left to the shell."""

DEFAULT_HEALTH_PATH = "/api/static"
HEALTH_WORKLOAD_PREFIX = "workload:"
"""`health_path = "workload:users"`: the stack is healthy once that workload's verification request answers 2xx."""
HEALTH_WORKLOADS = ("perf-test", "users", "static")
"""Workloads usable as a health check: their requests are GETs that change nothing (tx writes, graphql POSTs)."""
DEFAULT_STARTUP_TIMEOUT_S = 60.0
DEFAULT_BUILD_TIMEOUT_S = 1200.0

_TEMPLATE_RE = re.compile(r"\$\{([a-z_][a-z0-9_]*)\}")
from pgarena.contract.answer import KEY_STYLES, MAPPED_WORKLOADS, AnswerShape
from pgarena.contract.workloads import WorkloadName
from pgarena.config.versions import VersionSpec


class StackConfigError(Exception):
    """A stack.toml that cannot be used; the message names the file and the key."""


def _check_templates(text: str) -> str:
    unknown = [name for name in _TEMPLATE_RE.findall(text) if name not in TEMPLATE_NAMES]
    if unknown:
        raise ValueError(f"unknown template ${{{unknown[0]}}}; allowed: {', '.join(TEMPLATE_NAMES)}")
    return text


def _check_env_templates(env: dict[str, str]) -> dict[str, str]:
    for value in env.values():
        _check_templates(value)
    return env


class _Strict(BaseModel):
    # strict: TOML has real types, so "8080" where a number belongs is a mistake to report, not coerce.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class BuildSpec(_Strict):
    """How to build a stack: a shell command run in its folder."""

    command: str
    timeout_s: float = Field(DEFAULT_BUILD_TIMEOUT_S, gt=0)
    env: dict[str, str] = Field(default_factory=dict)

    _templates = field_validator("command")(_check_templates)
    _env_templates = field_validator("env")(_check_env_templates)


class RunSpec(_Strict):
    """How to run a stack: a shell command run in its folder, and how to tell it is up."""

    command: str
    health_path: str = DEFAULT_HEALTH_PATH
    startup_timeout_s: float = Field(DEFAULT_STARTUP_TIMEOUT_S, gt=0)
    port: int | None = Field(None, ge=1, le=65535, description="fixed port, for apps that insist")
    env: dict[str, str] = Field(default_factory=dict)
    min_warmup_s: float = Field(0, ge=0, description=(
        "JIT runtimes: the least warm-up after each start, before the stack's first cell (its later workloads warm "
        "by the profile's rule, at least min_workload_warmup_s)"))
    min_workload_warmup_s: float = Field(0, ge=0, description=(
        "JIT runtimes: the least warm-up of each workload after the first one since a start (a JIT compiles each "
        "endpoint's own code when it first runs it; the profile's least warm-up where that is longer)"))

    idle_rewarm: bool = Field(True, description=(
        "the longer re-warm before a window after an idle gap (contract/idle.py); false only for a runtime measured "
        "not to read slower after one (scripts/idle_gap.py --interleaved; docs/methodology.md, \"The idle gap\")"))

    def least_warmup_s(self, profile_s: float, first: bool) -> float:
        """The least warm-up of a stack's workload: the profile's, raised to the stack's declared least for its
        `first` workload since a start (min_warmup_s) or for each later one (min_workload_warmup_s)."""
        return max(profile_s, self.min_warmup_s if first else self.min_workload_warmup_s)

    _templates = field_validator("command")(_check_templates)
    _env_templates = field_validator("env")(_check_env_templates)

    @field_validator("health_path")
    @classmethod
    def _absolute_path(cls, path: str) -> str:
        if path.startswith(HEALTH_WORKLOAD_PREFIX):
            workload = path.removeprefix(HEALTH_WORKLOAD_PREFIX)
            if workload not in HEALTH_WORKLOADS:
                raise ValueError(f"'{path}': the workload must be one of {', '.join(HEALTH_WORKLOADS)}")
            return path
        if not path.startswith("/"):
            raise ValueError(f"must start with '/' or name a workload ('{HEALTH_WORKLOAD_PREFIX}users')")
        return path

    @property
    def health_workload(self) -> str | None:
        """The workload whose verification request is the health check, if health_path names one."""
        if self.health_path.startswith(HEALTH_WORKLOAD_PREFIX):
            return self.health_path.removeprefix(HEALTH_WORKLOAD_PREFIX)
        return None


class DatabaseSpec(_Strict):
    """`[database]`: settings the managed database must offer this stack (an app written elsewhere that
    expects, say, port 5432, user `benchmarkdbuser` and database `hello_world`). Unset keys are pgarena's."""

    port: int | None = Field(None, ge=1, le=65535)
    user: str | None = Field(None, min_length=1, max_length=63)
    password: str | None = Field(None, min_length=1)
    name: str | None = Field(None, min_length=1, max_length=63)
    schema_: str | None = Field(None, alias="schema", description=(
        "the schema the app names pgarena's objects in (`public.perf_test(...)`): on the managed database they "
        "are made reachable there too (db/exposed.py); refused with --database-url"))

    @field_validator("user")
    @classmethod
    def _not_reserved(cls, user: str | None) -> str | None:
        return check_role_name(user)

    @field_validator("schema_")
    @classmethod
    def _plain_schema_name(cls, schema: str | None) -> str | None:
        return check_schema_name(schema)

    def cluster_keys(self) -> dict[str, object]:
        """The keys one managed cluster must offer every stack (port, user, password, name): `schema` is per stack."""
        return self.model_dump(exclude={"schema_"})


class AnswerSpec(_Strict):
    """`[answer]`: the documented shape of the stack's row answers, undone before they are judged
    (contract/answer.py): `envelope` names the member of a JSON object that holds the rows, `keys` the style
    the contract's snake_case keys arrive in. The stack's cells are flagged `answer-mapped`."""

    envelope: str | None = Field(None, min_length=1, description="the member of a JSON object holding the rows")
    keys: str | None = Field(None, description=f"the contract's keys arrive in: {', '.join(KEY_STYLES)}")

    @field_validator("keys")
    @classmethod
    def _known_style(cls, keys: str | None) -> str | None:
        if keys is not None and keys not in KEY_STYLES:
            raise ValueError(f"'{keys}' is not a key style pgarena maps; allowed: {', '.join(KEY_STYLES)}")
        return keys

    @model_validator(mode="after")
    def _something_declared(self) -> AnswerSpec:
        if self.envelope is None and self.keys is None:
            raise ValueError("declares neither 'envelope' nor 'keys' (leave [answer] out for the contract's shape)")
        return self

    @property
    def shape(self) -> AnswerShape:
        """The mapping as verification and the answer checks under load apply it."""
        return AnswerShape(envelope=self.envelope, keys=self.keys)


SCHEMA_NAME_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
"""A schema name `[database] schema` accepts: a lower-case SQL identifier that needs no quoting."""
RESERVED_SCHEMAS = ("information_schema",)


def check_schema_name(schema: str | None) -> str | None:
    """A schema pgarena may create or use for a stack's view of its objects (not `pg_*`, not the catalogue's)."""
    if schema is None:
        return None
    if not SCHEMA_NAME_RE.match(schema):
        raise ValueError(f"'{schema}' is not a plain schema name (lower-case letters, digits and _, at most 63, "
                         "not starting with a digit)")
    if schema.startswith("pg_") or schema in RESERVED_SCHEMAS:
        raise ValueError(f"'{schema}' is a schema of PostgreSQL's own")
    return schema


def check_role_name(user: str | None) -> str | None:
    """A role name PostgreSQL lets pgarena create (`pg_*` names are reserved)."""
    if user is not None and user.startswith("pg_"):
        raise ValueError(f"'{user}': role names starting with pg_ are reserved by PostgreSQL")
    return user


class StackDef(_Strict):
    """One stack as declared in its stack.toml (see docs/contract.md for every key)."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    language: str
    framework: str
    framework_version: str
    driver: str
    driver_version: str
    server: str = ""
    pooler: str = "none"
    prepared_statements: bool | None = None
    pool_per_worker: bool = Field(False, description="forks PGARENA_WORKERS processes with one pool each")
    workloads: list[WorkloadName] = Field(min_length=1)
    requires: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    min_postgres: int | None = Field(None, ge=9, description=(
        "the oldest PostgreSQL major version the stack runs against; against an older server it is unavailable, "
        "with the reason, before it is built"))
    competes: bool = Field(True, description=(
        "false for a stack kept to show a mistake (an anti-pattern on purpose): it is measured and shown, "
        "listed apart, and never ranked"))
    version_commands: list[list[str]] = Field(default_factory=list)
    source_globs: list[str] = Field(default_factory=list)
    build: BuildSpec | None = None
    run: RunSpec
    database: DatabaseSpec | None = None
    routes: dict[WorkloadName, str] = Field(
        default_factory=dict, description="workload → path, for apps that serve a workload elsewhere")
    answer: AnswerSpec | None = Field(None, description=(
        "the stack's row answers come in a documented other shape (an envelope, camelCase keys): undone before "
        "judging, cells flagged answer-mapped"))
    versions: dict[str, VersionSpec] = Field(default_factory=dict, description=(
        "named versions of the stack (config/versions.py) that `pgarena ab` measures against each other"))

    @field_validator("routes")
    @classmethod
    def _absolute_routes(cls, routes: dict[str, str]) -> dict[str, str]:
        for workload, path in routes.items():
            if not path.startswith("/"):
                raise ValueError(f"route of {workload} must start with '/'")
        return routes

    @model_validator(mode="after")
    def _health_workload_declared(self) -> StackDef:
        workload = self.run.health_workload
        if workload is not None and workload not in self.workloads:
            raise ValueError(f"run.health_path names workload '{workload}', which the stack does not declare")
        return self

    @model_validator(mode="after")
    def _answer_applies(self) -> StackDef:
        if self.answer is not None and not any(w in MAPPED_WORKLOADS for w in self.workloads):
            raise ValueError(f"[answer] applies to the row workloads ({', '.join(MAPPED_WORKLOADS)}) only, and the "
                             "stack declares none of them (GraphQL's envelope is its own contract)")
        return self


@dataclass(frozen=True)
class Stack:
    """A loaded stack: its definition, its folder, and whether it can run on this machine."""

    definition: StackDef
    directory: Path
    unavailable_reason: str | None = None
    target_url: str | None = None
    """A remote target (--target): the base URL where it is already deployed; pgarena neither builds, starts nor
    stops it (config/targets.py). None: a stack pgarena builds and starts from `directory`."""

    @property
    def id(self) -> str:
        return self.definition.id

    @property
    def available(self) -> bool:
        return self.unavailable_reason is None

    @property
    def database_port(self) -> int | None:
        """The database port the app fixes (stack.toml `[database] port`: it connects there, whatever address
        pgarena gives it); None: it connects where pgarena says."""
        return self.definition.database.port if self.definition.database is not None else None

    @property
    def answer(self) -> AnswerShape | None:
        """The stack's declared answer shape (stack.toml `[answer]`), None for the contract's own."""
        return self.definition.answer.shape if self.definition.answer is not None else None


@dataclass(frozen=True)
class StackLoadError:
    """A stack folder whose stack.toml could not be used."""

    stack_id: str
    path: Path
    message: str


def _format_validation_error(path: Path, error: ValidationError) -> str:
    items = error.errors()
    unknown = {".".join(map(str, i["loc"])) for i in items if i["type"] == "extra_forbidden"}
    lines = []
    for item in items:
        key = ".".join(str(part) for part in item["loc"]) or "(top level)"
        if item["type"] == "extra_forbidden":
            parent = _model_for_location(item["loc"][:-1])
            allowed = [field.alias or name for name, field in parent.model_fields.items()]
            guess = difflib.get_close_matches(str(item["loc"][-1]), allowed, n=1)
            hint = f" (did you mean '{guess[0]}'?)" if guess else ""
            lines.append(f"{path}: unknown key '{key}'{hint}; allowed keys: {', '.join(allowed)}")
        elif item["type"] == "missing":
            # A missing key that an unknown key is a typo of is already reported as that typo.
            prefix = ".".join(map(str, item["loc"][:-1]))
            siblings = [k.rsplit(".", 1)[-1] for k in unknown if k.rpartition(".")[0] == prefix]
            if not difflib.get_close_matches(str(item["loc"][-1]), siblings, n=1):
                lines.append(f"{path}: missing required key '{key}'")
        else:
            lines.append(f"{path}: key '{key}': {item['msg']}")
    return "\n".join(lines)


def _model_for_location(loc: tuple) -> type[BaseModel]:
    model: type[BaseModel] = StackDef
    for part in loc:
        field = model.model_fields.get(str(part))
        if field is None:
            break
        annotation = field.annotation
        for candidate in (BuildSpec, RunSpec, DatabaseSpec, AnswerSpec, VersionSpec):
            if annotation is candidate or candidate in getattr(annotation, "__args__", ()):
                model = candidate
    return model


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise StackConfigError(f"{path}: not valid TOML: {exc}") from exc
    except OSError as exc:
        raise StackConfigError(f"{path}: cannot read: {exc.strerror}") from exc


def _merge(parent: dict, child: dict) -> dict:
    """Child keys win; tables merge key by key (so `[run.env]` adds to the parent's), lists are replaced."""
    merged = dict(parent)
    for key, value in child.items():
        if isinstance(value, dict) and isinstance(parent.get(key), dict):
            merged[key] = _merge(parent[key], value)
        else:
            merged[key] = value
    return merged


def _resolve_extends(path: Path, raw: dict, seen: tuple[Path, ...] = ()) -> dict:
    """A variant's `extends = "../other-stack"` inherits that stack.toml (itself possibly a variant)."""
    parent_ref = raw.pop("extends", None)
    if parent_ref is None:
        return raw
    if not isinstance(parent_ref, str):
        raise StackConfigError(f"{path}: key 'extends': must be a folder path like \"../go-nethttp-pgx\"")
    parent_path = (path.parent / parent_ref / "stack.toml").resolve()
    if parent_path in seen:
        raise StackConfigError(f"{path}: key 'extends': circular ({' → '.join(map(str, seen))})")
    if not parent_path.is_file():
        raise StackConfigError(f"{path}: key 'extends': no stack.toml at {parent_path}")
    parent = _resolve_extends(parent_path, _read_toml(parent_path), (*seen, parent_path))
    parent.pop("id", None)
    return _merge(parent, raw)


def parse_stack_toml(path: Path) -> StackDef:
    """Read and validate one stack.toml (resolving `extends`); raise StackConfigError readably."""
    raw = _resolve_extends(path, _read_toml(path), (path.resolve(),))
    try:
        definition = StackDef.model_validate(raw)
    except ValidationError as exc:
        raise StackConfigError(_format_validation_error(path, exc)) from None
    if definition.id != path.parent.name:
        raise StackConfigError(
            f"{path}: key 'id': '{definition.id}' must equal the folder name '{path.parent.name}'"
        )
    return definition


def missing_requirement(requires: list[str]) -> str | None:
    """The reason a stack cannot run here (a required binary is absent), or None."""
    for binary in requires:
        if "/" in binary:
            if not Path(binary).is_file():
                return f"'{binary}' does not exist"
        elif shutil.which(binary) is None:
            return f"'{binary}' is not on PATH"
    return None


def load_stacks(stacks_dir: Path) -> tuple[list[Stack], list[StackLoadError]]:
    """Load every `stacks_dir/*/stack.toml`, sorted by id; bad files become StackLoadError entries."""
    stacks: list[Stack] = []
    errors: list[StackLoadError] = []
    for toml_path in sorted(stacks_dir.glob("*/stack.toml")):
        try:
            definition = parse_stack_toml(toml_path)
        except StackConfigError as exc:
            errors.append(StackLoadError(toml_path.parent.name, toml_path, str(exc)))
            continue
        reason = missing_requirement(definition.requires)
        stacks.append(Stack(definition, toml_path.parent.resolve(), reason and f"unavailable here: {reason}"))
    return stacks, errors


def render_template(text: str, values: dict[str, str]) -> str:
    """Replace `${name}` by pgarena's values; names were checked at load."""
    return _TEMPLATE_RE.sub(lambda m: values[m.group(1)], text)
