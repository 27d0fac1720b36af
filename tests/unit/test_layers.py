"""The package layout is the pipeline: each layer imports only from the layers below it, and no module
imports itself back through others (no circle, inside a package either).

Checked on the source, so a new upward import fails here rather than as a cycle at run time. Every import
counts: at module level, inside a function (a deferred import is still a dependency: the function cannot
run without the other module) and under `if TYPE_CHECKING:` (the annotations name the other module's types,
so the design depends on it even where Python does not load it). `from pgarena.x import y` is an import of
the submodule `pgarena.x.y` when there is one, else of `pgarena.x` itself (its `__init__`): a package's
`__init__` runs before any of its submodules in any case, so it is not counted as a dependency of every
import of one. Reading stored results (analysis, report) must not pull in the database driver or an HTTP
client.
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


def _modules(root: Path = PACKAGE) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _module_name(path: Path, root: Path) -> str:
    """'pgarena.report.figures' for root/report/figures.py, 'pgarena.report' for root/report/__init__.py."""
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module → the modules of the same package tree it imports (every import, see the module's docstring)."""
    names = {_module_name(p, root): p for p in _modules(root)}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the importing module's package upwards
                    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets |= {f"{base}.{a.name}" if f"{base}.{a.name}" in names else base for a in node.names}
        graph[name] = {t for t in targets if t in names and t != name}
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every set of modules that import each other round a circle (strongly connected components of more
    than one module, Tarjan's algorithm), each as one circle through them: ['a', 'b', 'a']."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_circle_through(graph, component) for component in components]


def _circle_through(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One circle from the component's first module back to it (breadth first: the shortest)."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph[node] & members):
            if nxt == start:
                return [*paths[node], start]
            if nxt not in paths:
                paths[nxt] = [*paths[node], nxt]
                queue.append(nxt)
    return component  # unreachable: a strongly connected component always closes


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


def test_no_import_circle_anywhere_in_the_package():
    assert [" → ".join(circle) for circle in import_circles(import_graph())] == []


def test_the_circle_check_catches_a_made_up_circle_inside_one_package(tmp_path):
    """a → b at module level, b → c, c → a inside a function and through `from pkg.sub import a`: one circle;
    d imports a and the package's __init__ re-exports d, which is no circle."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from pkg.sub.d import thing\n")
    (package / "sub" / "a.py").write_text("from pkg.sub import b\n")
    (package / "sub" / "b.py").write_text("from . import c\n")
    (package / "sub" / "c.py").write_text("def later():\n    from pkg.sub import a\n")
    (package / "sub" / "d.py").write_text("import pkg.sub.a\nthing = 1\n")
    graph = import_graph(package)
    assert graph["pkg.sub.c"] == {"pkg.sub.a"} and graph["pkg.sub"] == {"pkg.sub.d"}
    assert import_circles(graph) == [["pkg.sub.a", "pkg.sub.b", "pkg.sub.c", "pkg.sub.a"]]
    (package / "sub" / "c.py").write_text("def later():\n    return 1\n")
    assert import_circles(import_graph(package)) == []


@pytest.mark.parametrize("module", ["pgarena.report", "pgarena.analysis.compare", "pgarena.contract.workloads"])
def test_reading_results_needs_no_database_driver_or_http_client(module):
    code = (f"import sys, {module}; "
            "print(sorted(m for m in ('psycopg', 'httpx', 'psutil') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
