"""One measured window: the load spec, its request files and the generator run (its record: windowrecord.py)."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from pgarena.config.run import RunConfig
from pgarena.contract import workloads as wl
from pgarena.load.distributed import GeneratorPlace, distributed, run_distributed_window
from pgarena.load.engines import Engine, LoadSpec
from pgarena.load.engines.base import EngineOutputError
from pgarena.load.windowrecord import Window, offered_requests, window_cpu_seconds
from pgarena.results.models import Cell
from pgarena.system.children import run_measured
from pgarena.verify import variants


def workload_stem(workload: str, parameter: int | None) -> str:
    """'perf-test-rows100', 'static': the start of every raw-output file name."""
    return workload if parameter is None else f"{workload}-{wl.PARAMETER_NAMES[workload]}{parameter}"


def cell_label(cell: Cell) -> str:
    """File-name stem of a cell's raw outputs."""
    level = f"vus{cell.vus}" if cell.model == "closed" else f"rate{cell.arrival_rate:.0f}"
    return f"{workload_stem(cell.workload, cell.parameter)}-{level}"


def load_spec(cell_workload: str, parameter: int | None, *, base_url: str, routes: dict[str, str],
              connections: int, config: RunConfig, rate: float | None = None,
              bodies_file: Path | None = None, urls_file: Path | None = None) -> LoadSpec:
    """The generator's request shape for a workload and parameter (duration set per window); with
    `urls_file` each request takes one of its URLs (the cell's variants)."""
    request = wl.load_request(cell_workload, parameter)
    return LoadSpec(url=base_url + wl.routed(request.path, routes), method=request.method, connections=connections,
                    duration_s=0, timeout_s=config.http_timeout_s, body=request.body,
                    content_type=request.content_type, bodies_file=bodies_file,
                    workload=cell_workload, rate=rate,
                    urls_file=urls_file)


def request_spec(workload: str, parameter: int | None, *, stack: str, label: str, raw_dir: Path, base_url: str,
                 routes: dict[str, str], connections: int, config: RunConfig, rate: float | None = None) -> LoadSpec:
    """The load spec of a cell with the request files its windows use, written to `raw_dir` under `label`: tx's
    random transactions (`write_tx_bodies`) or a read workload's variant URLs (`variants_file`)."""
    if workload == wl.TX:
        return load_spec(workload, parameter, base_url=base_url, routes=routes, connections=connections,
                         config=config, rate=rate, bodies_file=write_tx_bodies(raw_dir, stack, label))
    return load_spec(workload, parameter, base_url=base_url, routes=routes, connections=connections, config=config,
                     rate=rate, urls_file=variants_file(raw_dir, label, workload, parameter, base_url, routes))


def variants_file(raw_dir: Path, label: str, workload: str, parameter: int | None, base_url: str,
                  routes: dict[str, str]) -> Path | None:
    """The URL file of a workload's variants (None: a single request, nothing to vary)."""
    requests = variants.requests_for(workload, parameter) if workload != wl.TX else []
    if len(requests) < 2:
        return None
    return variants.write_urls_file(raw_dir / f"{label}.urls", base_url, routes, requests)


def write_tx_bodies(raw_dir: Path, stack: str, label: str) -> Path:
    """A file of random TPC-B transactions, one per line, seeded by stack and cell (repeatable)."""
    path = raw_dir / f"{label}.bodies"
    seed = zlib.crc32(f"{stack}/{label}".encode())
    path.write_bytes(b"\n".join(wl.random_tx_bodies(wl.TX_BODIES_PER_FILE, seed)) + b"\n")
    return path


def run_window(engine: Engine, spec: LoadSpec, duration_s: float, raw_dir: Path, stem: str,
               config: RunConfig, places: Sequence[GeneratorPlace] = ()) -> Window:
    """Run the generator once, pinned to the generator CPUs and bounded in time; parse its output.

    With more than one place the window is driven by one k6 process per place and merged
    (distributed.py); with one place or none, by the one generator below, exactly as always.

    With `spec.lead_in_s` (an engine with `lead_in`, closed model, one generator here) the process first loads
    the stack for that long over the same connections, and the window is the `duration_s` after it, cut by
    each answer's end time (the re-warm without a new process and new connections: docs/methodology.md).

    The generator's CPU is read over the measured window only (docs/methodology.md, "Generator CPU"):
    its process CPU is sampled while it runs; the window ends when it writes its summary (the raw
    output file's modification time) and began the window's measured duration earlier, so k6's start-up
    (JavaScript VMs, SharedArray) and oha's per-request file after the window are not counted.
    """
    if distributed(places):  # a generator elsewhere: copied there too
        return run_distributed_window(engine, spec, duration_s, raw_dir, stem, config, places)
    argv = [*engine.argv_prefix, *engine.command(replace(spec, duration_s=duration_s), raw_dir, stem)]
    samples: list[tuple[float, float]] = []
    code, process_cpu = run_measured(argv, stdout_path=raw_dir / f"{stem}.stdout",
                                     stderr_path=raw_dir / f"{stem}.stderr", cpus=config.generator_cpus,
                                     timeout_s=spec.lead_in_s + duration_s + 2 * config.http_timeout_s + 60,
                                     cpu_samples=samples)
    try:
        if spec.lead_in_s:
            outcome = engine.parse_after_lead_in(raw_dir, stem, lead_in_s=spec.lead_in_s, window_s=duration_s,
                                                 timeout_s=spec.timeout_s)
        else:
            outcome = engine.parse(raw_dir, stem, timeout_s=spec.timeout_s, offered=offered_requests(spec, duration_s))
    except EngineOutputError as exc:
        raise EngineOutputError(f"{exc} (exit code {code}; see {raw_dir / (stem + '.stderr')})") from None
    raw = engine.raw_output(raw_dir, stem)
    return Window(outcome, window_cpu_seconds(samples, raw, outcome.duration_seconds, process_cpu), raw,
                  process_cpu)
