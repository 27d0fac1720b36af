"""`pgarena list` (the stacks and workloads) and `pgarena engines` (the load generators)."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from pgarena.cli.common import PROJECT_DIR, err, out
from pgarena.cli.options import StacksDirOpt
from pgarena.config.stackdef import load_stacks
from pgarena.load.engines import EngineUnavailable, get_engine


def list_stacks(
    stacks_dir: StacksDirOpt = PROJECT_DIR / "stacks",
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
    as_markdown: Annotated[bool, typer.Option("--markdown", help="a Markdown table (docs/stacks.md)")] = False,
) -> None:
    """List stacks (language, framework, driver, availability) and workloads."""
    stacks, errors = load_stacks(stacks_dir)
    if as_markdown:
        from pgarena.pipeline.catalogue import stacks_catalogue

        print(stacks_catalogue(stacks))
        return
    if as_json:
        data = {
            "stacks": [{**s.definition.model_dump(mode="json", exclude={"build", "run"}), "available": s.available,
                        "unavailable_reason": s.unavailable_reason} for s in stacks],
            "errors": [{"stack": e.stack_id, "message": e.message} for e in errors],
        }
        out.print_json(json.dumps(data))
        return
    grid = Table(title=f"Stacks in {stacks_dir}")
    for column in ("id", "language", "framework", "driver", "pooler", "workloads", "available"):
        grid.add_column(column)
    for s in stacks:
        d = s.definition
        grid.add_row(d.id, d.language, f"{d.framework} {d.framework_version}", f"{d.driver} {d.driver_version}",
                     d.pooler, ", ".join(d.workloads),
                     ("yes" if s.available else f"no — {s.unavailable_reason}")
                     + ("" if d.min_postgres is None else f" (needs PostgreSQL {d.min_postgres} or newer)")
                     + ("" if d.competes else " (a demonstration: never ranked)"))
    out.print(grid)
    for e in errors:
        err.print(f"[red]{e.stack_id}[/]: {e.message}", highlight=False)
    from pgarena.contract.workloads import WORKLOAD_NAMES

    out.print(f"Workloads: {', '.join(WORKLOAD_NAMES)}; routes and answers in docs/contract.md")


def engines() -> None:
    """Show the load generators, their pinned versions and whether they are installed."""
    for name in ("oha", "k6"):
        engine = get_engine(name)
        try:
            out.print(f"{name}: {engine.binary} — {engine.version()} (pinned {engine.pinned_version})")
        except EngineUnavailable as exc:
            out.print(f"{name}: {exc}")
