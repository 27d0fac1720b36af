"""Unit tests for the managed database's settings: --db-* merged with the stacks' [database] tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgarena.config.run import build_config
from pgarena.config.stackdef import DatabaseSpec, RunSpec, Stack, StackDef
from pgarena.db.postgres import ClusterSettings, PostgresError, merge_cluster_settings
from pgarena.pipeline.context import RunError
from pgarena.pipeline.plan import cluster_settings
from pgarena.stack.launch import resolve_health_path


def _stack(stack_id: str, database: DatabaseSpec | None = None, health_path: str = "/api/static") -> Stack:
    definition = StackDef(id=stack_id, title=stack_id, language="x", framework="x", framework_version="0",
                          driver="x", driver_version="0", workloads=["static", "users", "perf-test"],
                          run=RunSpec(command="x", health_path=health_path), database=database)
    return Stack(definition, Path("/nonexistent") / stack_id)


def test_stacks_and_options_that_agree_share_one_cluster():
    merged = merge_cluster_settings(ClusterSettings(port=6543), {
        "a": ClusterSettings(user="bench", name="hello"), "b": ClusterSettings(user="bench", password="pw")})
    assert merged == ClusterSettings(port=6543, user="bench", password="pw", name="hello")


def test_conflicting_settings_are_refused_naming_both_sources():
    with pytest.raises(PostgresError, match="stack b wants the managed database's port different from stack a "
                                            r"\(5432 vs 6543\)"):
        merge_cluster_settings(ClusterSettings(), {"a": ClusterSettings(port=5432), "b": ClusterSettings(port=6543)})
    with pytest.raises(PostgresError, match=r"password different from the command line \(\*\*\*\)") as info:
        merge_cluster_settings(ClusterSettings(password="one"), {"a": ClusterSettings(password="two")})
    assert "one" not in str(info.value) and "two" not in str(info.value)


def test_run_config_and_stack_tables_give_the_clusters_settings(tmp_path):
    config = build_config(project_dir=tmp_path, overrides={"db_port": 6000})
    stacks = [_stack("a", DatabaseSpec(user="bench", name="hello")), _stack("b")]
    assert cluster_settings(config, stacks) == ClusterSettings(port=6000, user="bench", name="hello")
    with pytest.raises(RunError, match="wants the managed database's port"):
        cluster_settings(config, [_stack("c", DatabaseSpec(port=5432))])


def test_a_stack_with_fixed_settings_cannot_use_an_external_database(tmp_path):
    config = build_config(project_dir=tmp_path, overrides={"database_url": "postgresql://u:p@h/db"})
    with pytest.raises(RunError, match="stack a needs the managed database's settings \\(user bench\\); "
                                       "run it without --database-url"):
        cluster_settings(config, [_stack("a", DatabaseSpec(user="bench"))])


def test_described_settings_never_show_the_password():
    assert ClusterSettings(port=5432, password="pw").described() == "port 5432, password ***"


def test_health_path_naming_a_workload_becomes_its_verification_request(tmp_path):
    config = build_config(project_dir=tmp_path, overrides={"users_limits": [7, 20], "perf_test_rows": [3]})
    assert resolve_health_path(config, _stack("a", health_path="workload:users").definition) == "/api/users?limit=7"
    assert resolve_health_path(config, _stack("a", health_path="workload:perf-test").definition).startswith(
        "/api/perf-test?_records=3")
    assert resolve_health_path(config, _stack("a", health_path="/up").definition) == "/up"
