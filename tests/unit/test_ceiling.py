"""The database ceiling's pgbench scripts and log reading (pgarena.db.ceiling)."""

from __future__ import annotations

from pgarena.db.ceiling import read_aggregate_logs, workload_script


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
