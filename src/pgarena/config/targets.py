"""Remote targets: `--target ID=URL`, a stack already deployed elsewhere that pgarena verifies and loads only.

pgarena neither builds, starts nor stops a target. Its ID names it in results (a stack id: lower-case
letters, digits and dashes); when `stacks/<ID>/stack.toml` exists, that definition supplies the workloads,
routes and declared facts (language, framework, driver), otherwise the target serves the run's
`--workloads` at the contract's default routes and its facts are "not known" (docs/contract.md, "Remote
targets"). Parsed and checked here, once, at the edge.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

from pgarena.config.stackdef import (
    DEFAULT_HEALTH_PATH,
    HEALTH_WORKLOAD_PREFIX,
    Stack,
    StackDef,
    StackLoadError,
    load_stacks,
)

TARGET_ID_PATTERN = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
"""A target's id: a stack id (stack.toml's `id` pattern), at most 63 characters."""
NOT_KNOWN = "not known"
"""A declared fact of a target without a stack.toml here (language, framework, driver, pooler)."""
TARGET_SCHEMES = ("http", "https")


class TargetError(ValueError):
    """A `--target` value that cannot be used; the message says which and why, in one line."""


def _shown(url: str) -> str:
    """The URL as an error message may show it: any `user:password@` replaced (never echo a secret)."""
    return re.sub(r"//[^/@]*@", "//***@", url)


def check_target_url(target_id: str, url: str) -> str:
    """The target's base URL, normalised (no trailing '/'); TargetError when it cannot be a base URL.

    A base URL is `http(s)://host[:port][/prefix]`: every route of the contract (`/api/users?limit=20`) is
    appended to it, so it carries no query, fragment or credentials, and a prefix is plain path segments.
    """
    where = f"--target {target_id}={_shown(url)}"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise TargetError(f"{where}: not a URL ({exc})") from None
    if parts.scheme not in TARGET_SCHEMES:
        raise TargetError(f"{where}: the URL must start with http:// or https://, got "
                          f"'{parts.scheme + '://' if parts.scheme else url}'")
    if not parts.hostname:
        raise TargetError(f"{where}: the URL has no host")
    if parts.username is not None or parts.password is not None:
        raise TargetError(f"{where}: credentials in the URL are refused (the load generators would not all send "
                          "them, and pgarena stores the URL); put the target behind an address that needs none")
    if parts.query or url.rstrip().endswith("?"):
        raise TargetError(f"{where}: a base URL has no query string ('?…'): pgarena appends each workload's "
                          "route and parameters to it")
    if parts.fragment or "#" in url:
        raise TargetError(f"{where}: a base URL has no fragment ('#…')")
    path = parts.path.rstrip("/")
    if path and not re.fullmatch(r"(/[A-Za-z0-9._~%!$&'()*+,;=:@-]+)+", path) or any(
            segment in (".", "..") for segment in path.split("/")):
        raise TargetError(f"{where}: the path '{parts.path}' cannot be a base (plain segments only, e.g. "
                          "https://host/prefix): routes like /api/users are appended to it")
    if port == 0:
        raise TargetError(f"{where}: port 0 is not a port")
    return f"{parts.scheme}://{parts.netloc}{path}"


def parse_targets(values: Iterable[str]) -> dict[str, str]:
    """`--target` values (each `ID=URL`, or several comma-separated) → {id: base URL}, in the order given.

    TargetError for a value without '=', an id that is not a stack id, an id given twice or a URL that
    cannot be a base (check_target_url).
    """
    targets: dict[str, str] = {}
    for value in values:
        for item in (part.strip() for part in value.split(",")):
            if not item:
                continue
            target_id, eq, url = item.partition("=")
            target_id, url = target_id.strip(), url.strip()
            if not eq or not url:
                raise TargetError(f"--target '{_shown(item)}': expected ID=URL, e.g. "
                                  "--target my-api=https://api.example.com")
            if not TARGET_ID_PATTERN.fullmatch(target_id):
                raise TargetError(f"--target '{target_id}': an id is a stack id: lower-case letters, digits and "
                                  "dashes, starting with a letter or digit (at most 63 characters)")
            if target_id in targets:
                raise TargetError(f"--target '{target_id}' is given twice")
            targets[target_id] = check_target_url(target_id, url)
    return targets


def check_targets(targets: dict[str, str]) -> dict[str, str]:
    """Stored or given {id: URL} checked again (a resumed run's config is validated like a new one)."""
    return {target_id: _checked_id(target_id) and check_target_url(target_id, url)
            for target_id, url in targets.items()}


def _checked_id(target_id: str) -> str:
    if not TARGET_ID_PATTERN.fullmatch(target_id):
        raise TargetError(f"--target '{target_id}': an id is a stack id: lower-case letters, digits and dashes")
    return target_id


def target_definition(target_id: str, workloads: Iterable[str]) -> StackDef:
    """The definition of a target without a stack.toml here: the run's workloads at the contract's default
    routes, every declared fact "not known". Its health path is the first of static, users, perf-test that
    the run loads (a GET that changes nothing), else the default /api/static."""
    names = list(workloads)
    first = next((w for w in ("static", "users", "perf-test") if w in names), None)
    health = DEFAULT_HEALTH_PATH if first in (None, "static") else f"{HEALTH_WORKLOAD_PREFIX}{first}"
    return StackDef.model_validate({
        "id": target_id, "title": f"{target_id} (remote target)", "language": NOT_KNOWN, "framework": NOT_KNOWN,
        "framework_version": "", "driver": NOT_KNOWN, "driver_version": "", "server": "", "pooler": NOT_KNOWN,
        "workloads": names, "notes": [NO_DEFINITION_NOTE], "run": {"command": "", "health_path": health}})


NO_DEFINITION_NOTE = ("remote target without a stack.toml here: it is expected to serve the run's --workloads at the "
                      "contract's default routes; its language, framework, driver and pooler are not known")
DEFINITION_NOTE = ("remote target: its stack.toml here gave the workloads, routes and declared facts; pgarena did not "
                   "build or start it, so that the deployment runs this folder's code is not checked")


def target_stacks(targets: dict[str, str], workloads: Iterable[str],
                  stacks_dir: Path) -> tuple[list[Stack], list[StackLoadError]]:
    """One Stack per target, in the order given: its stack.toml in `stacks_dir` when there is one (a broken one
    is a StackLoadError, like a local stack's), else `target_definition`. A target is always available: what
    it needs to run is on its own host (`requires` is not checked here)."""
    found, errors = load_stacks(stacks_dir) if stacks_dir.is_dir() else ([], [])
    by_id = {s.id: s for s in found}
    broken = {e.stack_id: e for e in errors}
    stacks, problems = [], []
    names = list(workloads)
    for target_id, url in targets.items():
        if target_id in broken:
            problems.append(broken[target_id])
        elif target_id in by_id:
            local = by_id[target_id]
            definition = local.definition.model_copy(update={"notes": [*local.definition.notes, DEFINITION_NOTE]})
            stacks.append(Stack(definition, local.directory, None, target_url=url))
        else:
            stacks.append(Stack(target_definition(target_id, names), stacks_dir / target_id, None, target_url=url))
    return stacks, problems
