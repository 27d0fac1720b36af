"""Command line: turns arguments into a RunConfig, calls one library function, prints where things are.

User errors become one line on stderr and exit code 2; Ctrl-C exits 130 with the finished cells kept.
This root only assembles the app; each command group lives in its own module (common.py and options.py hold
what they share). `main` is the console entry point (pyproject.toml, `python -m pgarena`).
"""

from __future__ import annotations

import typer

from pgarena.cli import ab, calibrate, history, k8s, report, run, stacks, verify

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Benchmark HTTP API stacks on PostgreSQL: verified answers, fair envelopes, repeatable numbers.",
)
# NOTE: the order of registration is the order of `pgarena --help`.
app.command("list")(stacks.list_stacks)
app.command()(verify.verify)
app.command()(run.run)
app.command()(report.report)
app.command()(report.compare)
app.command()(calibrate.calibrate)
app.command("param-modes")(calibrate.param_modes)
app.command()(report.schema)
app.command()(stacks.engines)
app.add_typer(k8s.k8s_app, name="k8s")
app.command()(k8s.ingest)
app.command()(ab.ab)
app.command()(history.history)


def main() -> None:
    """Run the command line (the `pgarena` console script)."""
    app()

