"""Kubernetes: `pgarena k8s export` writes one cell as a k6-operator TestRun, `pgarena ingest` turns its
outputs into a run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from pgarena.cli.common import PROJECT_DIR, SOURCE_DIR, check_run_id, command_line, fail, out, print_outputs
from pgarena.cli.options import ResultsDirOpt, RunIdOpt, StacksDirOpt
from pgarena.config.defaults import DEFAULT_HTTP_TIMEOUT_S
from pgarena.config.stackdef import load_stacks
from pgarena.pipeline.runner import describe_os_error, new_run_id


k8s_app = typer.Typer(no_args_is_help=True, help="Kubernetes: one cell as a k6-operator TestRun (docs/distributed.md).")


@k8s_app.command("export")
def k8s_export(
    url: Annotated[str, typer.Option(help="the stack's base URL as the cluster's pods reach it, e.g. "
                                          "http://my-stack.default.svc:8080")],
    workload: Annotated[str, typer.Option(help="the workload to load, e.g. users")],
    parameter: Annotated[Optional[int], typer.Option(help="its parameter (perf-test rows, users limit, ...)")] = None,
    vus: Annotated[int, typer.Option(help="closed model: VUs over all runners; open model: most in flight")] = 50,
    rate: Annotated[Optional[float], typer.Option(help="open model: requests/s over all runners")] = None,
    duration: Annotated[float, typer.Option(help="seconds of load")] = 30.0,
    parallelism: Annotated[int, typer.Option(help="k6 runner pods, each one execution segment")] = 2,
    name: Annotated[Optional[str], typer.Option(help="the TestRun's name (default pgarena-<workload>)")] = None,
    namespace: Annotated[Optional[str], typer.Option(help="namespace of every object (default: kubectl's)")] = None,
    stack: Annotated[str, typer.Option(help="the stack's id: recorded in the outputs, its routes read from "
                                            "--stacks-dir when it is there")] = "",
    http_timeout: Annotated[float, typer.Option(help="seconds before a request counts as timed out")] = (
        DEFAULT_HTTP_TIMEOUT_S),
    output_claim: Annotated[Optional[str], typer.Option(
        help="an existing PersistentVolumeClaim for the outputs (default: one is created, ReadWriteMany)")] = None,
    storage_class: Annotated[Optional[str], typer.Option(help="storage class of the created claim")] = None,
    separate: Annotated[bool, typer.Option("--separate", help="every runner on its own node")] = False,
    stacks_dir: StacksDirOpt = PROJECT_DIR / "stacks",
    out_file: Annotated[Optional[Path], typer.Option("--out", help="the manifest file (default <name>.yaml)")] = None,
) -> None:
    """Write a k6-operator TestRun (parallelism N), its script's ConfigMap, an outputs claim and a collector pod."""
    from pgarena.contract import workloads as wl
    from pgarena.load import k8s

    if workload in wl.WORKLOAD_NAMES and wl.PARAMETER_NAMES.get(workload) and parameter is None:
        raise fail(f"--workload {workload} needs --parameter (its {wl.PARAMETER_NAMES[workload]})")
    routes: dict[str, str] = {}
    if stack:
        found = next((s for s in load_stacks(stacks_dir)[0] if s.id == stack), None)
        routes = dict(found.definition.routes) if found is not None else {}
    spec = k8s.ExportSpec(name=name or f"pgarena-{workload}", base_url=url, workload=workload, parameter=parameter,
                          vus=vus, duration_s=duration, parallelism=parallelism, stack=stack, rate=rate,
                          timeout_s=http_timeout, routes=routes, namespace=namespace, output_claim=output_claim,
                          storage_class=storage_class, separate=separate)
    try:
        path = k8s.export(spec, out_file or Path(f"{spec.name}.yaml"))
    except ValueError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"cannot write the manifest: {describe_os_error(exc)}") from None
    out.print(f"Manifest: {path} (k6-operator {k8s.K6_OPERATOR_VERSION} TestRun, {parallelism} runners); "
              "the commands that run it and collect its outputs: docs/distributed.md", highlight=False)


def ingest(
    outputs: Annotated[list[Path], typer.Argument(help="k6 outputs: folders or *.k6-summary.json files (raw "
                                                       "samples *.k6.csv.gz beside each)")],
    stack: Annotated[Optional[str], typer.Option(help="the stack's id (default: recorded in the outputs)")] = None,
    workload: Annotated[Optional[str], typer.Option(help="the workload (default: recorded in the outputs)")] = None,
    parameter: Annotated[Optional[int], typer.Option(help="its parameter (default: recorded in the outputs)")] = None,
    run_id: RunIdOpt = None,
    stacks_dir: StacksDirOpt = PROJECT_DIR / "stacks",
    results_dir: ResultsDirOpt = PROJECT_DIR / "results",
) -> None:
    """Turn the k6 outputs of a `k8s export` TestRun (one per runner pod) into a run: results.json and reports."""
    from pgarena.pipeline.ingest import IngestError
    from pgarena.pipeline.ingest import ingest as ingest_outputs

    check_run_id(run_id)
    line = command_line()
    try:
        run_dir = ingest_outputs(outputs, results_dir=results_dir, stacks_dir=stacks_dir, project_dir=SOURCE_DIR,
                                 command_line=line, run_id=run_id or new_run_id(), stack=stack,
                                 workload=workload, parameter=parameter)
    except IngestError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(describe_os_error(exc)) from None
    print_outputs(run_dir)
