"""What every command shares: the two consoles, a user error as one line, the run configuration built from
options (errors naming the option the user typed), a run guarded against signals and user errors, and the
lines that say where a run's outputs are.
"""

from __future__ import annotations

import re
import shlex
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console

from pgarena.config.defaults import RUN_ID_PATTERN
from pgarena.config.profiles import build_config
from pgarena.config.redaction import redact_command
from pgarena.config.run import RunConfig
from pgarena.db.postgres import PostgresError
from pgarena.load.engines import EngineUnavailable
from pgarena.pipeline.context import RunError
from pgarena.pipeline.progress import RunProgress
from pgarena.pipeline.runner import describe_os_error, execute

err = Console(stderr=True)
"""Errors, warnings and notes (stderr)."""
out = Console(width=None if sys.stdout.isatty() else 160)
"""What a command prints (stdout); 160 columns when it is not a terminal."""

T = TypeVar("T")
PROJECT_DIR = Path.cwd()
"""The folder pgarena was started in: the default stacks and results folders are inside it."""
SOURCE_DIR = Path(__file__).resolve().parents[3]
"""The checkout pgarena runs from (its git revision is recorded in results)."""


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print `message` as one error line on stderr and return the Exit (code 2: a user error) to raise."""
    message = " ".join(line.strip() for line in message.splitlines() if line.strip())  # one line, always
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def check_run_id(run_id: str | None) -> None:
    """--run-id must be one plain folder name (RUN_ID_PATTERN); anything else is a user error."""
    if run_id is not None and not RUN_ID_PATTERN.fullmatch(run_id):
        raise fail(f"--run-id '{run_id}' is not a plain folder name")


def command_line() -> str:
    """This invocation as a shell command line, every password in it redacted (recorded in results)."""
    return shlex.join(["pgarena", *redact_command(sys.argv[1:])])


OPTION_OF_FIELD = {
    "warmup_s": "--warmup", "duration_s": "--duration", "cell_budget_s": "--cell-budget", "budget_s": "--budget",
    "equivalence_margin": "--margin", "confidence_level": "--confidence",
    "target_rel_half_width": "--target-width", "perf_test_rows": "--rows", "users_limits": "--limits",
    "post_records": "--post-records", "nested_depths": "--nested-depths", "payload_kb": "--payload-kb",
    "arrival_rates": "--rates", "slo_p99_ms": "--slo-p99", "slo_budget_steps": "--slo-steps",
    "http_timeout_s": "--http-timeout", "max_repetitions": "--max-repetitions", "repetitions": "--repetitions",
    "open_connections": "--open-connections", "generator_cpus": "--generator-cpus",
    "server_cpus": "--server-cpus", "pool_size": "--pool-size", "database_url": "--database-url",
    "stacks_dir": "--stacks-dir", "results_dir": "--results-dir", "run_id": "--run-id", "db_rtt_ms": "--db-rtt",
    "stack_rtt_ms": "--stack-rtt", "netns": "--netns", "topology": "--topology",
    "generators": "--generators", "rewarm_s": "--rewarm", "idle_rewarm_s": "--idle-rewarm",
    "pool_sizes": "--pool-size",
    "targets": "--target",
    "wire_under_load": "--wire-under-load", "wire_load_s": "--wire-load-seconds",
    "wire_load_max_requests": "--wire-load-requests",
}
"""RunConfig field → the command-line option that sets it, so that errors name what the user typed."""


def _option_names(message: str) -> str:
    """`message` with every RunConfig field name replaced by its command-line option."""
    return re.sub(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b|\brepetitions\b",
                  lambda m: OPTION_OF_FIELD.get(m.group(0), m.group(0)), message)


def run_config(profile: str, **overrides) -> RunConfig:
    """The profile with the given options (None: not given) as a validated RunConfig; an invalid value is a
    user error that names its command-line option."""
    try:
        return build_config(profile=profile, project_dir=PROJECT_DIR, overrides=overrides)
    except ValidationError as exc:
        first = exc.errors()[0]
        message = _option_names(first["msg"].removeprefix("Value error, "))
        if first["loc"]:
            field = str(first["loc"][0])
            option = OPTION_OF_FIELD.get(field, f"--{field.replace('_', '-')}")
            message = f"{option}: {message}"
        raise fail(message) from None
    except ValueError as exc:
        raise fail(_option_names(str(exc))) from None


def guarded(work: Callable[[str, Callable[[str], None], RunProgress], T]) -> T:
    """Call `work(command_line, log, progress)` as a run: SIGTERM ends it like Ctrl-C (exit 130, finished cells
    kept); a user's mistake is one line and exit 2."""
    def on_term(signum, frame):  # noqa: ARG001 — SIGTERM ends the run like Ctrl-C
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    line = command_line()
    try:
        return work(line, lambda line: out.print(line, highlight=False, soft_wrap=True, markup=False),
                    RunProgress(console=out))
    except (RunError, EngineUnavailable, PostgresError) as exc:
        raise fail(str(exc)) from None
    except OSError as exc:  # a full disk or a read-only folder outside the run's own bookkeeping
        raise fail(describe_os_error(exc)) from None
    except KeyboardInterrupt:
        err.print("interrupted: finished cells are kept in the run folder's results.json")
        raise typer.Exit(130) from None


def execute_run(config: RunConfig, kind: str, resume: tuple[Path, object] | None = None,
                budget_from: float | None = None) -> Path:
    """Run the pipeline (`kind`: 'run' or 'verify') under `guarded`; the run folder it wrote. `budget_from`: the
    Unix time the run's budget counts from (checked by `budget_start`), None for the run's own start."""
    return guarded(lambda command_line, log, progress: execute(
        config, kind=kind, project_dir=SOURCE_DIR, command_line=command_line, log=log, progress=progress,  # type: ignore[arg-type]
        resume=resume, budget_from=budget_from))  # type: ignore[arg-type]


BUDGET_FROM_PAST_S = 6 * 3600
"""--budget-from further back than this is taken for a mistake (make bench's setup takes minutes, not hours)."""
BUDGET_FROM_FUTURE_S = 5


def budget_start(budget_from: float | None, now: float) -> float | None:
    """--budget-from checked against the clock: a Unix time of the recent past (or now), else a user error."""
    if budget_from is None:
        return None
    if not now - BUDGET_FROM_PAST_S <= budget_from <= now + BUDGET_FROM_FUTURE_S:
        raise fail(f"--budget-from {budget_from:g} is not a Unix time of the last {BUDGET_FROM_PAST_S // 3600} hours "
                   f"(now is {now:.0f}): pass the time the command started, e.g. $(date +%s)")
    return min(budget_from, now)


def print_outputs(run_dir: Path) -> None:
    """Print where a run's results.json, report.md and report.html are."""
    out.print(f"Results: {run_dir / 'results.json'}")
    out.print(f"Report:  {run_dir / 'report.md'}")
    out.print(f"HTML:    {run_dir / 'report.html'}")
