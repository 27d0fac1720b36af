"""Template data directories (db/template.py): what a template's key depends on, and the data parts a workload
list needs (db/data.py), which decide whether two runs may share one template."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgarena.db import template
from pgarena.db.data import TX_PART, data_definition, data_parts


def test_workloads_with_the_same_data_share_their_parts_in_load_order():
    assert data_parts(["users"]) == data_parts(["graphql", "users"]) == ("users.sql",)
    assert data_parts(["static"]) == ()
    assert data_parts(["tx", "users-posts", "perf-test", "perf-minimal"]) == (
        "perf_test.sql", "users.sql", "posts.sql", "scenarios.sql", TX_PART)
    assert data_parts(["perf-test"]) != data_parts(["perf-test", "tx"])


def test_the_definition_is_the_sql_text_and_pgbench_scale():
    from pgarena.contract.workloads import TX_SCALE

    text = data_definition(("users.sql", TX_PART))
    assert "CREATE TABLE pgarena.users" in text and f"pgbench -i -s {TX_SCALE} -I dtGvp" in text
    assert data_definition(("users.sql",)) != data_definition(("users.sql", TX_PART))


def _facts(**changed) -> dict[str, object]:
    given = {"bin_dir": Path("/nonexistent/bin"), "os_user": "postgres", "admin_user": "postgres",
             "app_user": "pgarena", "app_database": "pgarena", "parts": ("users.sql",), **changed}
    return template.facts(**given)


@pytest.mark.parametrize("changed", [
    {"bin_dir": Path("/other/bin")}, {"os_user": None}, {"admin_user": "pgarena_admin"}, {"app_user": "bench"},
    {"app_database": "hello"}, {"parts": ("users.sql", TX_PART)},
])
def test_anything_that_shapes_the_files_is_another_key(changed):
    assert template.key_of(_facts(**changed)) != template.key_of(_facts())


def test_the_same_facts_are_the_same_key_and_a_template_is_ready_only_with_its_manifest(tmp_path):
    key = template.key_of(_facts())
    assert key == template.key_of(_facts()) and len(key) == 16
    assert template.ready(tmp_path, key) is None
    (tmp_path / key / "data").mkdir(parents=True)
    assert template.ready(tmp_path, key) is None  # a build that died before its manifest
    (tmp_path / key / template.MANIFEST).write_text("{}")
    assert template.ready(tmp_path, key) == tmp_path / key / "data"


def test_publish_cuts_the_settings_back_to_initdbs(tmp_path):
    data = tmp_path / "build" / "data"
    data.mkdir(parents=True)
    (data / "postgresql.conf").write_text("# initdb's\nmax_wal_size = 1GB\n\n# pgarena settings profile: x\nport = 5\n")
    found = template.publish(tmp_path / "root", "k", data, {"format": 1}, "\n# pgarena settings profile: ")
    assert found == tmp_path / "root" / "k" / "data" and not data.exists()
    assert (found / "postgresql.conf").read_text() == "# initdb's\nmax_wal_size = 1GB\n"
    assert template.ready(tmp_path / "root", "k") == found


def test_the_folder_comes_from_the_environment_only_when_set(monkeypatch, tmp_path):
    monkeypatch.delenv(template.TEMPLATES_VARIABLE, raising=False)
    assert template.templates_from_environment() is None
    monkeypatch.setenv(template.TEMPLATES_VARIABLE, " ")
    assert template.templates_from_environment() is None
    monkeypatch.setenv(template.TEMPLATES_VARIABLE, str(tmp_path))
    assert template.templates_from_environment() == tmp_path
