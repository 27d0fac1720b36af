"""Options several commands share (their types, names and help), and the parsers of list-valued options.

NOTE: a shared option's help is written here once; a command's own options stay in its module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from pgarena.cli.common import fail
from pgarena.config.profiles import PROFILES
from pgarena.config.targets import TargetError, parse_targets


def int_list(text: str | None, what: str) -> list[int] | None:
    """A comma-separated option (`what` names it) as integers; None when not given, a user error if malformed."""
    if text is None:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise fail(f"{what} must be comma-separated integers, got '{text}'") from None


def name_list(text: str | None) -> list[str] | None:
    """A comma-separated option as its non-empty, stripped parts; None when not given."""
    return None if text is None else [part.strip() for part in text.split(",") if part.strip()]


def target_urls(values: list[str] | None) -> dict[str, str] | None:
    """--target values as {id: base URL}; a malformed one is a user error (one line, exit 2)."""
    if not values:
        return None
    try:
        return parse_targets(values)
    except TargetError as exc:
        raise fail(str(exc)) from None


ConfidenceOpt = Annotated[Optional[float], typer.Option(
    "--confidence", help="the level at which all the claims of one table hold together, e.g. 0.99 (default 0.95)")]
StacksOpt = Annotated[Optional[str], typer.Option("--stacks", help="comma-separated stack ids (default: all)")]
WorkloadsOpt = Annotated[Optional[str], typer.Option(help="comma-separated: perf-test,users,static")]
ProfileOpt = Annotated[str, typer.Option(help=f"load profile: {', '.join(PROFILES)}")]
DbOpt = Annotated[Optional[str], typer.Option("--database-url", help="use this server instead of a managed one")]
AdminDbOpt = Annotated[Optional[str], typer.Option(
    "--admin-database-url", help="with --database-url: a superuser or pg_read_all_stats role, for database accounting")]
OverwriteOpt = Annotated[bool, typer.Option(
    "--allow-overwrite", help="with --database-url: use a schema or role named pgarena that pgarena did not create")]
DbPortOpt = Annotated[Optional[int], typer.Option("--db-port", help="managed database: fixed port (default: a free one)")]
DbUserOpt = Annotated[Optional[str], typer.Option("--db-user", help="managed database: the stacks' role (default: pgarena)")]
DbPasswordOpt = Annotated[Optional[str], typer.Option("--db-password", help=(
    "managed database: that role's password; with --target: the password of pgarena's role on --database-url"))]
DbNameOpt = Annotated[Optional[str], typer.Option("--db-name", help="managed database: its name (default: pgarena)")]
PostgresBinOpt = Annotated[Optional[Path], typer.Option(
    "--postgres-bin", help="managed database: folder of initdb, pg_ctl and postgres (any version; "
                           "default: the newest of npm's PostgreSQL 18 from setup, PATH, pg_config, /usr/lib/postgresql/*/bin)")]
TargetOpt = Annotated[Optional[list[str]], typer.Option(
    "--target", metavar="ID=URL", help="a stack already deployed at URL (http/https base URL), verified and loaded "
                                       "but neither built, started nor stopped; repeatable or comma-separated; needs "
                                       "--database-url and --db-password (docs/contract.md, Remote targets)")]
StacksDirOpt = Annotated[Path, typer.Option(help="folder of stack definitions")]
HistoryUrlOpt = Annotated[Optional[str], typer.Option(
    "--history-url", help="the history store: a postgresql:// URL or an SQLite file (default: history.sqlite in "
                          "--results-dir); every run is recorded there (docs/authors.md)")]
ResultsDirOpt = Annotated[Path, typer.Option(help="where run folders are written")]
RunIdOpt = Annotated[Optional[str], typer.Option(help="name of the run folder (default: timestamp)")]
