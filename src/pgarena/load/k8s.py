"""`pgarena k8s export`: one cell as a k6-operator TestRun, so a Kubernetes user runs pgarena's load in
the cluster and `pgarena ingest` turns what the pods wrote into a pgarena run (docs/distributed.md).

The manifests follow the TestRun CRD of k6-operator v1.6.0 (grafana/k6-operator, api/v1alpha1/
testrun_types.go; its runner command is built in pkg/resources/jobs/runner.go): `spec.parallelism` runners,
each `k6 run --quiet --execution-segment=… --execution-segment-sequence=… <arguments> /test/<file>
--address=0.0.0.0:6565 --paused --tag instance_id=<i> --tag testrun_name=<name>`, resumed together by the
operator's starter. `spec.arguments` (a space-separated string, also understood by older operators; the
newer `spec.args` list is not needed: no argument has a space) carries what K6Engine.command passes
besides the PGARENA_* settings, which go into `spec.runner.env` (k6 reads `__ENV` from the process
environment; the operator passes the runner's env to its initializer too).

Outputs: a ConfigMap is mounted read-only at /test (pkg/types/script.go), so the pods write to a
PersistentVolumeClaim mounted at OUTPUT_DIR, one summary and one gzipped CSV of raw samples per pod,
named by the pod (`$(POD_NAME)`, expanded by the kubelet). A collector pod mounts the same claim for
`kubectl cp`. The claim must be mountable by every runner at once (ReadWriteMany, or all runners on one
node); its storage class is the cluster's default unless given.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from pgarena.contract import workloads as wl
from pgarena.load.distributed import CSV_SYSTEM_TAGS
from pgarena.load.engines.k6 import K6_VERSION, _duration
from pgarena.verify import variants

K6_OPERATOR_VERSION = "v1.6.0"
"""The k6-operator release whose TestRun CRD (k6.io/v1alpha1) these manifests follow."""
K6_IMAGE = f"grafana/k6:{K6_VERSION}"
"""The runners' image: the k6 version pgarena pins (an Alpine image, with the `tar` that `kubectl cp` needs)."""
K6_USER_GROUP = 12345
"""grafana/k6 runs as this user and group: the claim is made writable for it (fsGroup)."""
SCRIPT_FILE = "k6_script.js"
SCRIPT_DIR = "/test"
"""Where k6-operator mounts a ConfigMap script (pkg/types/script.go)."""
URLS_FILE = "urls.txt"
BODIES_FILE = "bodies.txt"
OUTPUT_DIR = "/pgarena-out"
K8S_TX_BODIES = 10_000
"""tx bodies in the ConfigMap (a ConfigMap holds at most 1 MiB; pgarena's local runs draw from 100,000)."""
CONFIGMAP_LIMIT_BYTES = 1_048_576
NAME_PATTERN = re.compile(r"[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?")
"""A TestRun name: a DNS label short enough for the operator's `<name>-initializer-xxxxx` pod names."""


@dataclass(frozen=True)
class ExportSpec:
    """One cell to export. `base_url` is the stack as the cluster's pods reach it (e.g.
    http://my-stack.default.svc:8080)."""

    name: str
    base_url: str
    workload: str
    parameter: int | None
    vus: int
    duration_s: float
    parallelism: int
    stack: str = ""
    rate: float | None = None
    timeout_s: float = 10.0
    routes: dict[str, str] | None = None
    namespace: str | None = None
    output_claim: str | None = None
    """An existing PersistentVolumeClaim for the outputs (None: the export creates `<name>-out`)."""
    storage_class: str | None = None
    storage: str = "1Gi"
    separate: bool = False
    """k6-operator's `separate`: every runner on its own node."""


def check(spec: ExportSpec) -> None:
    """ValueError naming what is wrong with `spec` (the CLI turns it into one line)."""
    if not NAME_PATTERN.fullmatch(spec.name):
        raise ValueError(f"--name '{spec.name}': lowercase letters, digits and '-', at most 42 characters")
    if spec.workload not in wl.WORKLOAD_NAMES:
        raise ValueError(f"unknown workload '{spec.workload}'; known: {', '.join(wl.WORKLOAD_NAMES)}")
    if not spec.base_url.startswith(("http://", "https://")):
        raise ValueError(f"--url '{spec.base_url}' must start with http:// or https://")
    if spec.parallelism < 1 or spec.vus < 1 or spec.duration_s < 1:
        raise ValueError("--parallelism and --vus must be at least 1 and --duration at least 1 s")
    if spec.rate is not None and spec.rate <= 0:
        raise ValueError("--rate must be positive")


def script_text() -> str:
    return resources.files("pgarena.load.engines").joinpath(SCRIPT_FILE).read_text(encoding="utf-8")


def data_files(spec: ExportSpec) -> dict[str, str]:
    """The ConfigMap's files besides the script: the cell's variant URLs or its tx bodies."""
    routes = spec.routes or {}
    if spec.workload == wl.TX:
        bodies = wl.random_tx_bodies(K8S_TX_BODIES, 1)
        return {BODIES_FILE: "\n".join(b.decode() for b in bodies) + "\n"}
    requests = variants.requests_for(spec.workload, spec.parameter)
    if len(requests) < 2:
        return {}
    lines = [spec.base_url.rstrip("/") + wl.routed(r.path, routes) for r in requests]
    return {URLS_FILE: "\n".join(lines) + "\n"}


def settings(spec: ExportSpec, files: dict[str, str]) -> dict[str, str]:
    """The PGARENA_* settings of K6Engine.command for this cell, with the pods' paths; plus what `pgarena
    ingest` reads back (stack, workload, parameter)."""
    request = wl.load_request(spec.workload, spec.parameter)
    values = {
        "PGARENA_URL": spec.base_url.rstrip("/") + wl.routed(request.path, spec.routes or {}),
        "PGARENA_METHOD": request.method,
        "PGARENA_VUS": str(spec.vus),
        "PGARENA_DURATION": _duration(spec.duration_s),
        "PGARENA_TIMEOUT": _duration(spec.timeout_s),
        "PGARENA_SUMMARY": f"{OUTPUT_DIR}/$(POD_NAME).k6-summary.json",
    }
    if spec.rate is not None:
        values["PGARENA_RATE"] = str(max(1, round(spec.rate)))
    if BODIES_FILE in files:
        values["PGARENA_BODIES_FILE"] = f"{SCRIPT_DIR}/{BODIES_FILE}"
    elif request.body is not None:
        values["PGARENA_BODY"] = request.body.decode()
    if URLS_FILE in files:
        values["PGARENA_URLS_FILE"] = f"{SCRIPT_DIR}/{URLS_FILE}"
    if request.content_type:
        values["PGARENA_CONTENT_TYPE"] = request.content_type
    values["PGARENA_STACK"] = spec.stack
    values["PGARENA_WORKLOAD"] = spec.workload
    values["PGARENA_PARAMETER"] = "" if spec.parameter is None else str(spec.parameter)
    return values


def k6_arguments() -> list[str]:
    """K6Engine.command's options (the operator adds --quiet, the segment, --paused and --address), with
    the raw samples written like a local distributed window's (distributed.py)."""
    return ["--no-color", "--no-usage-report", "--no-thresholds", f"--system-tags={CSV_SYSTEM_TAGS}",
            "--out", f"csv={OUTPUT_DIR}/$(POD_NAME).k6.csv.gz"]


def manifests(spec: ExportSpec) -> list[dict]:
    """ConfigMap (script and data), the outputs' PersistentVolumeClaim (unless one is given), the TestRun and
    the collector pod, in the order `kubectl apply` needs them."""
    check(spec)
    files = data_files(spec)
    config_map = {SCRIPT_FILE: script_text(), **files}
    size = sum(len(v.encode()) for v in config_map.values())
    if size > CONFIGMAP_LIMIT_BYTES:
        raise ValueError(f"the ConfigMap would hold {size:,} bytes; Kubernetes allows {CONFIGMAP_LIMIT_BYTES:,}")
    meta = {"namespace": spec.namespace} if spec.namespace else {}
    labels = {"app.kubernetes.io/managed-by": "pgarena", "pgarena/cell": spec.name}
    claim = spec.output_claim or f"{spec.name}-out"
    env = [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
           *({"name": k, "value": v} for k, v in settings(spec, files).items())]
    volume = {"name": "pgarena-out", "persistentVolumeClaim": {"claimName": claim}}
    mount = {"name": "pgarena-out", "mountPath": OUTPUT_DIR}
    docs: list[dict] = [{"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": f"{spec.name}-script", **meta, "labels": labels}, "data": config_map}]
    if spec.output_claim is None:
        claim_spec: dict = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": spec.storage}}}
        if spec.storage_class:
            claim_spec["storageClassName"] = spec.storage_class
        docs.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                     "metadata": {"name": claim, **meta, "labels": labels}, "spec": claim_spec})
    run_spec: dict = {
        "parallelism": spec.parallelism,
        "script": {"configMap": {"name": f"{spec.name}-script", "file": SCRIPT_FILE}},
        "arguments": " ".join(k6_arguments()),
        "runner": {"image": K6_IMAGE, "env": env, "volumes": [volume], "volumeMounts": [mount],
                   "securityContext": {"fsGroup": K6_USER_GROUP}},
    }
    if spec.separate:
        run_spec["separate"] = True
    docs.append({"apiVersion": "k6.io/v1alpha1", "kind": "TestRun",
                 "metadata": {"name": spec.name, **meta, "labels": labels}, "spec": run_spec})
    docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{spec.name}-collect", **meta,
                                                                 "labels": labels},
                 "spec": {"restartPolicy": "Never", "securityContext": {"fsGroup": K6_USER_GROUP},
                          "containers": [{"name": "collect", "image": K6_IMAGE, "command": ["sleep", "3600"],
                                          "volumeMounts": [mount]}],
                          "volumes": [volume]}})
    return docs


def _scalar(value: object) -> str:
    """A YAML scalar that no YAML version reads as anything else: numbers and booleans as such, every
    string double-quoted (JSON's escapes are a subset of YAML's), so 'y', 'on' or '0:1/2' stay strings."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(str(value), ensure_ascii=False)


_PLAIN_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_./-]*")
_YAML_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}
"""Words some YAML version reads as booleans or null: never written plain."""


def _key(key: object) -> str:
    text = str(key)
    return text if _PLAIN_KEY.fullmatch(text) and text.lower() not in _YAML_WORDS else _scalar(text)


def _block_ok(text: str) -> bool:
    """A string that a literal block scalar (`|`) keeps exactly: ends with one newline, no leading blank
    or indented first line, no tab-indented or trailing-blank lines, printable."""
    lines = text.split("\n")
    return (text.endswith("\n") and not text.endswith("\n\n") and len(lines) > 2 and lines[0].strip() != ""
            and not lines[0].startswith((" ", "\t")) and all(line == line.rstrip() for line in lines)
            and all(ch == "\n" or ch == "\t" or ch.isprintable() for ch in text))


def _empty_or_scalar(value: object) -> str:
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _scalar(value)


def _emit(value: object, indent: int, out: list[str]) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                out.append(f"{pad}{_key(key)}:")
                _emit(item, indent + 2, out)
            elif isinstance(item, str) and _block_ok(item):
                out.append(f"{pad}{_key(key)}: |")
                out.extend(f"{pad}  {line}" if line else "" for line in item[:-1].split("\n"))
            else:
                out.append(f"{pad}{_key(key)}: {_empty_or_scalar(item)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict | list) and item:
                inner: list[str] = []
                _emit(item, indent + 2, inner)
                out.append(f"{pad}- {inner[0].lstrip()}")
                out.extend(inner[1:])
            else:
                out.append(f"{pad}- {_empty_or_scalar(item)}")
    else:
        out.append(f"{pad}{_scalar(value)}")


def to_yaml(documents: list[dict]) -> str:
    """A YAML stream of `documents` (block style; every string quoted or a literal block)."""
    parts = []
    for doc in documents:
        lines: list[str] = []
        _emit(doc, 0, lines)
        parts.append("\n".join(lines) + "\n")
    return "---\n" + "---\n".join(parts)


def export(spec: ExportSpec, path: Path) -> Path:
    """Write the manifests of `spec` to `path` (YAML)."""
    path.write_text(f"# pgarena k8s export: k6-operator {K6_OPERATOR_VERSION} TestRun (k6.io/v1alpha1), "
                    f"k6 {K6_VERSION}\n" + to_yaml(manifests(spec)), encoding="utf-8")
    return path
