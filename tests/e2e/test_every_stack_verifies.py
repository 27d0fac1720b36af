"""Every stack in stacks/ builds from this checkout and passes verification on every workload it declares.

One `pgarena verify` over all available stacks (one managed PostgreSQL), then one test per stack reading
its outcome, so a failure names the stack. Builds are cache-friendly (Go build cache, cargo target dirs,
~/.m2, the npm cache, pip's cache); the first run on an empty machine downloads every dependency.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from pgarena.config.stackdef import load_stacks
from pgarena.contract.values import Verdict
from pgarena.load.engines.base import tool_cache_dir
from pgarena.results.store import load
from tests.conftest import FOREIGN_APPS, PROJECT_DIR, needs_postgres

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, needs_postgres]
STACKS, LOAD_ERRORS = load_stacks(PROJECT_DIR / "stacks")
COLD_BUILDS = {"rust-fraiseql": tool_cache_dir() / "fraiseql-2.19.0" / "bin" / "fraiseql"}
"""Stacks whose build installs a tool that takes too long to build inside one test run → the tool. Until it is
in the tool cache (`make bench` builds it, or `pgarena verify --stacks rust-fraiseql`), the stack is skipped here
with the reason: FraiseQL 2.19.0's `cargo install` took 52 min 37 s from scratch on this kind of 2-core machine
(2026-11-25, at nice 19 beside other tests; about 60 min before), and CI gives one run 90 minutes with the rest of
the suite taking about 40. Once built, its build step is `fraiseql compile` (under a second, measured) and CI
verifies it on the managed PostgreSQL 18 like every other stack."""
AS_PUBLISHED = (*FOREIGN_APPS, "rust-fraiseql")
"""Stacks whose answers to bad input are another project's, as published (seed 000's apps, seed 002's FraiseQL:
a missing limit answers 100 rows, 10001 is clamped, users(limit: 0) is data; its stack.toml notes list them):
their bad-input cases are recorded and reported, not asserted here."""
FOREIGN_KNOWN_FAILURES = {
    ("seed000-go-pgx", "perf-many-params"): "a JSON array: got null",
}
"""(foreign app, workload) → the failed check its unmodified code earns (stacks/<id>/stack.toml notes say why)."""


def test_every_stack_toml_loads():
    assert LOAD_ERRORS == [], [e.message for e in LOAD_ERRORS]


@pytest.fixture(scope="module")
def verified(tmp_path_factory, request):
    # only the stacks whose tests were selected (`-k go-nethttp-pgx`): one verify run builds them all
    # (other modules parametrize a "stack" too, by id string: only this module's items count)
    selected = {item.callspec.params["stack"].id for item in request.session.items
                if getattr(item, "callspec", None) is not None and "stack" in item.callspec.params
                and item.module is request.module}
    available = [s for s in STACKS if s.available and s.id in selected and not _cold(s.id)]
    # a stack whose [database] fixes the managed cluster (port 5432, a role, a database) is verified in a run of
    # its own kind, so that its settings are not every stack's (a port 5432 taken here would stop them all)
    groups: dict[tuple, list[str]] = {}
    for stack in available:
        database = stack.definition.database
        key = tuple(sorted((database.cluster_keys() if database else {}).items()))
        groups.setdefault(key, []).append(stack.id)
    verified = {}
    for ids in groups.values():
        results_dir = tmp_path_factory.mktemp("verify-all")
        done = subprocess.run([sys.executable, "-m", "pgarena", "verify", "--stacks", ",".join(ids),
                               "--results-dir", str(results_dir)], cwd=PROJECT_DIR, capture_output=True,
                              text=True, timeout=3600)
        results = load(next(results_dir.iterdir()))
        verified.update({stack_id: (results, done.stdout + done.stderr) for stack_id in ids})
    return verified


def _cold(stack_id: str) -> bool:
    """The stack's tool is not built yet (COLD_BUILDS)."""
    return stack_id in COLD_BUILDS and not COLD_BUILDS[stack_id].is_file()


@pytest.mark.parametrize("stack", STACKS, ids=[s.id for s in STACKS])
def test_stack_builds_and_verifies(stack, verified):
    if not stack.available:
        pytest.skip(stack.unavailable_reason)
    if _cold(stack.id):
        pytest.skip(f"{COLD_BUILDS[stack.id]} is not built: its cold build (about 60 min on 2 cores) does not fit "
                    "in one CI run; `pgarena verify --stacks rust-fraiseql` builds it once")
    results, output = verified[stack.id]
    info = results.stack(stack.id)
    if info.status == "unavailable":  # known only once the server runs: a stack that needs a newer PostgreSQL
        pytest.skip(info.reason)
    assert info.status == "ok", f"{info.status}: {info.reason}\n{info.log_tail}"
    declared = list(stack.definition.workloads)
    got = {v.workload: v for v in results.verifications if v.stack == stack.id}
    assert sorted(got) == sorted(declared)
    for workload, v in got.items():
        failed = [f"{c.name}: {c.detail}" for c in v.checks if not c.ok]
        known = FOREIGN_KNOWN_FAILURES.get((stack.id, workload))
        if known is not None:  # the app's own defect, unmodified: it must still show, as documented
            assert not v.ok and any(known in f for f in failed), (workload, failed)
            continue
        assert v.ok, (workload, failed)
        bad = [f"{c.description}: {c.detail}" for c in v.bad_input if not c.ok]
        if stack.id not in AS_PUBLISHED:  # another project's system answers bad input as it was written to
            assert not bad, (workload, bad)
        assert v.accounting is not None and v.accounting.verdict is not Verdict.WRONG, (workload, v.accounting)
    assert info.lines_of_code is not None and info.lines_of_code.total > 0
