"""Files written whole or not at all: a temporary file in the same folder, flushed, then renamed.

A reader (a browser reloading report.html, CI archiving the run folder) sees either the old file or the
new one, never half of one; a full disk leaves the old file in place and raises OSError.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

NEW_FILE_MODE = 0o644
"""Permissions of a file that did not exist before (mkstemp's 0600 would hide a report from a web server)."""


def write_text_atomic(path: Path, text: str, *, encoding: str = "utf-8") -> Path:
    """Replace `path` with `text` atomically (temporary file + fsync + rename); return `path`."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding=encoding) as out:
            try:
                mode = stat.S_IMODE(os.stat(path).st_mode)
            except FileNotFoundError:
                mode = NEW_FILE_MODE
            os.fchmod(out.fileno(), mode)
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and not exc.filename:  # a failed write() names no file: name it
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    return path
