"""Distributed load for real (issue 15): k6 processes on this host, each an execution segment of one window,
merged exactly; the Kubernetes export run the way k6-operator runs it, then ingested; a whole run with
--generators 2. Every target is a server on 127.0.0.1 that the test starts."""

from __future__ import annotations

import csv
import gzip
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pgarena.config.profiles import build_config
from pgarena.load.distributed import local_places
from pgarena.load.engines import EngineUnavailable, LoadSpec, get_engine
from pgarena.load.k8s import ExportSpec, manifests
from pgarena.load.window import run_window
from pgarena.pipeline import runner
from pgarena.pipeline.ingest import ingest
from pgarena.results.store import load
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR, needs_postgres
from tests.fixtures.k8s.k6_operator import run_like_k6_operator
from tests.fixtures.local_http import JsonHandler, serving


@pytest.fixture(scope="module")
def k6():
    try:
        return get_engine("k6")
    except EngineUnavailable as exc:  # pragma: no cover — make bench installs it
        pytest.skip(f"k6 not installed: {exc}")


class _Handler(JsonHandler):
    """200 `[]`; every 20th request 500."""

    count = 0
    lock = threading.Lock()

    def do_GET(self):  # noqa: N802
        with _Handler.lock:
            _Handler.count += 1
            status = 500 if _Handler.count % 20 == 0 else 200
        self.reply(status, b"[]")


@pytest.fixture(scope="module")
def server():
    with serving(_Handler) as base_url:
        yield base_url


def _samples(path: Path) -> list[float]:
    """pgarena_latency values of a k6 CSV, read here with the csv module alone."""
    with gzip.open(path, "rt", newline="") as handle:
        return [float(r["metric_value"]) for r in csv.DictReader(handle) if r["metric_name"] == "pgarena_latency"]


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    position = 0.99 * (len(ordered) - 1)
    low = int(position)
    return ordered[low] + (ordered[min(low + 1, len(ordered) - 1)] - ordered[low]) * (position - low)


@pytest.mark.parametrize("rate", [None, 400.0])
def test_two_local_k6_processes_merge_to_the_sum_and_the_union(tmp_path, k6, server, rate):
    run_dir = tmp_path
    raw = run_dir / "raw" / "fixture"
    raw.mkdir(parents=True)
    config = build_config(project_dir=tmp_path, overrides={"engine": "k6", "generators": 2})
    spec = LoadSpec(url=f"{server}/api/static", method="GET", connections=4, duration_s=0, timeout_s=2, rate=rate)
    window = run_window(k6, spec, 1.5, raw, "w", config, local_places(2))
    record = window.generators
    assert record is not None and [p.segment for p in record.places] == ["0:1/2", "1/2:1"]
    summaries = [json.loads((run_dir / p.raw_output).read_text()) for p in record.places]
    parts = [sum(int(s["metrics"][m]["values"]["count"]) for m in ("pgarena_2xx", "pgarena_non_2xx") if m in s["metrics"])
             for s in summaries]
    assert all(part > 0 for part in parts)
    assert window.outcome.requests == sum(parts) == sum(p.requests for p in record.places)
    assert window.outcome.errors.non_2xx == sum(p.failures for p in record.places) > 0
    union = [v for p in record.places for v in _samples(run_dir / p.raw_samples)]
    assert len(union) == window.outcome.requests
    dropped_at_timeout = [spec.timeout_s * 1000] * (window.outcome.dropped or 0)  # issue 22: dropped count too
    assert window.outcome.latency.p99_ms == pytest.approx(_p99(union + dropped_at_timeout), abs=1e-9)
    assert all(p.cpu_seconds is not None and p.cpu_seconds > 0 and p.cpus == config.generator_cpus
               for p in record.places)
    assert window.generator_cpu_seconds == pytest.approx(sum(p.cpu_seconds for p in record.places))
    assert 0 <= record.start_skew_seconds < 0.5
    assert all(p.clock_offset_seconds == 0.0 and p.clock_offset_method == "same host" for p in record.places)
    if rate is not None:  # the open model's rate is split too: the two segments together offer the whole rate
        assert window.outcome.requests + (window.outcome.dropped or 0) == pytest.approx(rate * 1.5, abs=3)


def test_export_run_like_k6_operator_then_ingest(tmp_path, k6, server):
    docs = manifests(ExportSpec(name="pga-static", base_url=server, workload="static", parameter=None, vus=3,
                                duration_s=1, parallelism=3, stack="fixture-good", timeout_s=2))
    outputs = run_like_k6_operator(docs, tmp_path / "cluster", k6.binary)
    assert len([p for p in outputs if p.name.endswith(".k6-summary.json")]) == 3
    run_dir = ingest([tmp_path / "cluster" / "out"], results_dir=tmp_path / "results", stacks_dir=FIXTURE_STACKS,
                     project_dir=PROJECT_DIR, command_line="test", run_id="k8s")
    (cell,) = load(run_dir).cells
    (rep,) = cell.repetitions
    assert [p.segment for p in rep.generators.places] == ["0:1/3", "1/3:2/3", "2/3:1"]
    assert rep.requests == sum(p.requests for p in rep.generators.places)
    union = [v for p in sorted((tmp_path / "cluster" / "out").glob("*.k6.csv.gz")) for v in _samples(p)]
    assert rep.latency.p99_ms == pytest.approx(_p99(union), abs=1e-9)


def _pgarena(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pgarena", *args], cwd=PROJECT_DIR, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("args, needle", [
    (["run", "--generators", "2", "--engine", "oha"], "--generators 2 needs --engine k6"),
    (["k8s", "export", "--url", "http://s:8080", "--workload", "users", "--out", "/dev/null"], "needs --parameter"),
    (["k8s", "export", "--url", "s:8080", "--workload", "static", "--out", "/dev/null"], "--url"),
    (["ingest", "/nonexistent-outputs"], "not a folder nor a k6 summary"),
])
def test_mistakes_are_one_line_and_exit_2(args, needle):
    done = _pgarena(*args)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and needle in lines[0], done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.usefixtures("no_wire")  # reads no wire profile (tests/conftest.py)
@pytest.mark.postgres
@needs_postgres
def test_a_run_with_two_generators_keeps_tx_consistent_and_reports_each_generator(tmp_path, fixture_env, k6):
    config = build_config(project_dir=tmp_path, overrides={
        "ceiling_s": 0, "headroom": False, "stacks_dir": FIXTURE_STACKS, "results_dir": tmp_path, "run_id": "gen2",
        "stacks": ["fixture-good"], "workloads": ["tx"], "vus": [4], "repetitions": 2, "warmup_s": 1,
        "duration_s": 1, "engine": "k6", "generators": 2, "warmup_cap_s": 1})
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="test", log=lambda _: None)
    (cell,) = load(run_dir).cells
    assert cell.status == "ok" and cell.tx_invariants.holds, (cell.error, cell.flags)
    assert all(r.generators is not None and len(r.generators.places) == 2 for r in cell.repetitions)
    assert all(r.requests == sum(p.requests for p in r.generators.places) for r in cell.repetitions)
    assert cell.summary.generator_cpu_fraction is not None
    report = (run_dir / "report.md").read_text()
    assert "## Generators" in report and "| gen2 |" in report


@needs_postgres
@pytest.mark.postgres
def test_two_generator_namespaces_merge_to_the_sum_and_the_union(tmp_path, fixture_env, k6, monkeypatch):
    """The issue's test bed: examples/topology-netns.toml (two generator namespaces, one for the stack, one for
    PostgreSQL). Each window's merged count is the sum of the parts and its p99 the p99 of the union of both
    generators' raw samples; the stack saw both generators' addresses."""
    from pgarena.system import netns

    if (reason := netns.available()) is not None:
        pytest.skip(f"cannot create network namespaces here: {reason}")
    peers = tmp_path / "peers"
    monkeypatch.setenv("FIXTURE_PEERS", str(peers))
    config = build_config(project_dir=tmp_path, overrides={
        "ceiling_s": 0, "headroom": False, "stacks_dir": FIXTURE_STACKS, "results_dir": tmp_path, "run_id": "ns2",
        "stacks": ["fixture-good"], "workloads": ["users"], "users_limits": [5], "vus": [4], "repetitions": 2,
        "warmup_s": 1, "duration_s": 1.5, "warmup_cap_s": 1,
        "topology": str(PROJECT_DIR / "examples" / "topology-netns.toml")})
    assert config.engine == "k6"  # chosen for two generators
    run_dir = runner.execute(config, kind="run", project_dir=PROJECT_DIR, command_line="test", log=lambda _: None)
    results = load(run_dir)
    roles = results.topology.roles
    assert [roles[f"generator {i}"].host.rsplit("-", 1)[1] for i in (1, 2)] == ["ge1", "ge2"]
    (cell,) = results.cells
    assert cell.status == "ok", (cell.error, cell.flags)
    for rep in cell.repetitions:
        places = rep.generators.places
        assert [p.name for p in places] == ["gen1", "gen2"] and all(p.requests > 0 for p in places)
        assert rep.requests == sum(p.requests for p in places)
        union = [v for p in places for v in _samples(run_dir / p.raw_samples)]
        assert len(union) == rep.requests
        assert rep.latency.p99_ms == pytest.approx(_p99(union), abs=1e-9)
    seen = set(peers.read_text().split())
    assert {roles["generator 1"].address, roles["generator 2"].address} <= seen
    assert "127.0.0.1" not in seen
    assert not [n for n in netns.list_namespaces() if n.startswith(roles["stack"].host.rsplit("-", 1)[0])]


def test_the_headroom_of_two_local_generators_is_theirs_together_with_each_ones_part(tmp_path, k6):
    """Issue 22 item 5: with --generators 2 the trivial endpoint is driven by both k6 processes together, as
    every cell is; each one's part and its CPU (both on the generator CPU, shared) are recorded."""
    from pgarena.load.headroom import HeadroomUnavailable, measure_headroom

    config = build_config(project_dir=tmp_path, overrides={"engine": "k6", "generators": 2, "warmup_s": 1.0,
                                                           "duration_s": 2.0})
    try:
        headroom = measure_headroom(k6, config, tmp_path, places=local_places(2))
    except HeadroomUnavailable as exc:  # pragma: no cover — the trivial endpoint needs Go once
        pytest.skip(f"the trivial endpoint cannot run here: {exc}")
    assert [p.name for p in headroom.places] == ["gen1", "gen2"] and headroom.cpu_not_measured == []
    assert all(p.host == "local" and p.rps > 0 and p.cpu_fraction is not None for p in headroom.places)
    assert headroom.places[0].cpu_fraction == headroom.places[1].cpu_fraction == headroom.generator_cpu_fraction
    assert sum(p.rps for p in headroom.places) == pytest.approx(headroom.rps, rel=0.1)
