"""Remote targets (`--target ID=URL`, issue 15 item 2): parsing and refusals at the edge, the target's
definition, its results' "not measured" figures in both reports, and reaching it."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pgarena.cli import app
from pgarena.config.profiles import build_config
from pgarena.config.stackdef import Stack, StackDef
from pgarena.config.targets import NOT_KNOWN, TargetError, parse_targets, target_stacks
from pgarena.db.postgres import free_port
from pgarena.pipeline.plan import coexist_problem
from pgarena.pipeline.plan import stack_info
from pgarena.report.html import html_payload, render_html
from pgarena.report.markdown import render_markdown
from pgarena.results.models import RunResults, TargetHost
from pgarena.stack.target import RemoteServer, reach
from pgarena.system.process import NotReady
from pgarena.system.resources import TreeSampler
from tests.fixtures.local_http import JsonHandler, serving
from tests.fixtures.report_run import sample_results

PASSWORD = "Tgt-Secret-9q"


@pytest.fixture
def two_cpus(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})


def _config(tmp_path, **overrides):
    base = {"targets": {"api": "http://127.0.0.1:8080"}, "database_url": "postgresql://u:p@127.0.0.1:5432/app",
            "db_password": PASSWORD}
    return build_config(project_dir=tmp_path, overrides={**base, **overrides})


# --- parsing ----------------------------------------------------------------------------------------


def test_targets_parse_repeated_and_comma_separated_in_order_with_the_base_normalised():
    assert parse_targets(["a=http://127.0.0.1:8080/", "b=https://api.example.com/v1/,c=http://[::1]:9000"]) == {
        "a": "http://127.0.0.1:8080", "b": "https://api.example.com/v1", "c": "http://[::1]:9000"}


@pytest.mark.parametrize(("value", "says"), [
    ("api", "expected ID=URL"),
    ("api=", "expected ID=URL"),
    ("Api=http://h", "lower-case letters"),
    ("my_api=http://h", "lower-case letters"),
    ("-api=http://h", "lower-case letters"),
    ("api=ftp://h/", "must start with http:// or https://"),
    ("api=127.0.0.1:8080", "must start with http:// or https://"),
    ("api=http://", "has no host"),
    ("api=http://h/api/users?limit=20", "no query string"),
    ("api=http://h/?", "no query string"),
    ("api=http://h/#top", "no fragment"),
    ("api=http://h/a/../b", "cannot be a base"),
    ("api=http://h/a b", "cannot be a base"),
    ("api=http://h:99999", "not a URL"),
    ("api=http://h:0", "port 0"),
])
def test_a_target_that_cannot_be_a_base_url_is_refused_saying_why(value, says):
    with pytest.raises(TargetError, match=re.escape(says)):
        parse_targets([value])


def test_credentials_in_a_target_url_are_refused_without_echoing_the_password():
    with pytest.raises(TargetError, match="credentials") as caught:
        parse_targets([f"api=https://bob:{PASSWORD}@api.example.com"])
    assert PASSWORD not in str(caught.value) and "***@" in str(caught.value)


def test_a_target_id_given_twice_is_refused():
    with pytest.raises(TargetError, match="given twice"):
        parse_targets(["a=http://h1", "a=http://h2"])


# --- the run configuration --------------------------------------------------------------------------


def test_a_target_run_needs_the_users_database_and_the_password_of_pgarenas_role(tmp_path, two_cpus):
    config = _config(tmp_path)
    assert config.targets == {"api": "http://127.0.0.1:8080"} and config.db_password == PASSWORD
    with pytest.raises(ValueError, match="--target needs --database-url"):
        _config(tmp_path, database_url=None, db_password=None)
    with pytest.raises(ValueError, match="--target needs --db-password"):
        _config(tmp_path, db_password=None)


@pytest.mark.parametrize(("overrides", "says"), [
    ({"stacks": ["go-nethttp-pgx"]}, "--target and --stacks in one run: refused"),
    ({"db_rtt_ms": ["1ms"]}, "--db-rtt with --target"),
    ({"db_port": 5432}, "--db-port only configures the managed database"),
])
def test_what_a_target_run_cannot_do_is_refused(tmp_path, two_cpus, overrides, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        _config(tmp_path, **overrides)


def test_db_password_with_a_users_database_still_needs_a_target(tmp_path, two_cpus):
    with pytest.raises(ValueError, match="--db-password only configures the managed database"):
        _config(tmp_path, targets={})


def test_the_stored_config_keeps_the_targets_and_no_password(tmp_path, two_cpus):
    stored = _config(tmp_path).redacted()
    assert stored["targets"] == {"api": "http://127.0.0.1:8080"} and stored["db_password"] == "***"
    assert PASSWORD not in str(stored)


@pytest.mark.parametrize(("argv", "says"), [
    (["--target", "api"], "expected ID=URL"),
    (["--target", "api=ftp://h"], "must start with http:// or https://"),
    (["--target", "api=http://127.0.0.1:1", "--stacks", "x", "--database-url", "postgresql://u@h/d",
      "--db-password", "pw"], "--target and --stacks in one run: refused"),
    (["--target", "api=http://127.0.0.1:1"], "--target needs --database-url"),
])
def test_the_cli_turns_a_bad_target_into_one_line_and_exit_code_2(tmp_path, argv, says):
    for command in ("run", "verify"):
        result = CliRunner().invoke(app, [command, *argv, "--results-dir", str(tmp_path)])
        assert result.exit_code == 2, result.output
        assert says in " ".join(result.output.split()) and "Traceback" not in result.output
    assert not any(tmp_path.iterdir()), "nothing is written for a refused command line"


# --- the target's definition ------------------------------------------------------------------------


def _stack_toml(folder: Path, stack_id: str) -> None:
    (folder / stack_id).mkdir(parents=True)
    (folder / stack_id / "stack.toml").write_text(
        f'id = "{stack_id}"\ntitle = "T"\nlanguage = "Go"\nframework = "chi"\nframework_version = "5"\n'
        'driver = "pgx"\ndriver_version = "5"\nworkloads = ["users", "static"]\nrequires = ["no-such-binary-here"]\n'
        'source_globs = ["*.toml"]\n[run]\ncommand = "false"\nport = 8080\n[routes]\nusers = "/v2/users"\n')


def test_a_target_with_a_stack_toml_here_takes_its_definition_and_is_available(tmp_path):
    _stack_toml(tmp_path, "chi-api")
    stacks, errors = target_stacks({"chi-api": "http://10.0.0.7:8080"}, ["users", "tx"], tmp_path)
    assert errors == [] and len(stacks) == 1
    stack = stacks[0]
    assert stack.available, "what it requires is on its own host"
    assert stack.target_url == "http://10.0.0.7:8080" and stack.definition.language == "Go"
    assert stack.definition.routes == {"users": "/v2/users"} and list(stack.definition.workloads) == ["users", "static"]
    assert coexist_problem(stack) is None, "a fixed port of its definition is not on this machine"
    info = stack_info(stack)
    assert info.lines_of_code is None, "the deployed code is not known to be this folder's"
    assert info.target_url == "http://10.0.0.7:8080" and any("remote target" in n for n in info.notes)


def test_a_target_without_a_stack_toml_serves_the_runs_workloads_and_its_facts_are_not_known(tmp_path):
    stacks, errors = target_stacks({"api": "https://api.example.com"}, ["tx", "perf-test", "users"], tmp_path)
    definition = stacks[0].definition
    assert errors == [] and list(definition.workloads) == ["tx", "perf-test", "users"] and definition.routes == {}
    assert (definition.language, definition.framework, definition.driver, definition.pooler) == (NOT_KNOWN,) * 4
    assert definition.run.health_path == "workload:users", "static is not loaded, so not assumed served"
    stacks, _ = target_stacks({"api": "https://api.example.com"}, ["static", "users"], tmp_path)
    assert stacks[0].definition.run.health_path == "/api/static"


def test_a_target_whose_stack_toml_is_broken_is_a_config_error_like_a_local_stack(tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "stack.toml").write_text('id = "bad"\n')
    stacks, errors = target_stacks({"bad": "http://h"}, ["users"], tmp_path)
    assert stacks == [] and [e.stack_id for e in errors] == ["bad"]


def test_a_remote_server_has_no_process_so_no_cpu_or_memory_is_sampled(tmp_path):
    server = RemoteServer("http://10.0.0.7:8080", tmp_path / "target.log")
    assert server.pid is None and server.exit_code() is None
    with TreeSampler({"stack": server.pid, "db": None}) as usage:
        pass
    assert usage.usage == {}, "no figure at all, so the repetition's stack CPU and RSS stay None"


# --- reaching a target ------------------------------------------------------------------------------


class _Teapot(JsonHandler):
    def do_GET(self):  # noqa: N802
        self.reply(418, b"")


def test_reach_accepts_any_http_answer_and_gives_up_on_silence_within_its_deadline():
    with serving(_Teapot) as base_url:
        seconds, status = reach(f"{base_url}/api/static", deadline_s=2)
        assert status == 418 and seconds < 2
    started = time.monotonic()
    with pytest.raises(NotReady, match="no HTTP answer from http://127.0.0.1:.* within 1 s"):
        reach(f"http://127.0.0.1:{free_port()}/api/static", deadline_s=1)
    assert time.monotonic() - started < 3


# --- reports ----------------------------------------------------------------------------------------

TARGET_URLS = {"go-fast": "http://10.0.0.7:8080", "py-steady": "https://py.example.com/api",
               "node-wrong": "http://10.0.0.9:3000"}


def target_results() -> RunResults:
    """The report fixture as a run of three remote targets: every figure of their hosts None, and PostgreSQL's CPU
    too (the user's server is not pgarena's to sample)."""
    results = sample_results()
    results.stacks = [s for s in results.stacks if s.id in TARGET_URLS]
    for s in results.stacks:
        s.target_url, s.language, s.framework, s.framework_version = TARGET_URLS[s.id], NOT_KNOWN, NOT_KNOWN, ""
        s.lines_of_code, s.cold_start, s.startup_seconds, s.build_seconds = None, None, None, None
        s.listen_addresses, s.peak_connections, s.flags = [], None, []
    for cell in results.cells:
        for rep in cell.repetitions:
            rep.stack_cpu_seconds = rep.stack_rss_peak_bytes = rep.stack_pss_peak_bytes = rep.db_cpu_seconds = None
        if cell.summary is not None:
            cell.summary = cell.summary.model_copy(update={
                "stack_cpu_us_per_request": None, "stack_rss_peak_bytes": None, "stack_pss_peak_bytes": None,
                "stack_cpu_fraction": None, "db_cpu_us_per_request": None, "db_cpu_fraction": None, "cpu_us_per_request_interval": None,
                "cpu_accounting": "not measured (remote target)"})
    results.environment.targets = [TargetHost(stack=sid, url=url) for sid, url in TARGET_URLS.items()]
    return RunResults.model_validate(results.model_dump())


def _tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every Markdown table as (headers, rows of cells)."""
    found, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("| ") and i + 1 < len(lines) and lines[i + 1].startswith("| ---"):
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip("|").split(" | ")])
            found.append(([h.strip() for h in line.strip("|").split(" | ")], rows))
    return found


UNMEASURABLE_COLUMNS = ("CPU µs/req (stack + db)", "Peak PSS", "Lines of code", "Stack µs/req", "PostgreSQL µs/req",
                        "Total µs/req",
                        "Healthy after", "First correct answer after", "1st request")


def test_markdown_says_not_measured_for_every_figure_only_a_targets_host_could_give():
    text = render_markdown(target_results())
    head = text.split("## Results")[0]
    assert "> **Remote targets: go-fast at http://10.0.0.7:8080" in head and "compares their deployments" in head
    checked = 0
    for headers, rows in _tables(text):
        for name in UNMEASURABLE_COLUMNS:
            if name not in headers:
                continue
            column = headers.index(name)
            for row in rows:
                if row[3:4] == ["failed"] or len(row) != len(headers):
                    continue  # a failed cell has no figures at all
                assert row[column] == "not measured", (name, row)
                checked += 1
    assert checked >= 30
    stacks = next(rows for headers, rows in _tables(text) if "Listens on" in headers)
    assert all("(remote target)" in row[9] for row in stacks)
    environment = next(rows for headers, rows in _tables(text) if headers == ["", ""])
    targets = [row for row in environment if row[0].startswith("Target ")]
    assert len(targets) == 3 and all("CPU, memory and kernel: not measured" in row[1] for row in targets)
    cpu_sets = next(row[1] for row in environment if row[0] == "CPU sets")
    assert "remote targets" in cpu_sets and "stack + PostgreSQL" not in cpu_sets
    network = next(row[1] for row in environment if row[0] == "Network")
    assert "not measured" in network and "loopback" not in network


def test_markdown_never_prints_a_question_mark_or_zero_for_an_unmeasured_cpu_figure():
    text = render_markdown(target_results())
    assert "? + ?" not in text and "| ? |" not in text
    cost = text.split("## Cost per request")[1].split("\n## ")[0]
    assert "| 0 |" not in cost and cost.count("| not measured | not measured | not measured |") >= 3


def test_html_says_not_measured_where_a_target_was_not_measured():
    results = target_results()
    payload = html_payload(results)
    assert payload["targets_warning"].startswith("Remote targets: go-fast at http://10.0.0.7:8080")
    assert {s["id"]: s["target_url"] for s in payload["stacks"]} == TARGET_URLS
    assert [r for r in payload["environment"]["rows"] if r[0] == "targets"] == [], "its own rows, not a dump"
    page = render_html(results)
    assert 'id="targets-warning"' in page and 'id="targets-cost"' in page
    assert 'id="targets-cost"' not in render_html(sample_results()), "a local run has no such note"
    cells = page.split('id="stacks"')[0]
    measured_rows = [c for t in payload["cells"] for c in t["rows"] if "rps_median" in c]
    assert cells.count(">not measured</td>") >= 2 * len(measured_rows), "CPU and memory of every measured cell"
    stacks = page.split('id="stacks-table"')[1].split("</table>")[0]
    for row in re.findall(r"<tr class=\"[^\"]*\">(.*?)</tr>", stacks, flags=re.S):
        assert row.count("not measured") >= 5, row  # lines of code, healthy, first correct, first request, conns
        assert "(remote target)" in row and "not set by pgarena" in row


def test_a_local_run_reads_not_measured_too_where_a_figure_is_missing():
    text = render_markdown(sample_results())
    tx = next(rows for headers, rows in _tables(text) if "TPC-B invariants" in headers)
    go = next(row for row in tx if row[2] == "go-fast")
    assert go[12] == "not measured" and go[14] == "not measured", go
    assert "Remote target" not in text


def test_a_stack_definition_is_a_local_stack_unless_given_a_target_url(tmp_path):
    definition = StackDef.model_validate({"id": "x", "title": "x", "language": "Go", "framework": "f",
                                          "framework_version": "1", "driver": "d", "driver_version": "1",
                                          "workloads": ["static"], "run": {"command": "true"}})
    assert Stack(definition, tmp_path).target_url is None


def test_an_http_password_is_redacted_wherever_pgarena_stores_text():
    from pgarena.config.redaction import redact_command, redact_secrets

    assert redact_secrets(f"https://bob:{PASSWORD}@api.example.com/x") == "https://bob:***@api.example.com/x"
    argv = redact_command(["run", "--target", f"api=http://bob:{PASSWORD}@h:80", "--db-password", PASSWORD])
    assert PASSWORD not in " ".join(argv) and argv[-1] == "***"
