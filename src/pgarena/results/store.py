"""results.json on disk: written atomically, read back with every older schema version migrated."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Protocol

from pydantic import ValidationError

from pgarena.results.atomic import write_text_atomic
from pgarena.results.migrations import MIGRATIONS
from pgarena.results.models import RESULTS_FILE, SCHEMA_VERSION, RunResults


def save(results: RunResults, run_dir: Path) -> Path:
    """Write results.json atomically (temporary file in the same folder, then rename)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(run_dir / RESULTS_FILE, results.model_dump_json(indent=2))


SAVE_EVERY_S = 10.0
"""Between windows, results.json is written when this long has passed since it last was: a 3.6 MB file took
40–70 ms, after every window of a 21-stack round. A run stopped in between resumes from the last write and
measures the windows after it again."""


class _Run(Protocol):
    results: RunResults
    run_dir: Path


class Saver:
    """results.json of one run (its `results` in its `run_dir`), written now or (`now=False`, after a window) at
    most every SAVE_EVERY_S."""

    def __init__(self, run: _Run) -> None:
        self.run = run
        self.saved_at = time.monotonic()

    def save(self, now: bool = True) -> None:
        if now or time.monotonic() - self.saved_at >= SAVE_EVERY_S:
            save(self.run.results, self.run.run_dir)
            self.saved_at = time.monotonic()


class ResultsError(Exception):
    """A results file that cannot be read; the message says which and why."""


def load(path: Path) -> RunResults:
    """Read a results.json (or the one inside a run directory).

    ResultsError, in one line, for a folder without results.json, an unreadable or truncated file, JSON
    that is not a results document, and a document of another schema version or shape.
    """
    if path.is_dir():
        if not (path / RESULTS_FILE).exists():
            raise ResultsError(f"{path}: no {RESULTS_FILE} in this folder (not a pgarena run folder)")
        path = path / RESULTS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ResultsError(f"{path}: not a results file (not UTF-8 text)") from None
    try:
        document = json.loads(text)
    except ValueError as exc:
        hint = " (truncated?)" if text.strip() and not text.rstrip().endswith("}") else ""
        raise ResultsError(f"{path}: not valid JSON{hint}: {exc}") from None
    if not isinstance(document, dict) or "schema_version" not in document:
        raise ResultsError(f"{path}: not a pgarena results document (no schema_version)")
    version = document["schema_version"]
    if version not in MIGRATIONS and version != SCHEMA_VERSION:
        raise ResultsError(f"{path}: schema_version {version} is not supported (this pgarena reads "
                           f"{', '.join(map(str, sorted(MIGRATIONS)))} and {SCHEMA_VERSION})")
    while version != SCHEMA_VERSION:
        document, version = MIGRATIONS[version](document), version + 1
    try:
        return RunResults.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "document"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ResultsError(f"{path}: not a valid pgarena results document: {where}: {first['msg']}{more}") from None


def json_schema() -> dict:
    """The published JSON Schema of results.json."""
    schema = RunResults.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "pgarena results"
    return schema
