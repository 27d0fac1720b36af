"""Small Go programs shipped inside pgarena (trivial/, wire/), built once per source version into the tool cache.

`go_program(package, sources, name)` returns `<cache>/<name>-<digest>/<name>`, building it on first use from the
package's files (their SHA-256 names the folder, so an edited source builds anew); a dependency comes from the
Go module proxy, pinned by the package's go.sum.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from pgarena.system.toxiproxy_install import default_cache_dir

DEFAULT_BUILD_TIMEOUT_S = 300.0


class GoBuildError(Exception):
    """The program cannot be built here (no Go, a failed or overlong build); the message says why."""


def go_program(package: str, sources: Sequence[str], name: str, *, cache_dir: Path | None = None,
               timeout_s: float = DEFAULT_BUILD_TIMEOUT_S) -> Path:
    """The built binary of the Go program in `package` (its files `sources`), built once and cached."""
    files = {source: resources.files(package).joinpath(source).read_bytes() for source in sources}
    digest = hashlib.sha256(b"".join(files[n] for n in sorted(files))).hexdigest()[:12]
    home = (cache_dir or default_cache_dir()) / f"{name}-{digest}"
    binary = home / name
    if binary.is_file():
        return binary
    go = shutil.which("go")
    if go is None:
        raise GoBuildError(f"Go is not on PATH (needed to build {name})")
    src = home / "src"
    src.mkdir(parents=True, exist_ok=True)
    for source, data in files.items():
        (src / source).write_bytes(data)
    staging = home / f"{name}.tmp-{os.getpid()}"
    try:
        out = subprocess.run([go, "build", "-trimpath", "-o", str(staging), "."], cwd=src, capture_output=True,
                             text=True, timeout=timeout_s, env={**os.environ, "GOFLAGS": "-mod=readonly"})
    except subprocess.TimeoutExpired:
        raise GoBuildError(f"go build of {name} took over {timeout_s:.0f} s") from None
    if out.returncode != 0 or not staging.is_file():
        raise GoBuildError(f"go build of {name} failed: {out.stderr.strip()[-400:]}")
    os.replace(staging, binary)
    return binary
