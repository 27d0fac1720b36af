"""--db-rtt on crafted data: cells per round trip with their own keys and tables, the throughput-by-round-trip
table, the connection count behind a proxy."""

from __future__ import annotations

from pgarena.analysis.ranking import comparable_groups
from pgarena.analysis.rtt import rtt_rows
from pgarena.config.run import build_config
from pgarena.config.stackdef import load_stacks
from pgarena.db.connections import ConnectionPoller
from pgarena.pipeline.plan import plan_cells
from pgarena.report.network import rtt_section
from tests.conftest import FIXTURE_STACKS
from tests.unit.test_compare import make_cell, make_run
from tests.unit.test_rest_graphql import ranked


def test_every_cell_is_planned_at_every_round_trip_with_its_own_key(tmp_path):
    config = build_config(project_dir=tmp_path, overrides={"db_rtt_ms": ["0", "2ms"], "workloads": ["users"],
                                                           "users_limits": [20], "vus": [1, 50]})
    stack = next(s for s in load_stacks(FIXTURE_STACKS)[0] if s.id == "fixture-good")
    cells = plan_cells(config, stack, "oha")
    assert [(c.db_rtt_ms, c.vus) for c in cells] == [(0.0, 1), (0.0, 50), (2.0, 1), (2.0, 50)]
    assert len({c.key for c in cells}) == 4 and cells[2].key[-1] == "rtt=2ms"
    direct = plan_cells(config.model_copy(update={"db_rtt_ms": []}), stack, "oha")
    assert all(c.db_rtt_ms is None and len(c.key) == 5 for c in direct)  # keys of earlier runs unchanged


def _at(stack, rps, rtt):
    cell = ranked(make_cell(stack, rps, workload="tx", rows=None))
    return cell.model_copy(update={"db_rtt_ms": rtt})


def test_each_round_trip_is_its_own_table_and_the_fall_is_tabled():
    cells = [_at("pgx", [1000, 1010, 990], 0.0), _at("libpq", [600, 610, 590], 0.0),
             _at("pgx", [500, 505, 495], 2.0), _at("libpq", [150, 152, 148], 2.0)]
    run = make_run("r", cells)
    assert len(comparable_groups(run.cells)) == 2
    rtts, rows = rtt_rows(run)
    assert rtts == [0.0, 2.0] and {r.stack: round(r.share(2.0), 2) for r in rows} == {"pgx": 0.5, "libpq": 0.25}
    text = rtt_section(run)
    assert "| pgx | tx | 50 (oha) | 1,000 (1.00×) | 500 (0.50×) |" in text


def test_behind_a_proxy_connections_are_counted_on_the_stack_side():
    poller = ConnectionPoller("postgresql://nowhere", "role", ports=lambda: {40001, 40002, 40003}, direct=True)
    poller._conn = object()  # never used in direct mode
    poller._poll()
    assert poller.peak == 3 and poller.error is None
