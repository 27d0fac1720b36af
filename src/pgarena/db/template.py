"""Template data directories: a managed cluster with its workload data, kept stopped and copied by later runs.

A test/dev aid, off unless `PGARENA_TEMPLATE_PGDATA` names a folder (the test suite sets it for its session:
tests/conftest.py). A managed cluster's start is initdb, the extensions and the workloads' data — pgbench's
TPC-B tables for tx are 1,000,000 rows — which costs seconds per run; with a template folder the first run of a
kind builds that cluster once (db/cluster.py `template_for`: initdb and load_workload_data as always, then a
clean shutdown) and every later run of the same kind copies its data directory instead (`cp -a`), gives the
admin and the stacks' roles new random passwords and appends its own settings (port, socket, CPU-dependent
limits) as a new cluster does. What a run gets is the same cluster: the same files that initdb and the data load
would have written, and the data parts it holds are recorded (`Database.preloaded`) so they are not loaded
again.

A template is keyed on everything that shapes its files (`facts`): the server binaries and their version, the
OS user that owns the cluster, the admin and stacks' role names, the database name, the data parts and their
definition (the packaged SQL files' text, pgbench's scale and steps). A change to any of them is another key,
so a stale template is never used; a folder holds one subfolder per key.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from pgarena.db.data import data_definition
from pgarena.system.process import first_line

TEMPLATES_VARIABLE = "PGARENA_TEMPLATE_PGDATA"
"""Environment variable naming the folder of template data directories (unset: every managed cluster is made
by initdb and loaded, the product's default). A test/dev aid, documented in docs/contract.md."""
MANIFEST = "template.json"
"""The file beside a template's `data/` that says what it holds; written last, so its presence means ready."""


def templates_from_environment() -> Path | None:
    """The folder `PGARENA_TEMPLATE_PGDATA` names, or None when it is unset or empty."""
    value = os.environ.get(TEMPLATES_VARIABLE, "").strip()
    return Path(value) if value else None


def facts(*, bin_dir: Path, os_user: str | None, admin_user: str, app_user: str, app_database: str,
          parts: Sequence[str]) -> dict[str, object]:
    """What shapes a template's files: the key is a hash of this (see the module docstring)."""
    return {
        "format": 1,
        "bin_dir": str(bin_dir),
        "server": first_line([str(bin_dir / "postgres"), "-V"]) or "unknown",
        "os_user": os_user,
        "admin_user": admin_user,
        "app_user": app_user,
        "app_database": app_database,
        "data_parts": list(parts),
        "data_definition_sha256": hashlib.sha256(data_definition(parts).encode()).hexdigest(),
    }


def key_of(described: dict[str, object]) -> str:
    """The template's folder name: 16 hex digits of the facts' SHA-256."""
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()[:16]


def ready(root: Path, key: str) -> Path | None:
    """The template's data directory when it is complete (its manifest written), else None."""
    folder = root / key
    return folder / "data" if (folder / MANIFEST).is_file() else None


@contextmanager
def building(root: Path, key: str) -> Iterator[None]:
    """Hold the key's lock (one process builds a template at a time; others wait, then find it ready)."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{key}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def publish(root: Path, key: str, data_dir: Path, described: dict[str, object], settings_marker: str) -> Path:
    """Move a stopped cluster's `data_dir` into the template folder, its postgresql.conf cut back to initdb's (a
    copy appends its own settings at `settings_marker`), then write the manifest; the template's data directory.
    """
    folder = root / key
    shutil.rmtree(folder, ignore_errors=True)  # a build that died before its manifest
    folder.mkdir(parents=True)
    conf = data_dir / "postgresql.conf"
    text = conf.read_text(encoding="utf-8")
    if settings_marker in text:
        conf.write_text(text[:text.index(settings_marker)], encoding="utf-8")
    shutil.move(str(data_dir), str(folder / "data"))
    (folder / MANIFEST).write_text(json.dumps(described, indent=2) + "\n", encoding="utf-8")
    return folder / "data"
