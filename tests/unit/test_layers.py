"""The package layout is the pipeline: each layer imports only from the layers below it.

Checked on the source (every import, including ones inside functions), so a new upward import fails
here rather than as a cycle at run time. Reading stored results (analysis, report) must not pull in the
database driver or an HTTP client.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "pgarena"

ALLOWED: dict[str, set[str]] = {
    "contract": set(),
    "stats": set(),
    "results": {"contract", "stats"},
    "analysis": {"contract", "stats", "results"},
    "config": {"contract", "stats", "results"},
    "system": {"contract", "stats", "results", "config"},
    "db": {"contract", "stats", "results", "config", "system"},
    "verify": {"contract", "stats", "results", "analysis", "config", "system", "db"},
    "stack": {"contract", "stats", "results", "analysis", "config", "system", "db", "verify"},
    "load": {"contract", "stats", "results", "analysis", "config", "system", "db", "verify", "stack"},
    "report": {"contract", "stats", "results", "analysis"},
    "pipeline": {"contract", "stats", "results", "analysis", "config", "system", "db", "verify", "stack", "load",
                 "report"},
    "history": {"contract", "stats", "results", "analysis", "report"},
    "cli": {"contract", "stats", "results", "analysis", "config", "system", "db", "verify", "stack", "load",
            "report", "pipeline", "history"},
}
"""Layer → the layers it may import (its own is always allowed). `cli/` sits on top of all of them.
Bottom to top: `contract` (names, routes, ranges, verdicts) and `stats` (pure numbers) need nothing;
`results` is the document; `analysis` and `report` read it; `config`, `system`, `db`, `verify`, `stack`
and `load` do the work; `pipeline` plans and runs it. `history` keeps runs across time (issue 24): it reads
results like `report` and renders with report's style, but also writes a store (SQLite, or PostgreSQL through
psycopg, imported only for a PostgreSQL URL), so it sits above `report` rather than in it."""

TOP_LEVEL_MODULES = {"__init__", "__main__"}


def _layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "pgarena" else None


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return [(line, name) for line, name in found if name.startswith("pgarena.")]


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_module_lives_in_a_layer():
    loose = [p.relative_to(PACKAGE).as_posix() for p in _modules()
             if p.parent == PACKAGE and p.stem not in TOP_LEVEL_MODULES]
    assert loose == []
    layers = {p.relative_to(PACKAGE).parts[0] for p in _modules() if p.parent != PACKAGE}
    assert layers == set(ALLOWED)


def test_layers_import_only_from_layers_below():
    violations = []
    for path in _modules():
        rel = path.relative_to(PACKAGE)
        if len(rel.parts) == 1:
            continue
        layer = rel.parts[0]
        for line, name in _imports(path):
            target = _layer_of(name)
            if target and target != layer and target not in ALLOWED[layer]:
                violations.append(f"{rel}:{line} ({layer}) imports {name} ({target})")
    assert violations == []


def test_allowed_graph_has_no_cycle():
    order: list[str] = []
    remaining = dict(ALLOWED)
    while remaining:
        ready = [layer for layer, deps in remaining.items() if deps <= set(order)]
        assert ready, f"cycle among {sorted(remaining)}"
        order += sorted(ready)
        for layer in ready:
            del remaining[layer]


@pytest.mark.parametrize("module", ["pgarena.report", "pgarena.analysis.compare", "pgarena.contract.workloads"])
def test_reading_results_needs_no_database_driver_or_http_client(module):
    code = (f"import sys, {module}; "
            "print(sorted(m for m in ('psycopg', 'httpx', 'psutil') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
