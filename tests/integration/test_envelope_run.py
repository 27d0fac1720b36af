"""The envelope the report claims is the envelope that ran: real runs on the fixture stacks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pgarena.analysis.ranking import throughput_ranks
from pgarena.config.profiles import build_config
from pgarena.db.startline import shuffled
from pgarena.load.engines import EngineUnavailable, get_engine
from pgarena.pipeline import runner
from pgarena.results.store import load
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres
from tests.integration.test_pipeline import FakeOha

pytestmark = [pytest.mark.postgres, needs_postgres, pytest.mark.usefixtures("no_wire")]


def _config(tmp_path: Path, run_id: str, stacks: list[str], **overrides):
    values = {"stacks_dir": FIXTURE_STACKS, "results_dir": tmp_path / "results", "run_id": run_id, "stacks": stacks,
              "workloads": ["users"], "users_limits": [5], "vus": [4], "repetitions": 1, "warmup_s": 0.1,
              "duration_s": 0.1, "headroom": False, "ceiling_s": 0}  # no assertion here reads the ceiling
    values.update(overrides)
    return build_config(project_dir=tmp_path, overrides=values)


def _run(config, kind: str = "run", log=lambda _: None):
    return load(runner.execute(config, kind=kind, project_dir=PROJECT_DIR, command_line="test", log=log))


def test_a_real_run_records_peak_connections_warmup_memory_and_where_things_ran(tmp_path, fixture_env):
    engine = "oha"
    try:
        get_engine(engine).binary  # noqa: B018
    except EngineUnavailable:
        engine = "k6"
    config = _config(tmp_path, "real", ["fixture-good"], engine=engine, warmup_s=1.0, duration_s=1.0, pool_size=10,
                     warmup_cap_s=10.0)
    results = _run(config)
    (cell,) = results.cells
    info = results.stack("fixture-good")
    assert cell.status == "ok", cell.error
    # the fixture opens a connection per request: 4 VUs and pgarena's answer sampler (verify/checks.py: one
    # request at a time, beside the load) hold between 1 and 5 at once (a CI run on 2026-11-28 saw 5)
    assert cell.peak_connections is not None and 1 <= cell.peak_connections <= 4 + 1
    assert cell.repetitions[0].peak_connections is not None and cell.warmup.peak_connections is not None
    assert info.peak_connections is not None and info.peak_connections >= cell.peak_connections
    assert "pool-exceeded" not in cell.flags and "pool-exceeded" not in info.flags
    warm = cell.warmup
    assert warm is not None and len(warm.windows_rps) >= 3 and warm.seconds >= 1.0 and warm.cap_seconds == 10.0
    assert info.warmup_seconds == warm.seconds and info.warmup_steady == warm.steady
    assert cell.summary.stack_pss_peak_bytes and cell.summary.stack_pss_peak_bytes <= cell.summary.stack_rss_peak_bytes
    assert info.listen_addresses and all(a.startswith("127.0.0.1:") for a in info.listen_addresses)
    assert "listens-wide" not in info.flags
    assert results.database.cpu_affinity == sorted(config.server_cpus)
    assert results.environment.pgarena_cpus == sorted(config.generator_cpus)
    assert sorted(os.sched_getaffinity(0)) != [] and "CHECKPOINT" in (info.database_levelled or "")
    assert isinstance(results.config["seed"], int) and results.stack_order == ["fixture-good"]
    report = (Path(config.results_dir) / "real" / "report.md").read_text()
    assert "Peak connections" in report and "Peak PSS" in report


def test_a_stack_holding_more_connections_than_the_pool_is_flagged_and_not_ranked(tmp_path, monkeypatch,
                                                                                  fixture_env):
    # fixture-good opens a connection per request: 2 VUs and pgarena's sampler stay within a pool of 3
    results = _run(_config(tmp_path, "hog", ["fixture-pool-hog", "fixture-good"], pool_size=3, repetitions=2,
                           vus=[2], warmup_s=0.5, duration_s=0.5, warmup_cap_s=3))  # real oha: the database must see the load
    hog = next(c for c in results.cells if c.stack == "fixture-pool-hog")
    good = next(c for c in results.cells if c.stack == "fixture-good")
    assert hog.peak_connections is not None and hog.peak_connections >= 6
    assert "pool-exceeded" in hog.flags and "pool-exceeded" in results.stack("fixture-pool-hog").flags
    assert "pool-exceeded" not in good.flags and good.peak_connections is not None and good.peak_connections <= 3
    ranks = dict((c.stack, label) for c, label in throughput_ranks([hog, good]))
    assert ranks["fixture-pool-hog"] == "–" and ranks["fixture-good"] != "–"


def test_a_stack_bound_to_every_interface_is_flagged(tmp_path, fixture_env):
    results = _run(_config(tmp_path, "wide", ["fixture-listens-wide", "fixture-good"], workloads=["static"]),
                   kind="verify")
    wide = results.stack("fixture-listens-wide")
    assert "listens-wide" in wide.flags and any(a.startswith("0.0.0.0:") for a in wide.listen_addresses)
    assert "listens-wide" not in results.stack("fixture-good").flags


def test_more_workers_than_connections_refuses_a_stack_with_a_pool_per_worker(tmp_path, monkeypatch, fixture_env):
    stacks_dir = tmp_path / "stacks"
    (stacks_dir / "fixture-forks").mkdir(parents=True)
    (stacks_dir / "fixture-forks" / "stack.toml").write_text(
        f'extends = "{FIXTURE_STACKS / "fixture-good"}"\nid = "fixture-forks"\npool_per_worker = true\n'
        f'[run]\ncommand = \'exec "$FIXTURE_PYTHON" {FIXTURE_STACKS / "fixture-good" / "server.py"}\'\n')
    monkeypatch.setattr(runner, "get_engine", lambda name: FakeOha())
    lines: list[str] = []
    results = _run(_config(tmp_path, "forks", None, stacks_dir=stacks_dir, pool_size=2, workers=4), log=lines.append)
    info = results.stack("fixture-forks")
    assert info.status == "config_error" and "4 workers" in info.reason and "\n" not in info.reason
    assert results.status == "complete" and not results.cells


def test_the_stack_order_follows_the_recorded_seed(tmp_path, monkeypatch, fixture_env):
    monkeypatch.setattr(runner, "get_engine", lambda name: FakeOha())
    stacks = ["fixture-good", "fixture-pool-hog", "fixture-listens-wide"]
    results = _run(_config(tmp_path, "seeded", stacks, seed=5, workloads=["static"]), kind="verify")
    assert results.config["seed"] == 5 and results.stack_order == shuffled(stacks, 5)
