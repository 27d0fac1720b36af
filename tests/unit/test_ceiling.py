"""The database ceiling's pgbench scripts and log reading (pgarena.db.ceiling)."""

from __future__ import annotations

from pgarena.config.profiles import build_config
from pgarena.db.ceiling import read_aggregate_logs, read_transaction_logs, workload_script
from pgarena.report.conditions import ceiling_text


def test_scripts_run_each_workloads_statements():
    perf = workload_script("perf-test", 100)
    assert perf is not None and perf.script is not None and "perf_test(:records::int" in perf.script
    assert "records=100" in perf.defines
    users = workload_script("users", 250)
    assert users is not None and "ORDER BY id LIMIT :limit" in (users.script or "") and "limit=250" in users.defines
    graphql = workload_script("graphql", None)
    assert graphql is not None and "limit=20" in graphql.defines and "email" not in (graphql.script or "")
    tx = workload_script("tx", None)
    assert tx is not None and tx.builtin == "tpcb-like"
    assert workload_script("static", None) is None


def test_partial_first_and_last_seconds_are_left_out(tmp_path):
    (tmp_path / "pgbench.123").write_text("1700000000 40 0 0\n1700000001 100 0 0\n1700000002 110 0 0\n"
                                          "1700000003 30 0 0\n")
    assert read_aggregate_logs(tmp_path) == (210, 2)
    (tmp_path / "pgbench.123").write_text("1700000000 40 0 0\n1700000001 100 0 0\n")
    assert read_aggregate_logs(tmp_path) == (140, 2)


def test_a_run_rate_is_read_from_transaction_completions_without_set_up(tmp_path):
    """Per-transaction log: client, number, µs, script, completion s, completion µs. 101 completions over
    0.5 s: 100 transactions after the first in 0.5 s = 200/s, whatever connecting took before the first."""
    lines = [f"0 {i} 5000 0 {1700000010 + (i * 5000) // 1_000_000} {(i * 5000) % 1_000_000}" for i in range(101)]
    (tmp_path / "pgbench.42").write_text("\n".join(lines) + "\n")
    count, seconds = read_transaction_logs(tmp_path)
    assert count == 100 and abs(seconds - 0.5) < 1e-9 and abs(count / seconds - 200) < 1e-6
    (tmp_path / "pgbench.42").write_text("0 0 5000 0 1700000010 0\n")
    assert read_transaction_logs(tmp_path) == (0, 0.0)


# --- the ceiling beside a cell: under the cell's conditions (issue 22 item 3) -----------------------------------

class _Proxy:
    host, port = "127.0.0.1", 45454

    def __init__(self) -> None:
        self.rtts: list[float] = []
        self.deleted = False

    def delete(self) -> None:
        self.deleted = True


class _Network:
    """The run's DbNetwork as database_ceiling uses it: a proxy of its own, set per condition."""

    def __init__(self) -> None:
        self.proxy = _Proxy()

    def route(self, name):
        assert name == "ceiling"
        return self.proxy

    def setter(self, proxy):
        return proxy.rtts.append


def _synthetic_ceilings(tmp_path, monkeypatch, cells, *, network=None):
    """database_ceiling over `cells` with pgbench replaced by a recorder: (the calls, the run)."""
    from pgarena.db.ceiling import CeilingMeasurement
    from pgarena.db.postgres import Database
    from pgarena.pipeline import baselines
    from pgarena.pipeline.context import RunContext
    from tests.unit.test_compare import make_run

    calls, warm = [], []

    def fake(db, workload, parameter, *, connections, seconds, cpus, log_dir, label, warm_up):
        warm.append(warm_up)
        rtt = network.proxy.rtts[-1] if network and db.port == _Proxy.port else None
        calls.append((workload, parameter, rtt, connections, db.port))
        tps = 1000.0 / (1 + (rtt or 0)) * connections
        return CeilingMeasurement(workload, parameter, connections, int(tps * 6), 6.0, "SELECT 1",
                                  (tps * 0.98, tps, tps * 1.02), (tps * 0.95, tps * 1.05))

    monkeypatch.setattr(baselines, "measure_ceiling", fake)
    run = make_run("r", cells, config={"pool_size": 10})
    config = build_config(project_dir=tmp_path, overrides={"ceiling_s": 2})
    db = Database(host="127.0.0.1", port=5432, user="u", password="p", name="d", admin_url="postgresql://x", managed=True)
    ctx = RunContext(config=config, engine=None, results=run, run_dir=tmp_path, db=db, log=lambda _: None,
                     network=network)
    baselines.database_ceiling(ctx, cells)
    assert warm[:1] == [True] and not any(warm[1:]), "one warm-up per workload × parameter"
    return calls, run


def test_a_1_vu_cell_at_20_ms_gets_the_ceiling_measured_at_20_ms_and_1_connection(tmp_path, monkeypatch):
    """Fed a synthetic run: a 1-VU cell at 20 ms gets a ceiling measured through the proxy at 20 ms over 1
    connection, and its share is of that ceiling (not of one measured direct at 10 connections)."""
    from tests.unit.test_compare import make_cell

    cells = [make_cell("a", [40, 40, 40], vus=1).model_copy(update={"db_rtt_ms": 20.0}),
             make_cell("a", [4000, 4000, 4000], vus=50).model_copy(update={"db_rtt_ms": 0.0}),
             make_cell("b", [3000, 3000, 3000], vus=50).model_copy(update={"db_rtt_ms": 0.0}),
             make_cell("a", [900, 900, 900], vus=1)]
    network = _Network()
    calls, run = _synthetic_ceilings(tmp_path, monkeypatch, cells, network=network)
    assert calls == [("perf-test", 10, None, 1, 5432), ("perf-test", 10, 0.0, 10, _Proxy.port),
                     ("perf-test", 10, 20.0, 1, _Proxy.port)], "each condition once, the round trip through the proxy"
    assert network.proxy.rtts == [0.0, 20.0] and network.proxy.deleted
    ceiling = run.ceiling_for(cells[0])
    assert ceiling is not None and (ceiling.db_rtt_ms, ceiling.connections) == (20.0, 1)
    assert ceiling.runs_tps and ceiling.tps_low < ceiling.tps < ceiling.tps_high
    assert ceiling_text(run, cells[0]) == f"{40 / (1000 / 21) * 100:.0f} %"  # 84 %, not 40 / 10,000
    assert ceiling_text(run, cells[3]) == "90 %"


def test_a_cell_above_its_ceiling_is_flagged_as_a_measurement_problem(tmp_path, monkeypatch):
    from pgarena.contract.flags import ABOVE_CEILING
    from pgarena.pipeline.baselines import flag_above_ceiling
    from pgarena.report.markdown import render_markdown
    from tests.unit.test_compare import make_cell
    from tests.unit.test_rest_graphql import ranked

    cells = [ranked(make_cell("fast", [12000, 12000, 12000], vus=50)), ranked(make_cell("slow", [5000, 5000, 5000]))]
    _, run = _synthetic_ceilings(tmp_path, monkeypatch, cells)  # 10 connections direct: 10,000 tps
    assert ceiling_text(run, cells[0]) == "120 % ⚠ above the ceiling" and ceiling_text(run, cells[1]) == "50 %"
    assert flag_above_ceiling(run) == [cells[0]] and cells[0].flags == [ABOVE_CEILING] and cells[1].flags == []
    assert flag_above_ceiling(run) == [], "flagged once"
    text = render_markdown(run)
    assert "120 % ⚠ above the ceiling" in text and "1 cell(s) above 100 %: a measurement problem" in text


def test_results_from_before_per_condition_ceilings_show_not_measured_where_conditions_differ():
    """An old ceiling (direct, the largest pool size) is still the ceiling of a direct cell at ≥ pool-size VUs,
    and no longer of a 1-VU cell."""
    from pgarena.results.models import DbCeiling
    from tests.unit.test_compare import make_cell, make_run

    cells = [make_cell("a", [900, 900, 900], vus=1), make_cell("a", [4500, 4500, 4500], vus=50)]
    run = make_run("r", cells, config={"pool_size": 10})
    run.ceilings.append(DbCeiling(workload="perf-test", parameter_name="rows", parameter=10, connections=10,
                                  transactions=45_000, seconds=5, tps=9000.0, protocol="prepared", statements="s"))
    assert ceiling_text(run, cells[0]) == "not measured" and ceiling_text(run, cells[1]) == "50 %"
