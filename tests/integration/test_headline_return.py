"""A budgeted bench-like run: the headline stops for the later tables' least rounds, they stop there, and the headline
comes back for the rest of the budget, its rounds numbered on from where it stopped (pipeline/rounds.py
`headline_returns`; real fixture stacks and database, a fake generator)."""

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


def test_the_headline_returns_for_what_the_later_tables_leave(tmp_path, monkeypatch, fixture_env):
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
    # ends every stint
    monkeypatch.setattr(scheduler, "_race", lambda cells, *args: {cell: None for cell in cells})
    measure = InterleavedRun.measure

    def swinging(self, phase, slot):  # the window as stored too: the return judges the rounds before from the cells
        figure = measure(self, phase, slot)
        if figure is None:
            return None
        window = phase.cells[(slot.stack, *slot.cell)].repetitions[-1]
        window.rps = figure[0] * math.exp(0.5 * (-1) ** (slot.round + (slot.stack == "fixture-b")))
        return window.rps, figure[1]

    monkeypatch.setattr(InterleavedRun, "measure", swinging)
    config = build_config(project_dir=tmp_path, overrides={
        "ceiling_s": 0, "stacks_dir": stacks_dir, "results_dir": tmp_path / "results", "run_id": "back",
        "stacks": ["fixture-a", "fixture-b"], "workloads": ["static", "users"], "users_limits": [5], "vus": [1],
        "warmup_s": 0.1, "duration_s": 0.2, "rewarm_s": 0.1, "repetitions": 3, "max_repetitions": 400,
        "cell_budget_s": 400, "budget_s": 45, "headroom": False, "warmup_cap_s": 0.5,
        # the later tables' warm-ups are forecast at their 8 s cap and end steady at once: what they leave is the
        # headline's
        "later_tables": LaterTables(duration_s=0.2, rewarm_s=0.1, warmup_cap_s=8, repetitions=2)})
    lines: list[str] = []
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="t", log=lines.append)
    results = load(run_dir)
    assert results.status == "complete"
    headline, closed = results.schedule.phases
    assert (closed.rounds, closed.stop_reason, closed.yielded) == (2, "budget", True), closed
    assert headline.returned_after is not None and headline.rounds > headline.returned_after >= 3, headline
    assert headline.stop_reason == "budget"
    for cell in (c for c in results.cells if c.workload == "static"):
        taken = [r.round for r in cell.repetitions]
        assert sorted(taken) == list(range(1, headline.rounds + 1)), "every round once: none taken again"
        assert cell.summary.final_look, "measured in every round of both stints: the final look"
    for cell in (c for c in results.cells if c.workload == "users"):
        assert sorted(r.round for r in cell.repetitions) == [1, 2] and cell.summary.stop_reason == "budget"
    order = [i for i, line in enumerate(lines) if line.startswith(("headline phase:", "closed phase:"))]
    said = [lines[i] for i in order]
    back = next(i for i, line in enumerate(said) if f"from round {headline.returned_after + 1}" in line)
    assert any(line.startswith("closed phase:") for line in said[:back]), "the return comes after the later tables"
    report = (run_dir / "report.md").read_text()
    assert f"rounds {headline.returned_after + 1}–{headline.rounds} after the later tables' least rounds" in report
    assert "the time left going to the headline's return" in report
