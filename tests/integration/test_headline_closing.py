"""A budgeted bench-like run whose headline its moving deadline ends: the later table still gets its least rounds
(pipeline/rounds.py `HEADLINE_CLOSE_S`; real fixture stacks and database, a fake generator). Without the headline's
closing left out of its deadline, the headline stopped with the later table's forecast left, less under a round, and
its own closing (its cells' checks, its report) took the rest: the later phase then left its table out."""

from __future__ import annotations

import math

import pytest

from pgarena.config.profiles import build_config
from pgarena.config.run import LaterTables
from pgarena.load import scheduler
from pgarena.pipeline import rounds, runner
from pgarena.pipeline.interleaved import InterleavedRun
from pgarena.results.store import load
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres
from tests.integration.test_pipeline import FakeOha

pytestmark = [needs_postgres, pytest.mark.postgres, pytest.mark.usefixtures("no_wire")]


def test_the_headline_ended_by_its_deadline_leaves_the_later_table_its_least_rounds(tmp_path, monkeypatch, fixture_env):
    stacks_dir = tmp_path / "stacks"
    for name in ("fixture-a", "fixture-b"):
        (stacks_dir / name).mkdir(parents=True)
        (stacks_dir / name / "stack.toml").write_text(
            f'extends = "{FIXTURE_STACKS / "fixture-good"}"\nid = "{name}"\n'
            f'[run]\ncommand = \'exec "$FIXTURE_PYTHON" {FIXTURE_STACKS / "fixture-good" / "server.py"}\'\n')
    monkeypatch.setattr(runner, "get_engine", lambda name: FakeOha())
    monkeypatch.setattr(rounds, "BUDGET_RESERVE_S", 3.0)
    monkeypatch.setattr(rounds, "PHASE_START_S", 1.0)
    # two stacks whose per-round log ratio is +1, -1, +1, …: its mean stays at 0 and its sd at 1, so that the pair is
    # neither ordered nor equivalent within a few hundred rounds, and no stack leaves the race: the time, not the data,
    # ends the headline
    monkeypatch.setattr(scheduler, "_race", lambda cells, *args: {cell: None for cell in cells})
    measure = InterleavedRun.measure

    def swinging(self, phase, slot):  # the window as stored too, as the verdict reads it
        figure = measure(self, phase, slot)
        if figure is None:
            return None
        window = phase.cells[(slot.stack, *slot.cell)].repetitions[-1]
        window.rps = figure[0] * math.exp(0.5 * (-1) ** (slot.round + (slot.stack == "fixture-b")))
        return window.rps, figure[1]

    monkeypatch.setattr(InterleavedRun, "measure", swinging)
    config = build_config(project_dir=tmp_path, overrides={
        "ceiling_s": 0, "stacks_dir": stacks_dir, "results_dir": tmp_path / "results", "run_id": "closing",
        "stacks": ["fixture-a", "fixture-b"], "workloads": ["static", "users"], "users_limits": [5], "vus": [1],
        "warmup_s": 0.1, "duration_s": 0.2, "rewarm_s": 0.1, "repetitions": 3, "max_repetitions": 400,
        "cell_budget_s": 400, "budget_s": 45, "headroom": False, "warmup_cap_s": 0.5,
        "later_tables": LaterTables(duration_s=0.2, rewarm_s=0.1, warmup_cap_s=2, repetitions=2)})
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="t", log=lambda _: None)
    results = load(run_dir)
    assert results.status == "complete"
    headline, closed = results.schedule.phases
    assert headline.stop_reason == "budget" and headline.rounds > 3, "its deadline, not its least rounds, ended it"
    assert all(c.summary.final_look for c in results.cells if c.workload == "static"), "the time ended it"
    assert closed.not_measured == [] and closed.rounds >= 2, closed
    assert all(len(c.repetitions) >= 2 for c in results.cells if c.workload == "users")
