"""scripts/observer_cost.py: the figures it derives from its windows (the runs themselves need a built stack,
PostgreSQL and oha; the lead runs it on a quiet machine)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


@pytest.fixture(scope="module")
def oc():
    sys.path.insert(0, str(SCRIPTS))  # it imports measurer_overhead from beside itself
    try:
        yield importlib.import_module("observer_cost")
    finally:
        sys.path.remove(str(SCRIPTS))
        for name in ("observer_cost", "measurer_overhead"):
            sys.modules.pop(name, None)


def _conn(conn_id: int, round_trips: int, setup: int = 0) -> dict:
    return {"id": conn_id, "counts": {"round_trips": round_trips, "setup_round_trips": setup}}


def test_relayed_round_trips_count_new_connections_whole_and_their_set_up(oc):
    before = [_conn(1, 100, 3), _conn(2, 50, 3)]
    after = [_conn(1, 170, 3), _conn(2, 50, 3), _conn(3, 20, 4)]
    assert oc.relayed_round_trips(before, after) == 70 + 0 + 24
    assert oc.relayed_round_trips([], after) == 173 + 53 + 24


def _window(oc, workload, round_no, arm, p50, p99, cpu=None, trips=None, requests=1000, rps=200.0):
    return oc.ArmWindow(workload=workload, round=round_no, arm=arm, rps=rps, requests=requests, failures=0,
                        p50_ms=p50, p99_ms=p99, observer_cpu_seconds=cpu, round_trips=trips)


def test_latency_is_paired_by_round_and_rounds_missing_an_arm_or_unmeasured_are_left_out(oc):
    windows = [
        _window(oc, "tx", 0, "direct", 9.0, 90.0), _window(oc, "tx", 0, "observed", 1.0, 1.0),  # warm-up
        _window(oc, "tx", 1, "observed", 1.10, 5.0), _window(oc, "tx", 1, "direct", 1.00, 4.0),
        _window(oc, "tx", 2, "direct", 2.00, 6.0), _window(oc, "tx", 2, "observed", 2.05, 6.5),
        _window(oc, "tx", 3, "direct", 3.00, 7.0),  # its observed window is missing (budget)
        _window(oc, "perf-test", 1, "direct", 5.0, 5.0), _window(oc, "perf-test", 1, "observed", 6.0, 6.0),
    ]
    assert oc.paired_differences(windows, "tx", "p50_ms") == pytest.approx([0.10, 0.05])
    assert oc.paired_differences(windows, "tx", "p99_ms") == pytest.approx([1.0, 0.5])


def test_summary_gives_cpu_per_round_trip_and_added_latency_with_t_intervals(oc):
    windows = []
    for round_no, (direct, observed, cpu) in enumerate([(1.00, 1.10, 0.40), (1.00, 1.20, 0.50),
                                                        (1.00, 1.30, 0.60)], start=1):
        windows += [_window(oc, "tx", round_no, "direct", direct, 10.0),
                    _window(oc, "tx", round_no, "observed", observed, 10.0 + round_no, cpu=cpu, trips=10_000)]
    s = oc.summarize(windows, "tx", 200.0)
    assert s["round_trips_per_request"] == pytest.approx(10.0)  # 30,000 round trips over 3,000 requests
    cpu = s["observer_cpu_us_per_round_trip"]  # 40, 50, 60 µs
    assert (cpu["n"], cpu["median"], cpu["mean"]) == (3, pytest.approx(50.0), pytest.approx(50.0))
    # s = 10, t*(0.95, 2) = 4.303: 50 ± 24.84
    assert cpu["ci95_low"] == pytest.approx(25.16, abs=0.01) and cpu["ci95_high"] == pytest.approx(74.84, abs=0.01)
    p50 = s["added_p50_us"]  # +100, +200, +300 µs
    assert p50["median"] == pytest.approx(200.0) and p50["ci95_low"] == pytest.approx(200 - 248.4, abs=0.1)
    assert s["added_p99_us"]["median"] == pytest.approx(2000.0)
    assert s["direct_p50_ms"] == pytest.approx(1.0) and s["observed_p50_ms"] == pytest.approx(1.2)
    table = oc.format_table([s])
    assert "| tx | 200 | 200 / 200 | 10.00 | 50 (mean 50, 25 to 75) | +200 (mean +200, -48 to +448) |" in table


def test_one_window_gives_a_figure_without_an_interval_and_none_gives_a_dash(oc):
    windows = [_window(oc, "tx", 1, "direct", 1.0, 2.0), _window(oc, "tx", 1, "observed", 1.5, 2.5, 0.1, 1000)]
    s = oc.summarize(windows, "tx", 100.0)
    assert s["observer_cpu_us_per_round_trip"]["ci95_low"] is None
    assert "| tx | 100 | 200 / 200 | 1.00 | 100 | +500 | +500 | 1.00 → 1.50 | 2.00 → 2.50 |" in oc.format_table([s])
    empty = oc.summarize([], "perf-test", 100.0)
    assert empty["round_trips_per_request"] is None and "| perf-test | 100 | 0 / 0 | — | — | — | — |" in \
        oc.format_table([empty])


def test_the_plan_must_fit_the_budget(oc):
    # the defaults fit the 3-minute budget with their set-up allowance
    assert oc.planned_seconds(2, oc.DEFAULT_ROUNDS, oc.DEFAULT_WINDOW_S, oc.DEFAULT_WARMUP_S) <= oc.DEFAULT_BUDGET_S
    with pytest.raises(oc.UsageError, match="the plan needs about"):
        oc.parse_args(["--rounds", "20"])
    with pytest.raises(oc.UsageError, match="--rounds must be at least 2"):
        oc.parse_args(["--rounds", "1"])
    args = oc.parse_args(["--rounds", "3", "--rows", "100"])
    assert args.workloads == ["tx", "perf-test"] and args.parameter == 100  # measurer_overhead.start_stack's names
