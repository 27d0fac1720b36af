"""`pgarena ingest`: k6 outputs recorded elsewhere (the runner pods of a `pgarena k8s export` TestRun) turned
into a pgarena run folder — results.json and the reports — with one cell merged exactly like a local
distributed window (load/merge.py).

Each output is one k6_script.js summary (`<pod>.k6-summary.json`, which records the PGARENA_* settings and
the execution segment it ran) beside its raw samples (`<pod>.k6.csv.gz`). The outputs must be of one test
(same settings) and cover every segment of its sequence once. What pgarena cannot see from them — the
stack's and PostgreSQL's CPU and memory, the generators' CPU, answers checked under load, database
accounting — is recorded as not measured (None), never as 0.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

from pgarena.config.profiles import build_config
from pgarena.config.run import RunConfig
from pgarena.config.stackdef import load_stacks
from pgarena.contract import workloads as wl
from pgarena.load.distributed import execution_segments
from pgarena.load.engines.base import EngineOutputError
from pgarena.load.merge import MERGE_METHOD, PlaceOutput, merge, read_latency_samples, summary_counts
from pgarena.load.summary import summarize
from pgarena.pipeline.plan import stack_info
from pgarena.results.models import (
    Cell,
    DistributedLoad,
    GeneratorFigures,
    IngestRecord,
    Repetition,
    RunResults,
    StackInfo,
)
from pgarena.results.store import save
from pgarena.system.environment import collect

SUMMARY_SUFFIX = ".k6-summary.json"
SAMPLES_SUFFIXES = (".k6.csv.gz", ".k6.csv")
PER_RUN_SETTINGS = ("PGARENA_SUMMARY",)
"""Settings that differ between the outputs of one test (each pod's own file names)."""
NOT_MEASURED = ["stack CPU and memory", "PostgreSQL CPU", "the generators' CPU", "answers checked under load",
                "database accounting of the windows", "TPC-B invariants (tx)"]
SOURCE = "k6 outputs (a k6-operator TestRun's runner pods): one summary and one raw-sample file per process"


class IngestError(Exception):
    """The outputs cannot be ingested (the message says why, in one line)."""


@dataclass(frozen=True)
class Output:
    """One process's output: its summary document and its raw-sample file."""

    name: str
    summary_path: Path
    samples_path: Path
    summary: dict

    @property
    def settings(self) -> dict[str, str]:
        return dict((self.summary.get("pgarena") or {}).get("settings") or {})

    @property
    def segment(self) -> str | None:
        return (self.summary.get("pgarena") or {}).get("segment")

    @property
    def sequence(self) -> str | None:
        return (self.summary.get("pgarena") or {}).get("sequence")


def find_outputs(paths: list[Path]) -> list[Output]:
    """Every summary among `paths` (a folder: each `*.k6-summary.json` in it) with its raw samples beside it."""
    summaries: list[Path] = []
    for path in paths:
        if path.is_dir():
            summaries += sorted(path.glob(f"*{SUMMARY_SUFFIX}"))
        elif path.name.endswith(SUMMARY_SUFFIX) and path.is_file():
            summaries.append(path)
        else:
            raise IngestError(f"{path}: not a folder nor a k6 summary (*{SUMMARY_SUFFIX})")
    if not summaries:
        raise IngestError(f"no k6 summary (*{SUMMARY_SUFFIX}) in {', '.join(map(str, paths))}")
    outputs = []
    for path in summaries:
        name = path.name.removesuffix(SUMMARY_SUFFIX)
        samples = next((path.with_name(name + s) for s in SAMPLES_SUFFIXES if path.with_name(name + s).is_file()),
                       None)
        if samples is None:
            raise IngestError(f"{path}: no raw samples beside it ({name}{SAMPLES_SUFFIXES[0]})")
        try:
            summary = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise IngestError(f"{path}: unreadable k6 summary ({exc})") from None
        if not isinstance(summary, dict) or "pgarena" not in summary:
            raise IngestError(f"{path}: not written by pgarena's k6 script (no 'pgarena' settings in it)")
        outputs.append(Output(name, path, samples, summary))
    return outputs


def check_outputs(outputs: list[Output]) -> list[Output]:
    """The outputs in segment order; IngestError when they are not exactly one test's segments."""
    first = {k: v for k, v in outputs[0].settings.items() if k not in PER_RUN_SETTINGS}
    for out in outputs[1:]:
        mine = {k: v for k, v in out.settings.items() if k not in PER_RUN_SETTINGS}
        if mine != first:
            differ = sorted(k for k in set(mine) | set(first) if mine.get(k) != first.get(k))
            raise IngestError(f"{out.summary_path.name} is not of the same test as {outputs[0].summary_path.name} "
                              f"(settings differ: {', '.join(differ)})")
    if len(outputs) == 1 and outputs[0].segment is None:
        return outputs
    sequences = {out.sequence for out in outputs}
    if len(sequences) != 1 or None in sequences:
        raise IngestError("the outputs do not share one execution-segment sequence")
    expected = [segment for segment, _ in execution_segments(len(outputs))]
    if sequences != {execution_segments(len(outputs))[0][1]}:
        raise IngestError(f"{len(outputs)} outputs for the segment sequence {sequences.pop()}: some runner's "
                          "output is missing (or extra)")
    by_segment = {out.segment: out for out in outputs}
    if sorted(by_segment, key=str) != sorted(expected) or len(by_segment) != len(outputs):
        raise IngestError(f"segments {sorted(str(s) for s in by_segment)} are not each of {expected} once")
    return [by_segment[segment] for segment in expected]


def _seconds(value: str | None, what: str) -> float:
    if not value:
        raise IngestError(f"the outputs do not record {what}")
    text = value.strip()
    try:
        return float(text[:-2]) / 1000 if text.endswith("ms") else float(text.rstrip("s"))
    except ValueError:
        raise IngestError(f"{what} '{value}' is not a duration") from None


def ingest(paths: list[Path], *, results_dir: Path, stacks_dir: Path, project_dir: Path, command_line: str,
           run_id: str, stack: str | None = None, workload: str | None = None,
           parameter: int | None = None) -> Path:
    """Turn k6 outputs into a run folder `results_dir/run_id` (results.json and reports); returns it."""
    outputs = check_outputs(find_outputs(paths))
    settings = outputs[0].settings
    stack = stack or settings.get("PGARENA_STACK") or None
    workload = workload or settings.get("PGARENA_WORKLOAD") or None
    if not stack or not workload:
        raise IngestError("name the stack and the workload (--stack, --workload): the outputs do not record them")
    if workload not in wl.WORKLOAD_NAMES:
        raise IngestError(f"unknown workload '{workload}'; known: {', '.join(wl.WORKLOAD_NAMES)}")
    if parameter is None and settings.get("PGARENA_PARAMETER"):
        parameter = int(settings["PGARENA_PARAMETER"])
    duration_s = _seconds(settings.get("PGARENA_DURATION"), "the window's duration")
    timeout_s = _seconds(settings.get("PGARENA_TIMEOUT"), "the HTTP timeout")
    vus = int(settings.get("PGARENA_VUS") or 0)
    rate = float(settings["PGARENA_RATE"]) if settings.get("PGARENA_RATE") else None
    try:
        parts = [PlaceOutput(out.name, summary_counts(out.summary), read_latency_samples(out.samples_path))
                 for out in outputs]
        merged = merge(parts)
    except EngineOutputError as exc:
        raise IngestError(str(exc)) from None
    config = _config(project_dir, results_dir, stacks_dir, run_id, stack, workload, duration_s, timeout_s,
                     len(outputs))
    run_dir = results_dir / run_id
    try:
        run_dir.mkdir(parents=True)
    except FileExistsError:
        raise IngestError(f"{run_dir} already exists; choose another --run-id") from None
    places = [GeneratorFigures(
        name=out.name, host=out.name, segment=out.segment or "0:1", requests=place.counts.requests,
        failures=place.counts.errors.total, answered_2xx=place.counts.answered_2xx,
        duration_seconds=place.counts.duration_s, rps=place.rps, latency_p50_ms=place.p50_ms,
        latency_p99_ms=place.p99_ms, dropped=place.counts.dropped, cpu_seconds=None, cpus=None,
        clock_offset_seconds=None, clock_offset_method=None, raw_output=str(out.summary_path),
        raw_samples=str(out.samples_path)) for out, place in zip(outputs, merged.places)]
    outcome = merged.outcome
    offered = round(rate * duration_s) if rate is not None else None
    repetition = Repetition(
        index=1, requests=outcome.requests, duration_seconds=outcome.duration_seconds, rps=outcome.rps,
        requests_per_second_all=outcome.requests_per_second_all, latency=outcome.latency, errors=outcome.errors,
        status_codes=outcome.status_codes, stack_cpu_seconds=None, db_cpu_seconds=None, stack_rss_peak_bytes=None,
        generator_cpu_seconds=None, raw_output=str(outputs[0].summary_path), offered_requests=offered,
        dropped=(outcome.dropped if outcome.dropped is not None else max(0, (offered or 0) - outcome.requests))
        if offered is not None else 0,
        generators=DistributedLoad(places=places, start="k6-operator's starter: every runner started --paused, "
                                   "then resumed over its REST API", start_skew_seconds=None, merge=MERGE_METHOD))
    cell = Cell(stack=stack, workload=workload, parameter_name=wl.PARAMETER_NAMES.get(workload),
                parameter=parameter, vus=vus, model="open" if rate is not None else "closed", arrival_rate=rate,
                arrival_rate_spec=None if rate is None else f"{rate:g}", engine="k6", warmup_seconds=0.0,
                duration_seconds=duration_s, repetitions=[repetition],
                window_accounting_unavailable="ingested k6 outputs: pgarena had no access to the database")
    summarize(cell, config, cpu_accounting="not measured (ingested k6 outputs)")
    results = RunResults(
        run_id=run_id, command=command_line, kind="ingest", status="complete",
        started_at=dt.datetime.now(dt.timezone.utc), finished_at=dt.datetime.now(dt.timezone.utc),
        config={**config.redacted(), "profile": "ingest", "pool_size": None, "workers": None},
        environment=collect(project_dir, generator_cpus=[], server_cpus=[]),
        stacks=[_stack_info(stacks_dir, stack, workload)], stack_order=[stack], cells=[cell],
        ingested=IngestRecord(source=SOURCE, outputs=[str(o.summary_path) for o in outputs],
                              segments=[o.segment or "0:1" for o in outputs], not_measured=NOT_MEASURED))
    results.environment.headroom_unavailable = "ingested k6 outputs: not measured"
    from pgarena.report import write_reports

    save(results, run_dir)
    write_reports(results, run_dir)
    return run_dir


def _config(project_dir: Path, results_dir: Path, stacks_dir: Path, run_id: str, stack: str, workload: str,
            duration_s: float, timeout_s: float, generators: int) -> RunConfig:
    return build_config(profile="quick", project_dir=project_dir, overrides={
        "engine": "k6", "stacks": [stack], "workloads": [workload], "duration_s": max(duration_s, 1.0),
        "repetitions": 1, "max_repetitions": 1, "http_timeout_s": timeout_s, "generators": generators,
        "headroom": False, "ceiling_s": 0, "results_dir": results_dir, "stacks_dir": stacks_dir, "run_id": run_id,
        "generator_cpus": [], "server_cpus": [], "workers": 1})


def _stack_info(stacks_dir: Path, stack_id: str, workload: str) -> StackInfo:
    """The stack's declared facts when its stack.toml is in `stacks_dir`, else what the outputs say."""
    stacks, _ = load_stacks(stacks_dir) if stacks_dir.is_dir() else ([], [])
    found = next((s for s in stacks if s.id == stack_id), None)
    note = "measured from ingested k6 outputs: its CPU and memory were not measured"
    if found is not None:
        info = stack_info(found)
        info.status, info.notes = "ok", [*info.notes, note]
        return info
    unknown = "not declared here"
    return StackInfo(id=stack_id, title=stack_id, language=unknown, framework=unknown, framework_version="",
                     driver=unknown, driver_version="", server=unknown, pooler=unknown, prepared_statements=None,
                     workloads=[workload], notes=[note, f"no stack.toml for '{stack_id}' in {stacks_dir}"],
                     status="ok")
