"""`pgarena k8s export` (load/k8s.py) and `pgarena ingest` (pipeline/ingest.py) on recorded outputs.

The manifests are parsed by PyYAML (a test dependency) and compared with what pgarena meant to write. The outputs in
tests/fixtures/k8s/operator-2 were written by the exported script run the way k6-operator runs it
(tests/fixtures/k8s/record.py re-records them; tests/integration/test_distributed.py does it live).
"""

from __future__ import annotations

import csv
import gzip
import json
import shutil
import statistics
from pathlib import Path

import pytest
import yaml

from pgarena.load import k8s
from pgarena.load.engines.base import LoadSpec
from pgarena.load.engines.k6 import K6Engine
from pgarena.pipeline.ingest import IngestError, ingest
from pgarena.results.store import load

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "k8s"
PROJECT_DIR = Path(__file__).resolve().parents[2]


def _yaml_load_all(path: Path) -> list[dict]:
    """The documents of a YAML file as PyYAML reads them."""
    with open(path, encoding="utf-8") as handle:
        return list(yaml.safe_load_all(handle))


def _spec(**changes) -> k8s.ExportSpec:
    values = dict(name="pga-users", base_url="http://stack.bench.svc:8080", workload="users", parameter=20, vus=50,
                  duration_s=30, parallelism=4, stack="go-nethttp-pgx")
    return k8s.ExportSpec(**{**values, **changes})


@pytest.mark.parametrize("workload, parameter", [("users", 20), ("tx", None), ("graphql", None), ("perf-test", 100)])
def test_the_export_is_valid_yaml_that_reads_back_as_written(tmp_path, workload, parameter):
    spec = _spec(workload=workload, parameter=parameter, name=f"pga-{workload}")
    path = k8s.export(spec, tmp_path / "m.yaml")
    assert _yaml_load_all(path) == k8s.manifests(spec)


def test_the_testrun_has_the_parallelism_the_script_and_the_arguments(tmp_path):
    docs = _yaml_load_all(k8s.export(_spec(workload="perf-test", parameter=100, name="pga-users"), tmp_path / "m.yaml"))
    assert [d["kind"] for d in docs] == ["ConfigMap", "PersistentVolumeClaim", "TestRun", "Pod"]
    config_map, claim, run, collector = docs
    assert run["apiVersion"] == "k6.io/v1alpha1"
    assert run["spec"]["parallelism"] == 4
    assert run["spec"]["script"] == {"configMap": {"name": "pga-users-script", "file": "k6_script.js"}}
    assert config_map["metadata"]["name"] == "pga-users-script"
    assert config_map["data"]["k6_script.js"] == k8s.script_text()
    assert len(config_map["data"]["urls.txt"].splitlines()) > 1  # the cell's variants, with the cluster's URL
    assert all(line.startswith("http://stack.bench.svc:8080/api/perf-test?") for line in
               config_map["data"]["urls.txt"].splitlines())
    arguments = run["spec"]["arguments"].split()
    assert arguments == ["--no-color", "--no-usage-report", "--no-thresholds", "--system-tags=status,error_code",
                         "--out", "csv=/pgarena-out/$(POD_NAME).k6.csv.gz"]
    runner = run["spec"]["runner"]
    assert runner["image"] == "grafana/k6:1.1.0"
    assert claim["metadata"]["name"] == runner["volumes"][0]["persistentVolumeClaim"]["claimName"] == "pga-users-out"
    assert collector["spec"]["volumes"] == runner["volumes"]
    assert runner["env"][0] == {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    assert {"name": "PGARENA_URLS_FILE", "value": "/test/urls.txt"} in runner["env"]


def test_the_runners_get_the_settings_of_a_local_window(tmp_path):
    """The PGARENA_* settings are K6Engine.command's for the same cell, with the pods' paths."""
    env = {e["name"]: e.get("value") for e in k8s.manifests(_spec(rate=900.0))[2]["spec"]["runner"]["env"]}
    engine = K6Engine()
    engine._binary = Path("/opt/k6")
    argv = engine.command(LoadSpec(url="http://stack.bench.svc:8080/api/users?limit=20", method="GET", connections=50,
                                   duration_s=30, timeout_s=10, rate=900.0), tmp_path, "s")
    local = dict(a.split("=", 1) for a in argv if a.startswith("PGARENA_"))
    assert {k: env[k] for k in local if k != "PGARENA_SUMMARY"} == {k: v for k, v in local.items() if k != "PGARENA_SUMMARY"}
    assert env["PGARENA_SUMMARY"] == "/pgarena-out/$(POD_NAME).k6-summary.json"
    assert (env["PGARENA_STACK"], env["PGARENA_WORKLOAD"], env["PGARENA_PARAMETER"]) == ("go-nethttp-pgx", "users", "20")


def test_tx_bodies_fit_a_configmap_and_a_given_claim_is_used():
    docs = k8s.manifests(_spec(workload="tx", parameter=None, output_claim="shared-rwx"))
    assert [d["kind"] for d in docs] == ["ConfigMap", "TestRun", "Pod"]
    data = docs[0]["data"]
    assert len(data["bodies.txt"].splitlines()) == k8s.K8S_TX_BODIES
    assert sum(len(v.encode()) for v in data.values()) < k8s.CONFIGMAP_LIMIT_BYTES
    assert docs[1]["spec"]["runner"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == "shared-rwx"


@pytest.mark.parametrize("changes, needle", [({"name": "Bad_Name"}, "--name"), ({"workload": "nope"}, "unknown workload"),
                                             ({"base_url": "stack:8080"}, "--url"), ({"parallelism": 0}, "at least 1")])
def test_a_bad_cell_is_refused(changes, needle):
    with pytest.raises(ValueError, match=needle):
        k8s.manifests(_spec(**changes))


def test_strings_yaml_would_misread_stay_strings(tmp_path):
    docs = [{"y": "on", "n": ["no", "0:1/2", "1.0", "null", "~"], "text": "line one\n  two\n", "empty": {}}]
    (tmp_path / "t.yaml").write_text(k8s.to_yaml(docs))
    assert _yaml_load_all(tmp_path / "t.yaml") == docs


def _independent_samples(path: Path) -> list[float]:
    with gzip.open(path, "rt", newline="") as handle:
        return [float(row["metric_value"]) for row in csv.DictReader(handle) if row["metric_name"] == "pgarena_latency"]


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    position = 0.99 * (len(ordered) - 1)
    low = int(position)
    return ordered[low] + (ordered[min(low + 1, len(ordered) - 1)] - ordered[low]) * (position - low)


def test_ingest_merges_the_runners_outputs_exactly(tmp_path):
    run_dir = ingest([FIXTURES / "operator-2"], results_dir=tmp_path, stacks_dir=PROJECT_DIR / "tests" / "fixtures" / "stacks",
                     project_dir=PROJECT_DIR, command_line="pgarena ingest", run_id="k8s")
    results = load(run_dir)
    assert results.kind == "ingest" and results.ingested is not None
    assert results.ingested.segments == ["0:1/2", "1/2:1"]
    (cell,) = results.cells
    (rep,) = cell.repetitions
    summaries = [json.loads(p.read_text()) for p in sorted((FIXTURES / "operator-2").glob("*.k6-summary.json"))]
    counts = [sum(int(s["metrics"][m]["values"]["count"]) for m in ("pgarena_2xx", "pgarena_non_2xx")
                  if m in s["metrics"]) for s in summaries]
    assert rep.requests == sum(counts) == sum(p.requests for p in rep.generators.places)
    union = [v for p in sorted((FIXTURES / "operator-2").glob("*.k6.csv.gz")) for v in _independent_samples(p)]
    assert len(union) == rep.requests
    assert rep.latency.p99_ms == pytest.approx(_p99(union), abs=1e-9)
    assert rep.latency.p99_ms != pytest.approx(statistics.fmean(p.latency_p99_ms for p in rep.generators.places))
    assert (cell.stack, cell.workload, cell.parameter, cell.vus, cell.duration_seconds) == ("fixture-good", "users", 20, 2, 1.0)
    # what pgarena could not see is not measured, never 0
    assert rep.stack_cpu_seconds is rep.db_cpu_seconds is rep.stack_rss_peak_bytes is rep.generator_cpu_seconds is None
    assert all(p.cpu_seconds is None and p.clock_offset_seconds is None for p in rep.generators.places)
    assert cell.summary.stack_cpu_us_per_request is None and cell.summary.generator_cpu_fraction is None
    report = (run_dir / "report.md").read_text()
    assert "## Generators" in report and "Ingested from 2 k6 output(s)" in report
    assert (run_dir / "report.html").is_file()


def test_ingest_refuses_outputs_that_are_not_one_whole_test(tmp_path):
    kwargs = dict(results_dir=tmp_path / "r", stacks_dir=tmp_path, project_dir=PROJECT_DIR, command_line="x",
                  run_id="x")
    one = tmp_path / "one"
    one.mkdir()
    for path in (FIXTURES / "operator-2").glob("pga-users-1-local.*"):
        shutil.copy(path, one / path.name)
    with pytest.raises(IngestError, match="missing"):
        ingest([one], **kwargs)
    other = tmp_path / "other"
    shutil.copytree(FIXTURES / "operator-2", other)
    summary = other / "pga-users-2-local.k6-summary.json"
    data = json.loads(summary.read_text())
    data["pgarena"]["settings"]["PGARENA_VUS"] = "3"
    summary.write_text(json.dumps(data))
    with pytest.raises(IngestError, match="settings differ: PGARENA_VUS"):
        ingest([other], **kwargs)
    (other / "pga-users-2-local.k6.csv.gz").unlink()
    with pytest.raises(IngestError, match="no raw samples"):
        ingest([other], **kwargs)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(IngestError, match="no k6 summary"):
        ingest([empty], **kwargs)
