"""`pgarena verify`: build, start and verify stacks, no load; exit 1 when a stack failed."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from pgarena.cli.common import PROJECT_DIR, err, execute_run, fail, out, run_config
from pgarena.cli.options import (
    AdminDbOpt,
    DbNameOpt,
    DbOpt,
    DbPasswordOpt,
    DbPortOpt,
    DbUserOpt,
    OverwriteOpt,
    PostgresBinOpt,
    ProfileOpt,
    ResultsDirOpt,
    RunIdOpt,
    StacksDirOpt,
    StacksOpt,
    TargetOpt,
    WorkloadsOpt,
    name_list,
    target_urls,
)
from pgarena.config.profiles import DEFAULT_PROFILE
from pgarena.results.store import load
from pgarena.verify.verification import failed_stacks


def verify(
    stacks: StacksOpt = None,
    workloads: WorkloadsOpt = None,
    profile: ProfileOpt = DEFAULT_PROFILE,
    target: TargetOpt = None,
    database_url: DbOpt = None,
    admin_database_url: AdminDbOpt = None,
    allow_overwrite: OverwriteOpt = False,
    db_port: DbPortOpt = None,
    db_user: DbUserOpt = None,
    db_password: DbPasswordOpt = None,
    db_name: DbNameOpt = None,
    postgres_bin: PostgresBinOpt = None,
    pool_size: Annotated[Optional[int], typer.Option(help="connections per stack")] = None,
    workers: Annotated[Optional[int], typer.Option(help="workers per stack")] = None,
    run_id: RunIdOpt = None,
    stacks_dir: StacksDirOpt = PROJECT_DIR / "stacks",
    results_dir: ResultsDirOpt = PROJECT_DIR / "results",
) -> None:
    """Build, start and verify stacks against the database; no load.

    Exit codes: 0 every stack passed, 1 a stack failed verification (a failed check, a ❌ column or
    database accounting, answers in a declared other shape (stack.toml [answer]), a bad-input case answered
    wrongly, or it did not build, start or keep running),
    2 a user error.
    """
    config = run_config(profile, stacks=name_list(stacks), workloads=name_list(workloads), database_url=database_url,
                        admin_database_url=admin_database_url, allow_overwrite=allow_overwrite or None,
                        db_port=db_port, db_user=db_user, db_password=db_password, db_name=db_name,
                        postgres_bin=postgres_bin, pool_size=pool_size, workers=workers, run_id=run_id,
                        stacks_dir=stacks_dir, results_dir=results_dir, targets=target_urls(target))
    run_dir = execute_run(config, "verify")
    failing = failed_stacks(load(run_dir))
    out.print(f"Report: {run_dir / 'report.md'}")
    for stack_id, why in failing.items():
        err.print(f"FAILED {stack_id}: {why}", highlight=False, markup=False, soft_wrap=True)
    if failing:
        raise fail(f"verification failed: {len(failing)} stack(s): {', '.join(failing)}", code=1)
