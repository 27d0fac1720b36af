"""Unit tests for pgarena.config: profiles, overrides, validation, redaction and CPU sets."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from pgarena.config.defaults import (
    DEFAULT_ENGINE,
    DEFAULT_HTTP_TIMEOUT_S,
    DEFAULT_POOL_SIZE,
    PERF_TEST_MAX_ROWS,
    USERS_MAX_LIMIT,
    default_cpu_sets,
)
from pgarena.config.parsers import parse_rate
from pgarena.config.profiles import DEFAULT_PROFILE, PROFILES, build_config
from pgarena.config.redaction import redact_command, redact_secrets, redact_url
from pgarena.config.run import RunConfig
from pgarena.contract.workloads import WORKLOAD_NAMES

URL = "postgresql://pgarena:s3cret-pw@127.0.0.1:5439/pgarena"


@pytest.fixture
def four_cpus(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3, 1, 0, 2})


@pytest.fixture
def one_cpu(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})


# --- default_cpu_sets -------------------------------------------------------------------------------


def test_default_cpu_sets_splits_first_cpu_from_the_rest(four_cpus):
    assert default_cpu_sets() == ([0], [1, 2, 3])


def test_default_cpu_sets_uses_the_lowest_allowed_cpu(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {7, 5, 6})
    assert default_cpu_sets() == ([5], [6, 7])


def test_default_cpu_sets_on_one_cpu_shares_it(one_cpu):
    assert default_cpu_sets() == ([0], [0])


def test_default_cpu_sets_on_this_machine_are_allowed_cpus():
    generator, server = default_cpu_sets()
    allowed = os.sched_getaffinity(0)
    assert generator and server
    assert set(generator) | set(server) == allowed


# --- build_config -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_build_config_with_each_profile(tmp_path, four_cpus, name):
    profile = PROFILES[name]
    cfg = build_config(profile=name, project_dir=tmp_path)
    assert isinstance(cfg, RunConfig)
    assert cfg.profile == name
    assert cfg.warmup_s == profile.warmup_s
    assert cfg.duration_s == profile.duration_s
    assert cfg.repetitions == profile.repetitions
    assert cfg.vus == profile.vus
    assert cfg.perf_test_rows == profile.perf_test_rows
    assert cfg.users_limits == profile.users_limits
    assert cfg.generator_cpus == [0]
    assert cfg.server_cpus == [1, 2, 3]
    assert cfg.workers == 3, "one worker per server CPU by default"
    assert cfg.stacks_dir == tmp_path / "stacks"
    assert cfg.results_dir == tmp_path / "results"
    assert cfg.engine == (profile.engine or DEFAULT_ENGINE)
    assert cfg.pool_size == DEFAULT_POOL_SIZE
    assert cfg.http_timeout_s == DEFAULT_HTTP_TIMEOUT_S
    assert cfg.workloads == (profile.workloads or list(WORKLOAD_NAMES))
    assert cfg.max_repetitions == profile.max_repetitions >= cfg.repetitions
    assert cfg.arrival_rates == profile.arrival_rates and cfg.slo_p99_ms == profile.slo_p99_ms
    assert cfg.stacks is None and cfg.database_url is None and cfg.run_id is None


def test_known_profiles_are_within_the_contract_limits():
    assert {"quick", "standard", "seed"} <= set(PROFILES)
    for profile in PROFILES.values():
        assert all(1 <= r <= PERF_TEST_MAX_ROWS for r in profile.perf_test_rows)
        assert all(1 <= n <= USERS_MAX_LIMIT for n in profile.users_limits)
        assert profile.vus and all(v >= 1 for v in profile.vus)


def test_seed_profile_is_the_seed_matrix():
    seed = PROFILES["seed"]
    assert seed.perf_test_rows == [1, 10, 100, 500]
    assert seed.vus == [1, 50, 100]
    assert seed.duration_s == 60


def test_seed_profile_runs_seed_000s_six_scenarios_with_constant_vus():
    seed = PROFILES["seed"]
    assert seed.workloads == ["perf-test", "perf-minimal", "perf-post", "perf-nested", "perf-large-payload",
                              "perf-many-params"]
    assert seed.arrival_rates == [], "seed 000 is a closed-model matrix"


def test_seed_profile_follows_the_seed_server_profile_for_the_scenarios(tmp_path, four_cpus):
    from pgarena.config.run import workload_parameters, workload_vus

    config = build_config(profile="seed", project_dir=tmp_path)
    assert workload_vus(config, "perf-minimal") == [100, 200, 500]
    assert workload_vus(config, "perf-many-params") == [50, 100, 200]
    assert workload_vus(config, "perf-test") == [1, 50, 100]
    assert workload_parameters(config, "perf-post") == [10, 100]
    assert workload_parameters(config, "perf-nested") == [1, 2, 3]
    assert workload_parameters(config, "perf-large-payload") == [100, 500]
    assert workload_parameters(config, "perf-minimal") == [None]
    explicit = build_config(profile="seed", project_dir=tmp_path, overrides={"vus": [7]})
    assert workload_vus(explicit, "perf-minimal") == [7], "--vus replaces every workload's levels"


def test_quick_profile_runs_one_parameter_of_each_scenario(tmp_path, four_cpus):
    from pgarena.config.run import workload_parameters

    config = build_config(profile="quick", project_dir=tmp_path)
    for workload in ("perf-post", "perf-nested", "perf-large-payload"):
        assert len(workload_parameters(config, workload)) == 1
    assert set(WORKLOAD_NAMES) <= set(config.workloads)


@pytest.mark.parametrize("field,value", [("post_records", [0]), ("post_records", [1001]), ("nested_depths", [4]),
                                         ("payload_kb", [2048]), ("payload_kb", [])])
def test_scenario_parameters_out_of_range_are_refused_naming_the_option(tmp_path, four_cpus, field, value):
    with pytest.raises(ValueError, match="--" + field.replace("_", "-").replace("-kb", "-kb")):
        build_config(project_dir=tmp_path, overrides={field: value})


def test_full_profile_has_open_model_slo_search_and_adaptive_repetitions():
    full = PROFILES["full"]
    assert full.workloads is None, "full runs every workload"
    assert full.arrival_rates and full.slo_p99_ms is not None
    assert full.max_repetitions > full.repetitions >= 3


def test_an_explicit_repetition_count_is_exact_unless_a_maximum_is_given(tmp_path, four_cpus):
    assert build_config(project_dir=tmp_path, overrides={"repetitions": 4}).max_repetitions == 4
    cfg = build_config(project_dir=tmp_path, overrides={"repetitions": 3, "max_repetitions": 7})
    assert (cfg.repetitions, cfg.max_repetitions) == (3, 7)
    with pytest.raises(ValueError, match="max_repetitions"):
        build_config(project_dir=tmp_path, overrides={"repetitions": 5, "max_repetitions": 4})


@pytest.mark.parametrize(("text", "parsed"), [("2000", (2000.0, False)), ("90%", (0.9, True)),
                                               (" 150% ", (1.5, True)), ("12.5", (12.5, False))])
def test_arrival_rates_are_absolute_or_relative(text, parsed):
    assert parse_rate(text) == pytest.approx(parsed)


@pytest.mark.parametrize("text", ["fast", "0", "-5%", "%"])
def test_bad_arrival_rates_are_refused_with_the_value(tmp_path, four_cpus, text):
    with pytest.raises(ValueError, match="arrival rate"):
        build_config(project_dir=tmp_path, overrides={"arrival_rates": [text]})


def test_default_profile(tmp_path, four_cpus):
    assert build_config(project_dir=tmp_path).profile == DEFAULT_PROFILE


def test_unknown_profile_raises(tmp_path):
    with pytest.raises(ValueError, match="unknown profile 'turbo'"):
        build_config(profile="turbo", project_dir=tmp_path)


def test_build_config_on_one_cpu(tmp_path, one_cpu):
    cfg = build_config(project_dir=tmp_path)
    assert cfg.generator_cpus == [0] and cfg.server_cpus == [0]
    assert cfg.workers == 1


def test_overrides_win(tmp_path, four_cpus):
    overrides = {
        "engine": "k6",
        "stacks": ["go-nethttp-pgx"],
        "workloads": ["static"],
        "warmup_s": 1.5,
        "duration_s": 2,
        "repetitions": 1,
        "vus": [8],
        "perf_test_rows": [1000],
        "users_limits": [10000],
        "pool_size": 4,
        "workers": 2,
        "generator_cpus": [3],
        "server_cpus": [0, 1],
        "http_timeout_s": 1.5,
        "database_url": URL,
        "stacks_dir": tmp_path / "elsewhere",
        "results_dir": tmp_path / "out",
        "run_id": "run-1",
    }
    cfg = build_config(profile="standard", project_dir=tmp_path, overrides=overrides)
    for key, value in overrides.items():
        assert getattr(cfg, key) == value, key
    assert cfg.profile == "standard"


def test_none_overrides_are_ignored(tmp_path, four_cpus):
    base = build_config(profile="quick", project_dir=tmp_path)
    overrides = {key: None for key in ("engine", "warmup_s", "duration_s", "repetitions", "vus", "workers",
                                       "perf_test_rows", "users_limits", "pool_size", "workloads",
                                       "server_cpus", "generator_cpus", "stacks_dir")}
    cfg = build_config(profile="quick", project_dir=tmp_path, overrides=overrides)
    assert cfg == base


def test_workers_default_follows_overridden_server_cpus(tmp_path, four_cpus):
    cfg = build_config(project_dir=tmp_path, overrides={"server_cpus": [1, 2]})
    assert cfg.workers == 2


def test_explicit_workers_override_the_cpu_count(tmp_path, four_cpus):
    cfg = build_config(project_dir=tmp_path, overrides={"workers": 7})
    assert cfg.workers == 7


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"workloads": ["static", "soap"]}, "workloads"),
        ({"workloads": ["perf_test"]}, "workloads"),
        ({"perf_test_rows": [0]}, "perf_test_rows"),
        ({"perf_test_rows": [1, PERF_TEST_MAX_ROWS + 1]}, "perf_test_rows"),
        ({"perf_test_rows": [1001]}, "perf_test_rows"),
        ({"users_limits": [10001]}, "users_limits"),
        ({"users_limits": [0]}, "users_limits"),
        ({"vus": [0]}, "vus"),
        ({"vus": [1, -5]}, "vus"),
        ({"vus": []}, "vus"),
        ({"engine": "wrk"}, "engine"),
        ({"pool_size": 0}, "pool_size"),
        ({"workers": 0}, "workers"),
        ({"repetitions": 0}, "repetitions"),
        ({"duration_s": 0}, "duration_s"),
        ({"warmup_s": -1}, "warmup_s"),
        ({"http_timeout_s": 0}, "http_timeout_s"),
    ],
)
def test_invalid_values_raise(tmp_path, four_cpus, overrides, field):
    with pytest.raises(ValidationError) as info:
        build_config(project_dir=tmp_path, overrides=overrides)
    assert field in {str(err["loc"][0]) for err in info.value.errors()}


def test_invalid_workload_message_lists_known_workloads(tmp_path, four_cpus):
    with pytest.raises(ValidationError, match="unknown workload 'soap'") as info:
        build_config(project_dir=tmp_path, overrides={"workloads": ["soap"]})
    for name in WORKLOAD_NAMES:
        assert name in str(info.value)


@pytest.mark.parametrize(("rows", "limits"), [([1], [1]), ([PERF_TEST_MAX_ROWS], [USERS_MAX_LIMIT])])
def test_boundary_values_are_accepted(tmp_path, four_cpus, rows, limits):
    cfg = build_config(project_dir=tmp_path, overrides={"perf_test_rows": rows, "users_limits": limits})
    assert cfg.perf_test_rows == rows and cfg.users_limits == limits


def test_run_config_is_frozen(tmp_path, four_cpus):
    cfg = build_config(project_dir=tmp_path)
    with pytest.raises(ValidationError):
        cfg.pool_size = 99  # type: ignore[misc]


# --- redaction --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "redacted"),
    [
        (URL, "postgresql://pgarena:***@127.0.0.1:5439/pgarena"),
        ("postgresql://u:secret@h/db?sslmode=disable", "postgresql://u:***@h/db?sslmode=disable"),
        ("postgres://u:p%40ss%3Aword@h:5432/db", "postgres://u:***@h:5432/db"),
        ("postgresql://:secret@h/db", "postgresql://:***@h/db"),
        ("postgresql://u:u@h/u", "postgresql://u:***@h/u"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("postgresql://h:5432/db", "postgresql://h:5432/db"),
        ("postgresql:///db", "postgresql:///db"),
    ],
)
def test_redact_url(url, redacted):
    assert redact_url(url) == redacted


@pytest.mark.parametrize("url", [URL, "postgres://u:p%40ss%3Aword@h:5432/db", "postgresql://:secret@h/db"])
def test_redact_url_never_keeps_the_password(url):
    from urllib.parse import urlsplit

    password = urlsplit(url).password
    assert password and password not in redact_url(url)


def test_redact_url_hides_a_password_query_parameter():
    assert "s3cret" not in redact_url("postgresql://pgarena@127.0.0.1:5439/pgarena?password=s3cret")


def test_redacted_config_hides_the_password(tmp_path, four_cpus):
    cfg = build_config(project_dir=tmp_path, overrides={"database_url": URL})
    data = cfg.redacted()
    assert data["database_url"] == "postgresql://pgarena:***@127.0.0.1:5439/pgarena"
    text = json.dumps(data)  # as stored in results.json
    assert "s3cret-pw" not in text
    assert cfg.database_url == URL, "the live config keeps the real URL"


def test_redacted_config_is_json_ready_and_complete(tmp_path, four_cpus):
    cfg = build_config(project_dir=tmp_path)
    data = cfg.redacted()
    assert set(data) == {field.serialization_alias or name for name, field in RunConfig.model_fields.items()}
    assert data["database_url"] is None
    assert data["stacks_dir"] == str(tmp_path / "stacks")
    assert data["server_cpus"] == [1, 2, 3]
    assert json.loads(json.dumps(data)) == data
    assert RunConfig.model_validate(data) == cfg


def test_build_config_reads_affinity_through_os(tmp_path, monkeypatch):
    """build_config must ask the OS (via default_cpu_sets), so the monkeypatch reaches it."""
    calls = []

    def affinity(pid):
        calls.append(pid)
        return {0, 1}

    monkeypatch.setattr(os, "sched_getaffinity", affinity)
    cfg = build_config(project_dir=Path(tmp_path))
    assert calls == [0]
    assert (cfg.generator_cpus, cfg.server_cpus, cfg.workers) == ([0], [1], 1)


def test_k6_windows_shorter_than_a_second_are_refused(tmp_path):
    with pytest.raises(ValidationError, match="k6 needs --warmup and --duration of at least 1 s"):
        build_config(project_dir=tmp_path, overrides={"engine": "k6", "warmup_s": 0.5})
    assert build_config(project_dir=tmp_path, overrides={"engine": "oha", "warmup_s": 0.5}).warmup_s == 0.5


@pytest.mark.parametrize("password", ["pa#ss", "pa?ss", "pa/ss", "pa ss", "p#?/ s", "pa:ss"])
def test_redact_secrets_finds_a_password_libpq_reads_unencoded(password):
    """Issue 22 item 15: libpq takes everything up to the first '@' as user info, so `postgresql://u:pa#ss@h/db`
    connects with password `pa#ss`; the redaction must hide all of it, and keep the host and database."""
    text = f"$ ./server --db postgresql://u:{password}@127.0.0.1:5432/db --port 8080"
    assert redact_secrets(text) == "$ ./server --db postgresql://u:***@127.0.0.1:5432/db --port 8080"


def test_redact_secrets_leaves_urls_without_a_password_and_hides_known_secrets():
    assert redact_secrets("postgresql://h:5432/db and http://127.0.0.1:8080/api?x=1") == \
        "postgresql://h:5432/db and http://127.0.0.1:8080/api?x=1"
    assert redact_secrets("./app --password tops3cret", known=["tops3cret"]) == "./app --password ***"
    assert redact_secrets("a b", known=["a"]) == "a b"  # too short to replace in free text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("host=h password=s3cret dbname=x", "s3cret"),
        ("host=h password = 's3 cret' dbname=x", "s3 cret"),
        ("PGPASSWORD=s3cret pgarena run", "s3cret"),
        ("postgresql://u@h/db?sslmode=require&password=s3cret", "s3cret"),
        ("postgresql://u@h/db?sslpassword=s3cret", "s3cret"),
        ("pgarena run --database-url postgresql://u:s3cret@h/db --stacks x", "s3cret"),
    ],
)
def test_redact_secrets_finds_passwords_in_any_form(text, secret):
    redacted = redact_secrets(text)
    assert secret not in redacted and "***" in redacted


@pytest.mark.parametrize(
    ("argv", "secret"),
    [
        (["run", "--database-url", "postgresql://u:s3cret@h/db"], "s3cret"),
        (["run", "--database-url=postgresql://u:s3cret@h/db"], "s3cret"),
        (["run", "--database-url", "host=h password=s3cret"], "s3cret"),
        (["run", "--admin-database-url=postgresql://a:s3cret@h/db"], "s3cret"),
        (["run", "--db-password", "s3cret"], "s3cret"),
        (["run", "--db-password=s3cret"], "s3cret"),
    ],
)
def test_redact_command_hides_every_password(argv, secret):
    redacted = redact_command(argv)
    assert secret not in " ".join(redacted) and len(redacted) == len(argv)
    assert redacted[0] == "run"


def test_redacted_config_hides_every_secret(tmp_path, four_cpus):
    cfg = build_config(project_dir=tmp_path, overrides={
        "database_url": "postgresql://u:one@h/db", "admin_database_url": "postgresql://a:two@h/db"})
    managed = build_config(project_dir=tmp_path, overrides={"db_password": "three", "db_user": "app"})
    text = json.dumps(cfg.redacted()) + json.dumps(managed.redacted())
    assert not {"one", "two", "three"} & set(re.findall(r"\w+", text))
    assert managed.redacted()["db_user"] == "app"


def test_managed_database_settings_need_the_managed_database(tmp_path, four_cpus):
    with pytest.raises(ValidationError, match="--db-port, --db-user only configure the managed database; not usable with --database-url"):
        build_config(project_dir=tmp_path, overrides={"database_url": URL, "db_port": 5432, "db_user": "x"})
    with pytest.raises(ValidationError, match="--admin-database-url needs --database-url"):
        build_config(project_dir=tmp_path, overrides={"admin_database_url": URL})
    with pytest.raises(ValidationError):
        build_config(project_dir=tmp_path, overrides={"db_port": 70000})


def test_db_rtt_levels_parse_units_and_refuse_what_toxiproxy_cannot_do(tmp_path):
    from pgarena.config.parsers import parse_rtt
    from pgarena.config.profiles import build_config

    assert [parse_rtt(t) for t in ("0", "2ms", "1 ms", "3000us", "0.002s")] == [0.0, 2.0, 1.0, 3.0, 2.0]
    config = build_config(project_dir=tmp_path, overrides={"db_rtt_ms": ["0", "1ms", "2ms"]})
    assert config.db_rtt_ms == [0.0, 1.0, 2.0]
    for bad in (["0.5ms"], ["2ms", "2"], ["fast"], ["-1ms"]):
        with pytest.raises(ValueError):
            build_config(project_dir=tmp_path, overrides={"db_rtt_ms": bad})


def test_stack_rtt_and_netns_options(tmp_path):
    from pgarena.config.profiles import build_config

    config = build_config(project_dir=tmp_path, overrides={"stack_rtt_ms": "3ms", "netns": True})
    assert config.stack_rtt_ms == 3.0 and config.netns
    default = build_config(project_dir=tmp_path, overrides={})
    assert default.stack_rtt_ms == 0 and not default.netns
    for bad in ("0.5ms", "fast", "-2ms", "2000ms"):
        with pytest.raises(ValueError):
            build_config(project_dir=tmp_path, overrides={"stack_rtt_ms": bad})
    with pytest.raises(ValidationError, match="--netns starts PostgreSQL in a namespace of its own"):
        build_config(project_dir=tmp_path, overrides={"netns": True, "database_url": URL})
