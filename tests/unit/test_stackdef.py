"""Unit tests for pgarena.config.stackdef: loading and validating stacks/<id>/stack.toml."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgarena.config.stackdef import (
    DEFAULT_BUILD_TIMEOUT_S,
    DEFAULT_HEALTH_PATH,
    DEFAULT_STARTUP_TIMEOUT_S,
    TEMPLATE_NAMES,
    BuildSpec,
    RunSpec,
    Stack,
    StackConfigError,
    StackDef,
    StackLoadError,
    load_stacks,
    missing_requirement,
    parse_stack_toml,
    render_template,
)
from pgarena.contract.workloads import SCENARIOS, WORKLOAD_NAMES
from tests.conftest import FOREIGN_APPS

REAL_STACKS_DIR = Path(__file__).parents[2] / "stacks"

HEADER = """\
title = "Test stack"
language = "Python"
framework = "none"
framework_version = "0"
driver = "none"
driver_version = "0"
"""


def minimal(stack_id: str = "demo", *, top: str = "", run: str = 'command = "./serve"', tail: str = "") -> str:
    """A valid stack.toml text, with extra top-level keys, [run] body and trailing tables."""
    return f'id = "{stack_id}"\n{HEADER}workloads = ["static"]\n{top}\n[run]\n{run}\n{tail}'


def write_stack(root: Path, folder: str, text: str) -> Path:
    path = root / folder / "stack.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def config_error(path: Path) -> str:
    with pytest.raises(StackConfigError) as info:
        parse_stack_toml(path)
    message = str(info.value)
    assert str(path) in message, "every error names the file"
    return message


# --- valid files ------------------------------------------------------------------------------------


def test_minimal_file_loads_with_defaults(tmp_path):
    definition = parse_stack_toml(write_stack(tmp_path, "demo", minimal()))
    assert isinstance(definition, StackDef)
    assert definition.id == "demo"
    assert definition.title == "Test stack"
    assert definition.workloads == ["static"]
    assert definition.build is None
    assert definition.requires == [] and definition.notes == []
    assert definition.pooler == "none"
    assert definition.prepared_statements is None
    assert definition.run.command == "./serve"
    assert definition.run.health_path == DEFAULT_HEALTH_PATH
    assert definition.run.startup_timeout_s == DEFAULT_STARTUP_TIMEOUT_S
    assert definition.run.port is None
    assert definition.run.env == {}


def test_full_file_loads(tmp_path):
    text = minimal(
        "full-stack",
        top='prepared_statements = false\n'
        + 'requires = ["sh"]\nnotes = ["a note"]\nversion_commands = [["sh", "-c", "echo 1"]]\n'
        + 'source_globs = ["*.py"]\nserver = "uvicorn"\npooler = "pgbouncer"\n',
        run='command = "serve --port ${port}"\nhealth_path = "/health"\nstartup_timeout_s = 5\nport = 8080\n'
        '[run.env]\nGOMAXPROCS = "${workers}"\nDB = "${database_url}"\n'
        '[build]\ncommand = "make -C ${stack_dir}"\ntimeout_s = 30\n[build.env]\nCC = "cc"\n',
    )
    d = parse_stack_toml(write_stack(tmp_path, "full-stack", text))
    assert d.prepared_statements is False
    assert d.requires == ["sh"] and d.notes == ["a note"]
    assert d.version_commands == [["sh", "-c", "echo 1"]]
    assert d.source_globs == ["*.py"] and d.server == "uvicorn" and d.pooler == "pgbouncer"
    assert isinstance(d.run, RunSpec) and isinstance(d.build, BuildSpec)
    assert d.run.health_path == "/health" and d.run.startup_timeout_s == 5 and d.run.port == 8080
    assert d.run.env == {"GOMAXPROCS": "${workers}", "DB": "${database_url}"}
    assert d.build.command == "make -C ${stack_dir}" and d.build.timeout_s == 30
    assert d.build.env == {"CC": "cc"}


def test_build_timeout_defaults(tmp_path):
    d = parse_stack_toml(write_stack(tmp_path, "demo", minimal(tail='[build]\ncommand = "make"\n')))
    assert d.build is not None and d.build.timeout_s == DEFAULT_BUILD_TIMEOUT_S


def test_definition_is_frozen(tmp_path):
    d = parse_stack_toml(write_stack(tmp_path, "demo", minimal()))
    with pytest.raises(Exception):
        d.title = "changed"  # type: ignore[misc]


# --- unknown keys -----------------------------------------------------------------------------------


def test_typo_top_level_key_names_key_and_allowed_keys(tmp_path):
    text = f'id = "demo"\n{HEADER}workload = ["static"]\n[run]\ncommand = "x"\n'
    path = write_stack(tmp_path, "demo", text)
    message = config_error(path)
    assert "'workload'" in message
    assert "unknown key" in message
    allowed_line = next(line for line in message.splitlines() if "'workload'" in line)
    for key in ("workloads", "requires", "run", "build", "title", "prepared_statements"):
        assert key in allowed_line


def test_typo_in_run_table_lists_run_keys(tmp_path):
    path = write_stack(tmp_path, "demo", minimal(run='comand = "./serve"'))
    message = config_error(path)
    assert "'run.comand'" in message
    allowed_line = next(line for line in message.splitlines() if "comand'" in line)
    assert "allowed keys:" in allowed_line
    for key in ("command", "health_path", "startup_timeout_s", "port", "env"):
        assert key in allowed_line
    assert "workloads" not in allowed_line, "the allowed keys are those of [run], not the top level"


def test_typo_in_build_table_lists_build_keys(tmp_path):
    path = write_stack(tmp_path, "demo", minimal(tail='[build]\ncommand = "make"\ntimeout = 5\n'))
    message = config_error(path)
    line = next(line for line in message.splitlines() if "'build.timeout'" in line)
    assert "timeout_s" in line and "command" in line and "env" in line
    assert "health_path" not in line


# --- wrong types and values -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("top", "run", "key"),
    [
        ("", 'command = ["./serve"]', "run.command"),
        ("", 'command = "x"\nstartup_timeout_s = "soon"', "run.startup_timeout_s"),
        ("", 'command = "x"\nstartup_timeout_s = 0', "run.startup_timeout_s"),
        ("", 'command = "x"\nport = 70000', "run.port"),
        ("", 'command = "x"\nhealth_path = "api/static"', "run.health_path"),
        ("", 'command = "x"\n[run.env]\nPORT = 8080', "run.env.PORT"),
        ('requires = "go"', 'command = "x"', "requires"),
        ('notes = [1, 2]', 'command = "x"', "notes"),
        ('prepared_statements = "sometimes"', 'command = "x"', "prepared_statements"),
        ('version_commands = ["go version"]', 'command = "x"', "version_commands"),
    ],
)
def test_wrong_type_names_the_key(tmp_path, top, run, key):
    message = config_error(write_stack(tmp_path, "demo", minimal(top=top, run=run)))
    assert f"key '{key}" in message


def test_wrong_type_of_title_names_the_key(tmp_path):
    text = minimal().replace('title = "Test stack"', "title = 5")
    message = config_error(write_stack(tmp_path, "demo", text))
    assert "key 'title'" in message


@pytest.mark.parametrize("workloads", ['"static"', '["static", "websocket"]', "[]"])
def test_bad_workloads_name_the_key(tmp_path, workloads):
    text = minimal().replace('workloads = ["static"]', f"workloads = {workloads}")
    message = config_error(write_stack(tmp_path, "demo", text))
    assert "'workloads" in message


@pytest.mark.parametrize("key", ["title", "driver_version", "workloads"])
def test_missing_required_key_is_named(tmp_path, key):
    text = "\n".join(line for line in minimal().splitlines() if not line.startswith(f"{key} ="))
    assert f"missing required key '{key}'" in config_error(write_stack(tmp_path, "demo", text))


def test_missing_run_command_is_named(tmp_path):
    text = minimal(run='health_path = "/"')
    assert "missing required key 'run.command'" in config_error(write_stack(tmp_path, "demo", text))


def test_run_table_is_required(tmp_path):
    text = f'id = "demo"\n{HEADER}workloads = ["static"]\n'
    assert "missing required key 'run'" in config_error(write_stack(tmp_path, "demo", text))


@pytest.mark.parametrize(
    ("top", "run", "key"),
    [
        ("", 'command = "x"\nport = "8080"', "run.port"),
        ('prepared_statements = "true"', 'command = "x"', "prepared_statements"),
    ],
)
def test_string_for_a_number_or_bool_is_a_type_error(tmp_path, top, run, key):
    message = config_error(write_stack(tmp_path, "demo", minimal(top=top, run=run)))
    assert f"key '{key}'" in message


# --- templates --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("run", "tail", "key"),
    [
        ('command = "serve --port ${prot}"', "", "run.command"),
        ('command = "serve"\n[run.env]\nPORT = "${prot}"', "", "run.env"),
        ('command = "serve"', '[build]\ncommand = "make ${prot}"', "build.command"),
        ('command = "serve"', '[build]\ncommand = "make"\n[build.env]\nX = "${prot}"', "build.env"),
    ],
)
def test_unknown_template_is_an_error_naming_it(tmp_path, run, tail, key):
    message = config_error(write_stack(tmp_path, "demo", minimal(run=run, tail=tail)))
    assert "${prot}" in message
    assert f"key '{key}" in message
    assert "workers" in message and "database_url" in message  # what is allowed


@pytest.mark.parametrize(
    "command",
    [
        "serve --port ${PGARENA_PORT}",
        "serve --port $PGARENA_PORT",
        "serve --port ${port} --host ${host} --workers ${workers}",
        "echo $${HOME}",
    ],
)
def test_known_and_upper_case_templates_are_allowed(tmp_path, command):
    d = parse_stack_toml(write_stack(tmp_path, "demo", minimal(run=f'command = "{command}"')))
    assert d.run.command == command


@pytest.mark.parametrize("name", TEMPLATE_NAMES)
def test_every_documented_template_name_is_accepted(tmp_path, name):
    d = parse_stack_toml(write_stack(tmp_path, "demo", minimal(run=f'command = "x"\n[run.env]\nV = "${{{name}}}"')))
    assert d.run.env["V"] == f"${{{name}}}"


def test_render_template_substitutes_known_names():
    values = {"port": "41234", "host": "127.0.0.1", "workers": "4"}
    assert render_template("serve ${host}:${port} -w ${workers}", values) == "serve 127.0.0.1:41234 -w 4"


def test_render_template_leaves_shell_variables_alone():
    text = "serve --port ${PGARENA_PORT} --host $PGARENA_HOST -w ${workers}"
    assert render_template(text, {"workers": "2"}) == "serve --port ${PGARENA_PORT} --host $PGARENA_HOST -w 2"


def test_render_template_repeats_and_plain_text():
    assert render_template("${port}/${port}", {"port": "1"}) == "1/1"
    assert render_template("no templates here", {}) == "no templates here"


# --- id and file problems ---------------------------------------------------------------------------


def test_id_must_equal_folder_name(tmp_path):
    message = config_error(write_stack(tmp_path, "other-folder", minimal("demo")))
    assert "key 'id'" in message
    assert "'demo'" in message and "'other-folder'" in message


@pytest.mark.parametrize("bad_id", ["Demo", "demo_stack", "-demo", "demo stack"])
def test_id_must_be_lower_case_kebab(tmp_path, bad_id):
    message = config_error(write_stack(tmp_path, bad_id, minimal(bad_id)))
    assert "key 'id'" in message


def test_invalid_toml_is_a_clear_error(tmp_path):
    path = write_stack(tmp_path, "demo", minimal() + "\nthis is = = not toml\n")
    message = config_error(path)
    assert "not valid TOML" in message


def test_missing_file_is_a_config_error(tmp_path):
    path = tmp_path / "demo" / "stack.toml"
    message = config_error(path)
    assert "cannot read" in message


# --- requirements -----------------------------------------------------------------------------------


def test_missing_requirement():
    assert missing_requirement([]) is None
    assert missing_requirement(["sh"]) is None
    reason = missing_requirement(["sh", "definitely-not-a-binary-xyz"])
    assert reason is not None and "definitely-not-a-binary-xyz" in reason and "PATH" in reason


def test_missing_requirement_with_a_path(tmp_path):
    present = tmp_path / "tool"
    present.write_text("")
    assert missing_requirement([str(present)]) is None
    reason = missing_requirement([str(tmp_path / "absent-tool")])
    assert reason is not None and "absent-tool" in reason


# --- load_stacks ------------------------------------------------------------------------------------


def test_load_stacks_keeps_good_stacks_and_reports_bad_ones(tmp_path):
    write_stack(tmp_path, "b-good", minimal("b-good"))
    write_stack(tmp_path, "a-good", minimal("a-good", top='requires = ["sh"]'))
    bad_typo = write_stack(tmp_path, "c-typo", minimal("c-typo", run='comand = "x"'))
    bad_toml = write_stack(tmp_path, "d-toml", "id = \n")
    bad_id = write_stack(tmp_path, "e-id", minimal("not-e-id"))
    (tmp_path / "f-no-toml").mkdir()  # a folder without stack.toml is not a stack
    (tmp_path / "README.md").write_text("not a stack")

    stacks, errors = load_stacks(tmp_path)

    assert [s.id for s in stacks] == ["a-good", "b-good"]
    assert all(isinstance(s, Stack) and s.available and s.unavailable_reason is None for s in stacks)
    assert stacks[0].directory == (tmp_path / "a-good").resolve()
    assert stacks[0].directory.is_absolute()

    assert all(isinstance(e, StackLoadError) for e in errors)
    by_id = {e.stack_id: e for e in errors}
    assert set(by_id) == {"c-typo", "d-toml", "e-id"}
    assert by_id["c-typo"].path == bad_typo and "comand" in by_id["c-typo"].message
    assert by_id["d-toml"].path == bad_toml and "not valid TOML" in by_id["d-toml"].message
    assert by_id["e-id"].path == bad_id and "folder name" in by_id["e-id"].message


def test_load_stacks_marks_missing_binary_unavailable(tmp_path):
    write_stack(tmp_path, "needs-xyz", minimal("needs-xyz", top='requires = ["sh", "definitely-not-a-binary-xyz"]'))
    stacks, errors = load_stacks(tmp_path)
    assert errors == []
    assert len(stacks) == 1
    stack = stacks[0]
    assert stack.id == "needs-xyz"
    assert not stack.available
    assert "unavailable here" in stack.unavailable_reason
    assert "definitely-not-a-binary-xyz" in stack.unavailable_reason


def test_load_stacks_of_an_empty_folder(tmp_path):
    assert load_stacks(tmp_path) == ([], [])


# --- the repository's own stacks --------------------------------------------------------------------


def test_real_stacks_all_parse_and_declare_every_workload():
    assert REAL_STACKS_DIR.is_dir()
    stacks, errors = load_stacks(REAL_STACKS_DIR)
    assert errors == [], "\n".join(e.message for e in errors)
    folders = sorted(p.parent.name for p in REAL_STACKS_DIR.glob("*/stack.toml"))
    assert folders, "the repository ships stacks"
    assert sorted(s.id for s in stacks) == folders
    for stack in stacks:
        # every stack serves seed 000's perf-test, and apps with code all REST workloads — except the GraphQL
        # matrix's own stacks (issue 13), which serve both sides of both REST-vs-GraphQL pairs instead
        workloads = set(stack.definition.workloads)
        assert workloads <= set(WORKLOAD_NAMES), stack.id
        if stack.id in FOREIGN_APPS:  # another benchmark's code, unmodified: it serves what it was written for
            assert workloads == {"perf-test", *SCENARIOS}, stack.id
            assert stack.definition.run.health_path == "workload:perf-test"  # it has no /api/static
            continue
        if "perf-test" not in workloads:
            assert {"users", "graphql", "users-posts", "graphql-nested"} <= workloads, stack.id
        elif stack.definition.build is not None:
            assert {"perf-test", "users", "static", "tx"} <= workloads, stack.id
        assert stack.definition.run.health_path.startswith("/")
        if not stack.available:
            assert stack.unavailable_reason.startswith("unavailable here: ")


def test_a_variant_extends_its_parent(tmp_path):
    write_stack(tmp_path, "base", minimal("base", run='command = "./server"\n[run.env]\nA = "1"\nB = "2"'))
    variant = tmp_path / "base-variant"
    variant.mkdir()
    (variant / "stack.toml").write_text(
        'extends = "../base"\nid = "base-variant"\ntitle = "Variant"\nprepared_statements = false\n'
        '[run.env]\nB = "3"\n')
    stacks, errors = load_stacks(tmp_path)
    assert errors == []
    child = next(s for s in stacks if s.id == "base-variant").definition
    parent = next(s for s in stacks if s.id == "base").definition
    assert child.title == "Variant" and child.prepared_statements is False
    assert child.language == parent.language and child.run.command == "./server"
    assert child.run.env == {"A": "1", "B": "3"}


def test_extends_errors_name_the_file(tmp_path):
    folder = tmp_path / "orphan"
    folder.mkdir()
    (folder / "stack.toml").write_text('extends = "../nowhere"\nid = "orphan"\n')
    assert "key 'extends': no stack.toml" in config_error(folder / "stack.toml")
    loop = tmp_path / "loop"
    loop.mkdir()
    (loop / "stack.toml").write_text('extends = "../loop"\nid = "loop"\n')
    assert "circular" in config_error(loop / "stack.toml")


# --- [database] and health_path = "workload:<name>" (issue 10, item 21) -----------------------------


def test_database_table_gives_the_managed_database_settings(tmp_path):
    path = write_stack(tmp_path, "demo", minimal(tail='[database]\nport = 5432\nuser = "benchmarkdbuser"\n'
                                                        'password = "benchmarkdbpass"\nname = "hello_world"\n'))
    database = parse_stack_toml(path).database
    assert (database.port, database.user, database.password, database.name) == (
        5432, "benchmarkdbuser", "benchmarkdbpass", "hello_world")
    assert parse_stack_toml(write_stack(tmp_path, "plain", minimal("plain"))).database is None


def test_database_table_keys_are_checked(tmp_path):
    typo = config_error(write_stack(tmp_path, "demo", minimal(tail='[database]\nusername = "x"\n')))
    assert "unknown key 'database.username' (did you mean 'user'?)" in typo
    assert "allowed keys: port, user, password, name" in typo
    port = config_error(write_stack(tmp_path, "other", minimal("other", tail='[database]\nport = "5432"\n')))
    assert "database.port" in port


@pytest.mark.parametrize("workload", ["users", "perf-test", "static"])
def test_health_path_may_name_a_read_only_workload(tmp_path, workload):
    text = minimal(run=f'command = "./serve"\nhealth_path = "workload:{workload}"').replace(
        'workloads = ["static"]', f'workloads = ["static", "{workload}"]')
    definition = parse_stack_toml(write_stack(tmp_path, "demo", text))
    assert definition.run.health_workload == workload
    assert RunSpec(command="x").health_workload is None


@pytest.mark.parametrize(("value", "expected"), [
    ("workload:tx", "must be one of perf-test, users, static"),
    ("workload:orders", "must be one of perf-test, users, static"),
    ("health", "must start with '/' or name a workload"),
])
def test_health_path_errors_say_what_is_allowed(tmp_path, value, expected):
    message = config_error(write_stack(tmp_path, "demo", minimal(run=f'command = "x"\nhealth_path = "{value}"')))
    assert "run.health_path" in message and expected in message


def test_health_workload_must_be_one_the_stack_declares(tmp_path):
    message = config_error(write_stack(tmp_path, "demo", minimal(run='command = "x"\nhealth_path = "workload:users"')))
    assert "names workload 'users', which the stack does not declare" in message


def test_a_stack_that_needs_a_newer_postgresql_is_made_unavailable_before_its_build():
    from pgarena.pipeline.runner import _too_old_for

    stacks, _ = load_stacks(REAL_STACKS_DIR)
    fraiseql = next(s for s in stacks if s.id == "rust-fraiseql")
    assert fraiseql.definition.min_postgres == 18

    class Results:
        def __init__(self):
            from pgarena.pipeline.plan import stack_info

            self.infos = {s.id: stack_info(s) for s in stacks}

        def stack(self, stack_id):
            return self.infos[stack_id]

    results, planned, lines = Results(), {s.id: [] for s in stacks}, []
    out = _too_old_for(stacks, "15.18 (Debian 15.18-0+deb12u1)", results, planned, lines.append)
    after = next(s for s in out if s.id == "rust-fraiseql")
    assert not after.available and "needs PostgreSQL 18 or newer; this run's server is 15.18" in after.unavailable_reason
    assert results.stack("rust-fraiseql").status == "unavailable" and "rust-fraiseql" not in planned
    assert all(s.available == t.available for s, t in zip(stacks, out) if s.id != "rust-fraiseql")
    assert _too_old_for(stacks, "18.4", Results(), {}, lines.append) == stacks


def test_a_fixed_port_runs_beside_the_others_unless_a_stack_before_it_fixes_the_same_one():
    from dataclasses import replace

    from pgarena.pipeline.plan import coexist_problem

    stacks, _ = load_stacks(REAL_STACKS_DIR)
    by_id = {s.id: s for s in stacks}
    seed, go = by_id["seed000-fastify-pg"], by_id["go-nethttp-pgx"]
    assert seed.definition.run.port == 3101 and go.definition.run.port is None
    assert coexist_problem(seed, [go]) is None, "its port is not one pgarena hands out (those are ephemeral)"
    assert coexist_problem(go, [seed]) is None
    twin = replace(seed, definition=seed.definition.model_copy(update={"id": "seed000-fastify-pg-copy"}))
    assert coexist_problem(twin, [go, seed]) == "it listens on the fixed port 3101, as seed000-fastify-pg does"
    assert coexist_problem(twin, [go]) is None, "only a stack already up together holds the port"
    assert coexist_problem(replace(twin, target_url="http://10.0.0.7:3101"), [seed]) is None, "a remote target's port is elsewhere"
