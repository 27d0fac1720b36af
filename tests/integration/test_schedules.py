"""Sequential against interleaved scheduling on a machine that slows down over time (real stacks, real oha).

Two fixture stacks answer `static` after a sleep that grows with wall-clock time from one shared epoch
(FIXTURE_DRIFT, from the first request of either), for both alike. "fast" is truly twice as fast as "slow".
Measured stack after stack on a machine 20 % slower every second, "slow" gets the early, fast seconds and comes
out ahead — the drift reverses the order. Measured in interleaved rounds on a machine 10 % slower every second
(it slows several times over the ~20 s from the epoch to the last round, more than the true 2×) and compared
within rounds, "fast" is ranked first with a paired interval that excludes 1. The interleaved drift is the
gentler one so that its windows stay far from the fixture's 100× cap: there, with 4 connections, a 0.5 s window
holds a handful of half-second requests and a count of 4 against 8 decided a round (a CI run of 303cf0d).
"""

from __future__ import annotations

import pytest

from pgarena.analysis.paired import paired_ranks, paired_ratio
from pgarena.config.profiles import build_config
from pgarena.load.engines import get_engine
from pgarena.load.engines.base import EngineUnavailable
from pgarena.pipeline import runner
from pgarena.results.store import load
from pgarena.system import speedprobe
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres

pytestmark = [needs_postgres, pytest.mark.postgres, pytest.mark.usefixtures("no_wire")]

BASE_MS = {"slow": 10.0, "fast": 5.0}
DRIFT_PER_S = {"sequential": 0.2, "interleaved": 0.1}


def _oha_or_skip() -> None:
    try:
        get_engine("oha").binary  # noqa: B018
    except EngineUnavailable as exc:
        pytest.skip(f"oha is not installed: {exc}")


def _stacks(folder, epoch_file, per_s: float):
    for name, base in BASE_MS.items():
        (folder / name).mkdir(parents=True)
        (folder / name / "stack.toml").write_text(
            f'extends = "{FIXTURE_STACKS / "fixture-good"}"\nid = "{name}"\n'
            f'[run]\ncommand = \'exec "$FIXTURE_PYTHON" {FIXTURE_STACKS / "fixture-good" / "server.py"}\'\n'
            f'[run.env]\nFIXTURE_DRIFT = "{epoch_file}:{base}:{per_s}"\n')
    return folder


def _run(tmp_path, schedule: str, run_id: str):
    stacks_dir = _stacks(tmp_path / f"stacks-{run_id}", tmp_path / f"epoch-{run_id}", DRIFT_PER_S[schedule])
    config = build_config(project_dir=tmp_path, overrides={"ceiling_s": 0,
        "stacks_dir": stacks_dir, "results_dir": tmp_path / "results", "run_id": run_id, "stacks": ["slow", "fast"],
        "workloads": ["static"], "vus": [4], "repetitions": 3, "max_repetitions": 6 if schedule == "interleaved" else 3,
        "warmup_s": 0.3, "duration_s": 0.5, "warmup_cap_s": 2, "cell_budget_s": 10, "headroom": False, "engine": "oha",
        "schedule": schedule, "schedule_seed": 5, "seed": 0,  # seed 0: "slow" runs first when sequential
        "rewarm_s": 0.2, "target_rel_half_width": 0.05})
    return load(runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="t", log=lambda _: None))


def _per_round(results) -> dict[str, list[float | None]]:
    rounds = max(r.round or 0 for c in results.cells for r in c.repetitions)
    out = {}
    for cell in results.cells:
        by_round = {r.round: r.rps for r in cell.repetitions}
        out[cell.stack] = [by_round.get(i) for i in range(1, rounds + 1)]
    return out


def test_sequential_reverses_and_interleaved_keeps_the_true_order(tmp_path, fixture_env, monkeypatch):
    _oha_or_skip()
    # a fixture stack's windows are ~30 ms apart (a real run's ~0.1 s): margins of 1 ms leave the probe's gap readings
    # a few units each
    monkeypatch.setattr(speedprobe, "GAP_MARGIN_NS", 1_000_000)
    sequential = _run(tmp_path, "sequential", "seq")
    medians = {c.stack: c.summary.rps.median for c in sequential.cells}
    assert medians["slow"] > medians["fast"], medians  # the drift landed on the stacks

    interleaved = _run(tmp_path, "interleaved", "int")
    assert interleaved.schedule is not None and interleaved.schedule.kind == "interleaved"
    assert interleaved.schedule.seed == 5 and interleaved.schedule.phases[0].name == "headline"
    per_round = _per_round(interleaved)
    assert all(v is not None for values in per_round.values() for v in values)
    ranks = dict(paired_ranks(per_round))
    assert ranks == {"fast": "1", "slow": "2"}, per_round
    ratio = paired_ratio(per_round["fast"], per_round["slow"])
    assert ratio is not None and ratio.low > 1.0
    assert {c.summary.stop_reason for c in interleaved.cells} <= {"settled", "max-repetitions"}
    # the speed probe read the idle gaps around the interleaved windows (system/speedprobe.py, load_starts), and
    # not the sequential ones, whose next load it does not see
    windows = [r for c in interleaved.cells for r in c.repetitions if r.reference_unit_ns]
    read = [r for r in windows if r.reference_gap_before_ns and r.reference_gap_after_ns]
    assert len(read) >= len(windows) // 2, [(r.reference_gap_before_ns, r.reference_gap_after_ns) for r in windows]
    assert all(0.2 < r.reference_gap_before_ns / r.reference_unit_ns < 5 for r in read), read
    sequential_windows = [r for c in sequential.cells for r in c.repetitions]
    assert not any(r.reference_gap_before_ns or r.reference_gap_after_ns for r in sequential_windows)
