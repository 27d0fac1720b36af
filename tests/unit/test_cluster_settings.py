"""Unit tests for the managed database's settings: --db-* merged with the stacks' [database] tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from pgarena.config.profiles import build_config
from pgarena.config.stackdef import DatabaseSpec, RunSpec, Stack, StackDef
from pgarena.db.cluster import ClusterSettings, merge_cluster_settings
from pgarena.db.postgres import PostgresError
from pgarena.pipeline.context import RunError
from pgarena.pipeline.plan import cluster_settings, fixed_port_in_rtt_run, ports_in_use, stack_schemas
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


def test_a_stack_names_the_schema_it_expects_pgarenas_objects_in(tmp_path):
    """stack.toml `[database] schema`: per stack, not a cluster setting; validated like every key."""
    config = build_config(project_dir=tmp_path)
    stacks = [_stack("a", DatabaseSpec.model_validate({"schema": "public"})), _stack("b"),
              _stack("c", DatabaseSpec.model_validate({"schema": "pgarena"}))]
    assert stack_schemas(stacks) == {"a": "public"}
    assert cluster_settings(config, stacks) == ClusterSettings()  # a schema alone fixes nothing of the cluster's
    for bad in ("Public", "pg_catalog", "information_schema", "1st", "a b", ""):
        with pytest.raises(ValidationError, match="schema"):
            DatabaseSpec.model_validate({"schema": bad})


def test_a_stack_that_names_a_schema_is_refused_on_a_users_own_database(tmp_path):
    config = build_config(project_dir=tmp_path, overrides={"database_url": "postgresql://u:p@h/db"})
    with pytest.raises(RunError, match="stack a expects pgarena's objects in schema public; on your own database "
                                       r"\(--database-url\) pgarena keeps them in schema pgarena only"):
        cluster_settings(config, [_stack("a", DatabaseSpec.model_validate({"schema": "public"}))])


def test_an_unknown_database_key_lists_schema_by_its_toml_name(tmp_path):
    from pgarena.config.stackdef import StackConfigError, parse_stack_toml

    folder = tmp_path / "a"
    folder.mkdir()
    (folder / "stack.toml").write_text(
        'id = "a"\ntitle = "a"\nlanguage = "x"\nframework = "x"\nframework_version = "0"\ndriver = "x"\n'
        'driver_version = "0"\nworkloads = ["static"]\n[run]\ncommand = "x"\n[database]\nschemas = "public"\n')
    with pytest.raises(StackConfigError, match=r"unknown key 'database.schemas' \(did you mean 'schema'\?\); "
                                               "allowed keys: port, user, password, name, schema"):
        parse_stack_toml(folder / "stack.toml")


def test_a_default_run_marks_a_stack_whose_fixed_port_is_taken_unavailable_not_the_whole_run(tmp_path):
    fixed = _stack("seed-app", DatabaseSpec(port=5432))
    default_run = build_config(project_dir=tmp_path)
    marked = ports_in_use(default_run, [fixed, _stack("b")], taken=lambda port: port == 5432)
    assert [s.available for s in marked] == [False, True]
    assert marked[0].unavailable_reason == ("unavailable here: its [database] port 5432 is in use on this machine "
                                            "(name it with --stacks once the port is free)")
    assert cluster_settings(default_run, marked) == ClusterSettings()  # the others run on pgarena's free port
    assert ports_in_use(default_run, [fixed], taken=lambda port: False)[0].available
    named = build_config(project_dir=tmp_path, overrides={"stacks": ["seed-app"]})
    assert ports_in_use(named, [fixed], taken=lambda port: True)[0].available  # named: the run says why it stops


def test_a_stack_with_a_fixed_database_port_is_left_out_of_a_round_trip_run(tmp_path):
    """seed 000's apps connect to 5432 whatever address pgarena gives them, so --db-rtt's proxy is never in their
    path: their cells would carry a round trip they never crossed."""
    fixed, free = _stack("seed-app", DatabaseSpec(port=5432)), _stack("b")
    rtt_run = build_config(project_dir=tmp_path, overrides={"db_rtt_ms": [0, 2]})
    marked = fixed_port_in_rtt_run(rtt_run, [fixed, free])
    assert [s.available for s in marked] == [False, True]
    assert marked[0].unavailable_reason == ("not in a --db-rtt run: its [database] port 5432 is fixed, so it would "
                                            "reach PostgreSQL directly, not through the round-trip proxy")
    assert fixed_port_in_rtt_run(build_config(project_dir=tmp_path), [fixed])[0].available  # no --db-rtt: kept
