"""`pgarena calibrate`: the A/A check on this machine — copies of one stack measured by the ordinary run
pipeline as if they were different stacks, then the check (analysis/calibration.py) and its report.

Layout of the calibration's folder `results/<id>/`: `stacks/` holds the copies (each a stack.toml that
`extends` the original and builds and runs it in the original's folder, so every copy runs the same
binary), `run/` is the run (results.json, report.md, …), `calibration.md` the check's report. Nothing is
written to the user's stacks folder.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pgarena.analysis.calibration import AACheck, aa_check
from pgarena.config.run import RunConfig
from pgarena.config.stackdef import Stack
from pgarena.pipeline.context import Log, RunError
from pgarena.pipeline.plan import select_stacks
from pgarena.pipeline.progress import RunProgress
from pgarena.pipeline.runner import execute, new_run_id
from pgarena.report.calibration import calibration_markdown
from pgarena.report.conditions import not_measured_sentence
from pgarena.results.atomic import write_text_atomic
from pgarena.results.store import load

DEFAULT_STACK = "go-nethttp-pgx"
DEFAULT_COPIES = 4
DEFAULT_WORKLOADS = ("perf-test", "users", "static")
DEFAULT_VUS = (1, 50)
DEFAULT_ROWS = 1
DEFAULT_LIMIT = 20
MAX_ROUNDS = 200
"""The check's cap of rounds per table, above any profile's: its time budget, not a ranking run's cap, bounds
how sharp it gets (a table of copies as noisy as 0.13 per window needs ~50 rounds to fit within ±10 %)."""
CALIBRATION_FILE = "calibration.md"
RUN_FOLDER = "run"
STACK_DIR_TEMPLATE = "${stack_dir}"


@dataclass(frozen=True)
class Calibration:
    """A finished calibration: its folder, the run's folder, the check and the report's path."""

    folder: Path
    run_dir: Path
    check: AACheck
    report: Path


def _toml(value: str) -> str:
    """A TOML basic string (JSON's string escapes are TOML's)."""
    return json.dumps(value, ensure_ascii=False)


def _here(command: str, directory: Path) -> str:
    """`command` run in the original's folder, its `${stack_dir}` meaning that folder."""
    return f"cd {shlex.quote(str(directory))} && {command.replace(STACK_DIR_TEMPLATE, str(directory))}"


def copy_ids(stack_id: str, copies: int) -> list[str]:
    """'go-nethttp-pgx-aa1', … : the copies' ids."""
    return [f"{stack_id}-aa{i}" for i in range(1, copies + 1)]


def write_copies(original: Stack, copies: int, folder: Path) -> list[str]:
    """Write `copies` stack folders into `folder`, each a stack.toml that extends `original` under a new id,
    with its build and run commands run in the original's folder (any `${stack_dir}` in them or in their
    environment meaning that folder). Returns the copies' ids."""
    definition, directory = original.definition, original.directory
    ids = copy_ids(original.id, copies)
    for number, copy_id in enumerate(ids, start=1):
        lines = [f"extends = {_toml(str(directory))}", f"id = {_toml(copy_id)}",
                 f"title = {_toml(f'{definition.title} (A/A copy {number} of {copies})')}",
                 "source_globs = []", ""]
        for section, spec in (("build", definition.build), ("run", definition.run)):
            if spec is None:
                continue
            lines += [f"[{section}]", f"command = {_toml(_here(spec.command, directory))}", ""]
            moved = {k: v.replace(STACK_DIR_TEMPLATE, str(directory)) for k, v in spec.env.items()
                     if STACK_DIR_TEMPLATE in v}
            if moved:
                lines += [f"[{section}.env]", *(f"{k} = {_toml(v)}" for k, v in moved.items()), ""]
        (folder / copy_id).mkdir(parents=True)
        (folder / copy_id / "stack.toml").write_text("\n".join(lines), encoding="utf-8")
    return ids


def _original(config: RunConfig, stack_id: str) -> Stack:
    try:
        stacks, errors = select_stacks(config.model_copy(update={"stacks": [stack_id]}))
    except RunError as exc:  # an unknown id: named as the option the user typed
        raise RunError(str(exc).replace("--stacks:", "--stack:", 1)) from None
    if errors:
        raise RunError(f"--stack {stack_id}: {errors[0].message}")
    if not stacks[0].available:
        raise RunError(f"--stack {stack_id} cannot run here: {stacks[0].unavailable_reason}")
    return stacks[0]


def calibrate(config: RunConfig, *, stack_id: str = DEFAULT_STACK, copies: int = DEFAULT_COPIES,
              project_dir: Path, command_line: str, log: Log = print,
              progress: RunProgress | None = None, max_rounds: int | None = MAX_ROUNDS) -> Calibration:
    """Run the A/A check: `copies` copies of `stack_id` (from `config.stacks_dir`) through the ordinary run
    pipeline with `config` (its workloads, levels, schedule and budget), every pair of copies raced, up to
    `max_rounds` per table (None: `config`'s cap), then the check and its report.
    RunError for a user's mistake (an unknown or unavailable stack, fewer than 2 copies, a folder that exists)."""
    if copies < 2:
        raise RunError(f"--copies {copies}: an A/A check needs at least 2 copies")
    original = _original(config, stack_id)
    folder = config.results_dir / (config.run_id or f"calibrate-{new_run_id()}")
    try:
        folder.mkdir(parents=True)
    except FileExistsError:
        raise RunError(f"{folder} already exists; choose another --run-id") from None
    ids = write_copies(original, copies, folder / "stacks")
    log(f"A/A check: {copies} copies of {stack_id} in {folder / 'stacks'}")
    run_config = config.model_copy(update={"stacks_dir": folder / "stacks", "stacks": ids, "results_dir": folder,
                                           "run_id": RUN_FOLDER, "baseline": None,
                                           "resolve_every_pair": True})
    if max_rounds is not None:
        run_config = run_config.model_copy(update={
            "max_repetitions": max(config.max_repetitions, max_rounds),
            "cell_budget_s": max(config.cell_budget_s, max_rounds * config.duration_s)})
    run_dir = execute(run_config, kind="run", project_dir=project_dir, command_line=command_line, log=log,
                      progress=progress)
    return report_calibration(folder, run_dir, stack_id, ids)


def report_calibration(folder: Path, run_dir: Path, stack_id: str, ids: Sequence[str]) -> Calibration:
    """The check of a finished A/A run and its Markdown report, written to `folder/calibration.md`."""
    results = load(run_dir)
    check = aa_check(results, ids)
    path = folder / CALIBRATION_FILE
    skipped = not_measured_sentence(results.schedule.phases) if results.schedule is not None else None
    write_text_atomic(path, calibration_markdown(check, stack=stack_id, run_dir=str(run_dir),
                                                 hostname=results.environment.hostname, not_measured=skipped))
    return Calibration(folder=folder, run_dir=run_dir, check=check, report=path)
