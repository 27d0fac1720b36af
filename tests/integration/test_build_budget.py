"""A build learns how long it may take (PGARENA_BUILD_TIMEOUT_S) and may decline at once (exit 75) instead of
spending a run's budget on a build that cannot finish (a cold tool build: rust-fraiseql's takes about an hour)."""

from __future__ import annotations

import pytest

from pgarena.config.profiles import build_config
from pgarena.pipeline import runner
from pgarena.results.store import load
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres

pytestmark = [needs_postgres, pytest.mark.postgres, pytest.mark.usefixtures("no_wire")]

BUDGET_S = 300


def _stack(folder, name: str, build: str) -> None:
    (folder / name).mkdir(parents=True)
    (folder / name / "stack.toml").write_text(
        f'extends = "{FIXTURE_STACKS / "fixture-good"}"\nid = "{name}"\n'
        f'[run]\ncommand = \'exec "$FIXTURE_PYTHON" {FIXTURE_STACKS / "fixture-good" / "server.py"}\'\n'
        f"[build]\ncommand = '{build}'\ntimeout_s = 3600\n")


def test_a_build_is_told_its_time_and_a_build_that_cannot_fit_says_why_at_once(tmp_path, fixture_env):
    stacks = tmp_path / "stacks"
    told = tmp_path / "told"
    _stack(stacks, "fits", f'echo "$PGARENA_BUILD_TIMEOUT_S" > {told}')
    _stack(stacks, "cold", 'echo compiling nothing; echo "a cold build takes 60 min, more than the '
                           '$PGARENA_BUILD_TIMEOUT_S s this build may take"; exit 75')
    config = build_config(project_dir=tmp_path, overrides={
        "ceiling_s": 0, "stacks_dir": stacks, "results_dir": tmp_path / "results", "run_id": "b",
        "stacks": ["fits", "cold"], "workloads": ["static"], "vus": [2], "repetitions": 3, "max_repetitions": 3,
        "warmup_s": 0.3, "duration_s": 0.3, "warmup_cap_s": 1, "cell_budget_s": 5, "headroom": False,
        "engine": "oha", "budget_s": BUDGET_S, "seed": 1})
    results = load(runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="t", log=lambda _: None))
    given = int(told.read_text())
    assert 0 < given <= BUDGET_S * 0.6, "the build's limit is the budget's build share, not its declared 3600 s"
    cold = next(s for s in results.stacks if s.id == "cold")
    assert cold.status == "build_failed"
    assert cold.reason is not None and cold.reason.startswith("not built: a cold build takes 60 min, more than the ")
    assert "keeps 40% of itself for measuring" in cold.reason and "(log: " in cold.reason
    assert cold.build_seconds is not None and cold.build_seconds < 5
    assert next(s for s in results.stacks if s.id == "fits").status == "ok"
