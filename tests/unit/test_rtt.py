"""--db-rtt on crafted data: cells per round trip with their own keys and tables, the throughput-by-round-trip
table, the connection count behind a proxy."""

from __future__ import annotations

from pgarena.analysis.ranking import comparable_groups
from pgarena.analysis.rtt import rtt_rows
from pgarena.config.profiles import build_config
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


def test_the_resilience_profile_needs_k6_and_one_stack_at_a_time(tmp_path):
    import pytest

    config = build_config(profile="resilience", project_dir=tmp_path)
    assert config.engine == "k6" and config.schedule == "sequential" and config.db_rtt_ms == [0.0]
    assert config.faults == ["pg-restart", "terminate", "stall", "reset"]
    for overrides in ({"engine": "oha"}, {"schedule": "interleaved"}):
        with pytest.raises(ValueError, match="resilience faults need"):
            build_config(profile="resilience", project_dir=tmp_path, overrides=overrides)


def test_the_resilience_section_ranks_by_recovery_and_shows_never_as_a_finding():
    from pgarena.report.resilience import figures, section
    from pgarena.results.models import FaultResult

    def fault(stack, status, after, failed):
        return FaultResult(stack=stack, workload="users", parameter=20, fault="stall", description="SIGSTOP 3 s",
                           engine="k6", rate_rps=100, peak_rps=200, status=status, recovered_after_s=after,
                           failed_requests=failed, first_ok_after_s=0.1, recovered_without_restart=True,
                           fault_start_s=7.0, fault_end_s=10.0, timeline_ok=[10] * 200, timeline_failed=[0] * 200)

    run = make_run("r", [ranked(make_cell("a", [100, 101, 99]))]).model_copy(update={"resilience": [
        fault("slow", "recovered", 2.5, 40), fault("stuck", "never-recovered", None, 900),
        fault("quick", "recovered", 0.3, 5)]})
    text = section(run)
    rows = [line for line in text.splitlines() if line.startswith("| ") and "Stack" not in line and "---" not in line]
    assert [r.split(" | ")[1] for r in rows] == ["quick", "slow", "stuck"]
    assert rows[0].startswith("| 1 |") and "**never**" in rows[2] and rows[2].startswith("| 3 |")
    assert len(figures(run)) == 3 and figures(run)[0]["layout"]["shapes"][0]["x1"] == 10.0


def test_a_segment_starts_before_a_window_without_a_poll():
    """Before a window the segment is only started: a poll there would count for the segment it ends, and costs a
    psutil scan of the stack's sockets between windows."""
    polls = []
    poller = ConnectionPoller("postgresql://nowhere", "role", ports=lambda: polls.append(1) or {40001}, direct=True)
    poller._conn = object()  # never used in direct mode
    assert poller.take_peak(poll=False) is None and polls == []
    assert poller.take_peak() == 1 and len(polls) == 1
