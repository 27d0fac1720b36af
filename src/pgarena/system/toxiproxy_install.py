"""Toxiproxy's pinned release, built from the Go module proxy into pgarena's tool cache
(`<cache>/toxiproxy-<version>/bin/server`: the package is `cmd/server`, so the binary is `server`): `install()`
builds it once, `locate()` finds it. About 2 minutes and 43 CPU seconds cold on this 2-core machine. The
server itself runs in system/toxiproxy.py."""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

from pgarena.system.process import ProcessTracker, run_logged, tail

TOXIPROXY_VERSION = "2.5.0"
"""Pinned: the newest release the Go module proxy offers here (v2.3.0 and v2.5.0); it builds with Go 1.26."""
TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2"
BINARY_NAME = "server"
"""`go install …/cmd/server` names the binary after its package folder."""
DEFAULT_INSTALL_TIMEOUT_S = 900.0
"""Longest the cold build may take (seconds)."""


class ToxiproxyUnavailable(Exception):
    """The toxiproxy binary is missing or cannot be built; the message says how to install it."""


def default_cache_dir() -> Path:
    """pgarena's tool cache: `$XDG_CACHE_HOME/pgarena/tools` (default `~/.cache/pgarena/tools`).

    NOTE: the same folder as `pgarena.load.engines.base.tool_cache_dir` (which `system` may not import);
    tests/unit/test_toxiproxy.py checks that the two agree.
    """
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pgarena" / "tools"


def install_dir(cache_dir: Path | None = None) -> Path:
    """The pinned version's folder in the tool cache (`toxiproxy-<version>`)."""
    return (cache_dir or default_cache_dir()) / f"toxiproxy-{TOXIPROXY_VERSION}"


def binary_path(cache_dir: Path | None = None) -> Path:
    """Where `install()` puts the server binary."""
    return install_dir(cache_dir) / "bin" / BINARY_NAME


def locate(cache_dir: Path | None = None) -> Path | None:
    """The pinned server binary if it is installed in the tool cache, else None (PATH is not searched:
    another build's version is unknown)."""
    path = binary_path(cache_dir)
    return path if path.is_file() and os.access(path, os.X_OK) else None


def install_command(go: str = "go") -> list[str]:
    """argv of the build: `go install` of the pinned `cmd/server`, its version stamped into the binary
    (a plain build reports "git" at /version)."""
    return [go, "install", "-trimpath", f"-ldflags=-X {TOXIPROXY_MODULE}.Version={TOXIPROXY_VERSION}",
            f"{TOXIPROXY_MODULE}/cmd/server@v{TOXIPROXY_VERSION}"]


def install_hint(cache_dir: Path | None = None) -> str:
    """The command that installs the pinned binary, for error messages."""
    return f"GOBIN={binary_path(cache_dir).parent} {shlex.join(install_command())} (about 2 minutes cold)"


def install(timeout_s: float = DEFAULT_INSTALL_TIMEOUT_S, *, cache_dir: Path | None = None,
            tracker: ProcessTracker | None = None) -> Path:
    """Build the pinned server into the tool cache (once; an installed one is returned as is).

    The build's output goes to `<install_dir>/install.log`; the binary is moved into place only once the
    build succeeded. Raises ToxiproxyUnavailable (with the log's tail) if Go is missing, the build fails
    or it takes longer than `timeout_s`.
    """
    found = locate(cache_dir)
    if found is not None:
        return found
    go = shutil.which("go")
    if go is None:
        raise ToxiproxyUnavailable(f"Go is not on PATH; it builds toxiproxy: {install_hint(cache_dir)}")
    home = install_dir(cache_dir)
    staging = home / f"bin.tmp-{os.getpid()}"
    staging.mkdir(parents=True, exist_ok=True)
    log_path = home / "install.log"
    env = {**os.environ, "GOBIN": str(staging), "GOTOOLCHAIN": "local"}
    try:
        result = run_logged(shlex.join(install_command(go)), cwd=home, env=env, log_path=log_path,
                            timeout_s=timeout_s, tracker=tracker)
        built = staging / BINARY_NAME
        if not result.ok or not built.is_file():
            why = f"timed out after {timeout_s:.0f} s" if result.timed_out else f"exit code {result.returncode}"
            raise ToxiproxyUnavailable(f"building toxiproxy {TOXIPROXY_VERSION} failed ({why}); "
                                       f"{log_path}:\n{tail(log_path)}")
        target = binary_path(cache_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(built, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
