"""Remote targets end to end (issue 15, item 2): a stack already running, which pgarena only reaches,
verifies against the user's database and loads — here the fixture server started by the test on
127.0.0.1, reading a PostgreSQL the test runs in place of the user's (passed as --database-url)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from pgarena.db.cluster import provide_database
from pgarena.db.postgres import Database, free_port
from pgarena.load.engines import EngineUnavailable, get_engine
from pgarena.results.store import load
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres

pytestmark = [pytest.mark.postgres, needs_postgres]

PASSWORD = "Target-Role-Pw-5v"
"""--db-password: what pgarena sets on its role `pgarena`, and what the deployed stack logs in with."""
SERVER = FIXTURE_STACKS / "fixture-good" / "server.py"


@pytest.fixture(scope="module")
def user_server(tmp_path_factory) -> Iterator[Database]:
    """A PostgreSQL standing in for the user's server (its superuser URL is the --database-url)."""
    with provide_database(tmp_path_factory.mktemp("server") / "pg", database_url=None, cpus=None) as server:
        yield server


@contextmanager
def deployed(server: Database, faults: str = "") -> Iterator[tuple[str, subprocess.Popen]]:
    """The fixture stack running on its own, as a deployment would: pointed at the user's database as
    pgarena's role with the password the run will give it. Yields its base URL and process."""
    port = free_port()
    env = {**os.environ, "PGARENA_HOST": "127.0.0.1", "PGARENA_PORT": str(port), "FIXTURE_FAULTS": faults,
           "PGARENA_DATABASE_URL": f"postgresql://pgarena:{PASSWORD}@127.0.0.1:{server.port}/{server.name}"}
    proc = subprocess.Popen([sys.executable, str(SERVER)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(url + "/api/static", timeout=1)
                break
            except httpx.HTTPError:
                assert proc.poll() is None and time.monotonic() < deadline, "the fixture server did not start"
                time.sleep(0.1)
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _engine() -> str:
    try:
        get_engine("oha").binary  # noqa: B018
        return "oha"
    except EngineUnavailable:
        return "k6"


def _pgarena(server: Database, targets: list[str], tmp_path: Path, run_id: str, *extra: str,
             workloads: str = "static,users") -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "pgarena", "run", *(a for t in targets for a in ("--target", t)),
            "--database-url", server.admin_url, "--db-password", PASSWORD, "--workloads", workloads,
            "--limits", "5", "--vus", "2", "--duration", "1", "--warmup", "1", "--warmup-cap", "3",
            "--repetitions", "1", "--engine", _engine(), "--no-headroom", "--ceiling-seconds", "0",
            "--stacks-dir", str(FIXTURE_STACKS), "--results-dir", str(tmp_path), "--run-id", run_id, *extra]
    return subprocess.run(argv, cwd=PROJECT_DIR, capture_output=True, text=True, timeout=240)


def test_a_target_is_verified_and_loaded_and_what_only_its_host_knows_is_not_measured(user_server, tmp_path):
    with deployed(user_server) as (url, proc):
        done = _pgarena(user_server, [f"fx={url}"], tmp_path, "target")
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert proc.poll() is None, "pgarena never stops a target"
    assert "must read that database as role 'pgarena'" in done.stdout, "the log says where the target must point"
    results = load(tmp_path / "target")
    info = results.stack("fx")
    assert (info.status, info.target_url, info.language) == ("ok", url, "not known")
    assert info.cold_start is None and info.startup_seconds is None and info.lines_of_code is None
    assert info.listen_addresses == [] and info.build_seconds is None
    assert info.peak_connections is not None and info.peak_connections >= 1, "PostgreSQL's side is measured"
    assert {v.workload: v.ok for v in results.verifications} == {"static": True, "users": True}
    users = results.verification("fx", "users")
    assert users.accounting is not None, users.accounting_unavailable  # pg_stat_statements of pgarena's role
    assert {c.workload for c in results.cells if c.status == "ok" and c.summary} == {"static", "users"}
    for cell in results.cells:
        assert all(r.requests > 0 and r.checks_total > 0 for r in cell.repetitions), "loaded and sampled"
        assert all(r.stack_cpu_seconds is None and r.stack_rss_peak_bytes is None and r.stack_pss_peak_bytes is None
                   for r in cell.repetitions)
        s = cell.summary
        assert s.stack_cpu_us_per_request is None and s.stack_rss_peak_bytes is None and s.stack_cpu_fraction is None
        assert s.cpu_accounting == "not measured (remote target)"
    host = results.environment.targets[0]
    assert (host.stack, host.url, host.cpu_model, host.kernel) == ("fx", url, None, None)
    assert results.config["targets"] == {"fx": url} and results.config["db_password"] == "***"
    report = (tmp_path / "target" / "report.md").read_text()
    assert f"> **Remote target: fx at {url}." in report
    users_table = report.split("### users")[1].split("###")[0]
    users_row = next(line for line in users_table.splitlines() if line.startswith("| 1 | 1 | fx |"))
    assert "| not measured | – | not measured |" in users_row, users_row  # CPU µs/req, efficiency, peak PSS
    assert 'id="targets-warning"' in (tmp_path / "target" / "report.html").read_text()
    assert not [p for p in (tmp_path / "target").rglob("*") if p.is_file() and PASSWORD.encode() in p.read_bytes()]


def test_a_wrong_target_is_not_loaded_and_an_unreachable_one_is_start_failed_while_the_run_goes_on(
        user_server, tmp_path):
    gone = f"http://127.0.0.1:{free_port()}"
    with deployed(user_server, faults="short_users") as (url, _):
        done = _pgarena(user_server, [f"wrong={url},gone={gone}"], tmp_path, "bad", workloads="users")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = load(tmp_path / "bad")
    assert results.status == "complete"
    gone_info = results.stack("gone")
    assert gone_info.status == "start_failed" and "no HTTP answer" in gone_info.reason, gone_info.reason
    users = results.verification("wrong", "users")
    assert users is not None and not users.ok, "one row short: verification refuses it like any stack's answer"
    cells = [c for c in results.cells if c.stack == "wrong"]
    assert cells and all(c.status == "failed" and c.error == "verification failed; not loaded" and not c.repetitions
                         for c in cells)
    assert results.stack("wrong").peak_connections is None, "two targets share pgarena's role: not attributable"
    report = (tmp_path / "bad" / "report.md").read_text()
    assert "start_failed: remote target unreachable" in report and "compares their deployments" in report
