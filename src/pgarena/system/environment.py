"""Environment metadata recorded with every run (pyperf's `_collect_metadata` is the model)."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from collections.abc import Iterable
from pathlib import Path

import psutil

from pgarena import __version__
from pgarena.results.models import Environment
from pgarena.system.process import first_line


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (platform.processor() elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_revision(project_dir: Path) -> str:
    """HEAD of the pgarena checkout, with '+dirty' when tracked files differ; 'unknown' outside git."""
    try:
        head = subprocess.run(
            ["git", "-C", str(project_dir), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(
            ["git", "-C", str(project_dir), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def collect(
    project_dir: Path,
    *,
    generator_cpus: list[int],
    server_cpus: list[int],
    version_commands: Iterable[list[str]] = (),
) -> Environment:
    """Describe this machine and the toolchains the selected stacks declare."""
    toolchains = {}
    for argv in version_commands:
        key = " ".join(argv)
        if key not in toolchains:
            toolchains[key] = first_line(argv) or "not available"
    return Environment(
        hostname=socket.gethostname(),
        cpu_model=cpu_model(),
        cpu_count=os.cpu_count() or 1,
        memory_bytes=psutil.virtual_memory().total,
        kernel=platform.release(),
        os=platform.platform(),
        python=platform.python_version(),
        pgarena_version=__version__,
        pgarena_git_revision=git_revision(project_dir),
        toolchains=toolchains,
        generator_cpus=generator_cpus,
        server_cpus=server_cpus,
        cpu_sets_shared=bool(set(generator_cpus) & set(server_cpus)),
    )
