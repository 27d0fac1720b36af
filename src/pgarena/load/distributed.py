"""One window driven by several k6 processes ("places"), each running one execution segment of the same
test, started together and merged exactly (merge.py). docs/distributed.md has the whole story.

k6 splits the work itself: `--execution-segment i/N:(i+1)/N` with the sequence `0,1/N,…,1` gives each
process its share of the closed model's VUs and of the open model's arrival rate (k6's "execution
segments", the mechanism k6-operator uses; its `pkg/segmentation` builds the same arguments). Every
process starts `--paused` with its REST API on a port of its own; once every one is initialised
(status 4, "paused before run") all are resumed back to back, and the time from the first resume to the
last answer is recorded as the start skew. Each writes its handleSummary JSON and its raw samples
(`--out csv=…​.csv.gz`, only the `status` and `error_code` system tags) and is measured for CPU like the
single generator (window.py): its process CPU sampled while it runs, read over its measured window.

A place is where a process runs: `argv_prefix` is how a command is started there (`()` here,
`("ip", "netns", "exec", NAME)` in a network namespace, an ssh prefix on another host); the URL in the
spec must already be the one that place reaches the stack at.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx

from pgarena.config.run import RunConfig
from pgarena.db.postgres import free_port
from pgarena.load.engines import Engine, LoadSpec
from pgarena.load.engines.base import EngineOutputError
from pgarena.load.merge import MERGE_METHOD, PlaceOutput, merge, read_latency_samples, summary_counts
from pgarena.load.windowrecord import Window, window_cpu_seconds
from pgarena.results.models import DistributedLoad, GeneratorFigures
from pgarena.system.children import MeasuredChild, wait_all

SAME_HOST = "same host"
"""Clock-offset method of a place on this machine (a namespace shares the kernel's clock): 0 by construction."""
READY_TIMEOUT_S = 60.0
"""The longest wait for every process to finish its initialisation (VUs, SharedArrays) before the start."""
K6_PAUSED_BEFORE_RUN = 4
"""k6's execution status once initialised and waiting for a resume (lib/execution.go ExecutionStatus)."""
CSV_SYSTEM_TAGS = "status,error_code"
"""The system tags k6 keeps on every sample when writing raw samples: fewer columns, less CPU and disk."""
START_METHOD = ("every k6 process started with --paused; once all reported 'paused before run' (status 4) over "
                "their REST API, all were resumed back to back")


@dataclass(frozen=True)
class GeneratorPlace:
    """Where one k6 process of a distributed window runs."""

    name: str
    argv_prefix: tuple[str, ...] = ()
    """How a command is started there: () on this host, ('ip', 'netns', 'exec', NAME) in a namespace, …"""
    cpus: tuple[int, ...] | None = None
    """CPUs to pin it to (None: the run's generator CPUs on this host; not pinned elsewhere)."""
    clock_offset_s: float | None = 0.0
    """Its clock minus this host's (None: not measured)."""
    host: str = "local"
    """The machine it runs on: 'local' for this one and its namespaces (its process CPU is measured here);
    places of one host that share CPUs share them in the generator-bound figure."""
    clock_offset_method: str = SAME_HOST
    ssh: Any = None
    """A generator on another machine: its system.ssh.SshHost (None: this machine or a namespace on it). Its
    k6 binary, script and data files are copied to `remote_dir` there before the window, its outputs back
    after; its CPU is not measured."""
    remote_dir: str | None = None


def distributed(places: Sequence[GeneratorPlace]) -> bool:
    """Whether a window is driven by several generators or by one on another host (run_distributed_window),
    rather than by the one generator process here."""
    return len(places) > 1 or bool(places and places[0].ssh is not None)


def local_places(count: int) -> list[GeneratorPlace]:
    """`count` places on this host: gen1, gen2, …"""
    return [GeneratorPlace(name=f"gen{i}") for i in range(1, count + 1)]


def execution_segments(count: int) -> list[tuple[str, str]]:
    """(--execution-segment, --execution-segment-sequence) of each of `count` equal segments, as k6-operator
    builds them (pkg/segmentation): ('0:1/2', '0,1/2,1'), ('1/2:1', '0,1/2,1')."""
    if count < 1:
        raise ValueError("at least one segment")
    edges = ["0", *[f"{i}/{count}" for i in range(1, count)], "1"]
    sequence = ",".join(edges)
    return [(f"{edges[i]}:{edges[i + 1]}", sequence) for i in range(count)]


def segment_args(segment: str, sequence: str) -> list[str]:
    return [f"--execution-segment={segment}", f"--execution-segment-sequence={sequence}"]


@dataclass(frozen=True)
class PlaceRun:
    """One place's process of one window: its argv, REST address and files."""

    place: GeneratorPlace
    segment: str
    argv: list[str]
    address: str
    summary: Path
    samples: Path
    stem: str


def place_run(engine: Engine, spec: LoadSpec, raw_dir: Path, stem: str, place: GeneratorPlace, segment: str,
              sequence: str, address: str) -> PlaceRun:
    """The k6 command of one place: the single generator's command (engines/k6.py) with its segment, paused,
    its REST address and its raw-sample file added before the script, behind the place's prefix."""
    own = f"{stem}-{place.name}"
    base = engine.command(spec, raw_dir, own)
    samples = raw_dir / f"{own}.k6.csv.gz"
    extra = [*segment_args(segment, sequence), "--paused", f"--address={address}",
             f"--system-tags={CSV_SYSTEM_TAGS}", "--out", f"csv={samples}"]
    argv = [*base[:-1], *extra, base[-1]]
    if place.ssh is not None:  # the same command on the host, its paths moved to the host's folder
        argv = place.ssh.ssh_argv(shlex.join(remote_argv(argv, engine.binary, raw_dir, place)))
    else:
        argv = [*place.argv_prefix, *argv]
    return PlaceRun(place=place, segment=segment, argv=argv,
                    address=address, summary=engine.raw_output(raw_dir, own), samples=samples, stem=own)


def remote_binary(place: GeneratorPlace) -> str:
    return f"{place.remote_dir}/k6"


def remote_raw_dir(place: GeneratorPlace) -> str:
    return f"{place.remote_dir}/raw"


def remote_argv(argv: Sequence[str], binary: Path, raw_dir: Path, place: GeneratorPlace) -> list[str]:
    """A local k6 command as it runs on an SSH place: its binary and every path under `raw_dir` moved to
    the place's folder (`remote_dir`)."""
    local = str(raw_dir)
    moved = [remote_binary(place) if arg == str(binary) else arg.replace(local, remote_raw_dir(place)) for arg in argv]
    return moved


def stage_remote(engine: Engine, spec: LoadSpec, raw_dir: Path, places: Sequence[GeneratorPlace]) -> None:
    """Copy k6 (once per place and run), its script and the window's data files to every SSH place."""
    for place in places:
        if place.ssh is None:
            continue
        key = f"{place.ssh.destination}:{place.remote_dir}"
        if key not in _STAGED_BINARIES:
            place.ssh.put_files([engine.binary], place.remote_dir)
            _STAGED_BINARIES.add(key)
        files = [engine.script_path(raw_dir), *(f for f in (spec.urls_file, spec.bodies_file) if f is not None)]
        place.ssh.put_files(files, remote_raw_dir(place))


_STAGED_BINARIES: set[str] = set()
"""SSH places (destination:folder) that already have this process's k6 binary."""


def fetch_remote(runs: Sequence[PlaceRun], raw_dir: Path) -> None:
    """The summary and raw samples of every SSH place's k6, copied back next to the local ones."""
    for run in runs:
        if run.place.ssh is not None:
            there = remote_raw_dir(run.place)
            run.place.ssh.get_files([f"{there}/{run.summary.name}", f"{there}/{run.samples.name}"], raw_dir)


class _Control:
    """Readiness and resume of one paused k6: its REST API straight from here for a place on this host
    without a prefix, else the k6 binary's own `status` / `resume` commands run through the prefix."""

    def __init__(self, run: PlaceRun, binary: Path) -> None:
        self.run, self.binary = run, binary
        self.direct = not run.place.argv_prefix and run.place.ssh is None

    def _argv(self, *args: str) -> list[str]:
        place = self.run.place
        if place.ssh is not None:
            return place.ssh.ssh_argv(shlex.join([remote_binary(place), *args]))
        return [*place.argv_prefix, str(self.binary), *args]

    def status(self, client: httpx.Client) -> int | None:
        """k6's execution status, None while its API does not answer."""
        if self.direct:
            try:
                response = client.get(f"http://{self.run.address}/v1/status")
                return int(response.json()["data"]["attributes"]["status"])
            except (httpx.HTTPError, ValueError, KeyError, TypeError):
                return None
        out = subprocess.run(self._argv("status", f"--address={self.run.address}"), capture_output=True, text=True,
                             timeout=20)
        for line in out.stdout.splitlines():  # k6 status prints YAML: "status: 4"
            key, _, value = line.partition(":")
            if key.strip() == "status" and value.strip().isdigit():
                return int(value.strip())
        return None

    def resume_argv(self) -> list[str]:
        return self._argv("resume", f"--address={self.run.address}")


RESUME_BODY = {"data": {"type": "status", "id": "default", "attributes": {"paused": False}}}
"""k6's REST API request that resumes a paused test (what k6-operator's starter sends)."""


def _wait_ready(controls: Sequence[_Control], children: Sequence[MeasuredChild], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    pending = list(range(len(controls)))
    with httpx.Client(timeout=2.0) as client:
        while pending:
            for index in list(pending):
                if children[index].poll() is not None:
                    raise EngineOutputError(f"k6 on {controls[index].run.place.name} exited (code "
                                            f"{children[index].exit_code}) before the start; see "
                                            f"{controls[index].run.stem}.stderr")
                status = controls[index].status(client)
                if status is not None and status >= K6_PAUSED_BEFORE_RUN:
                    pending.remove(index)
            if not pending:
                return
            if time.monotonic() > deadline:
                names = ", ".join(controls[i].run.place.name for i in pending)
                raise EngineOutputError(f"k6 on {names} not initialised after {timeout_s:.0f} s")
            time.sleep(0.05)


def _resume_all(controls: Sequence[_Control]) -> float:
    """Resume every paused k6; seconds from the first resume sent to the last one answered."""
    direct = [c for c in controls if c.direct]
    with httpx.Client(timeout=5.0) as client:
        started = time.monotonic()
        others = [subprocess.Popen(c.resume_argv(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                  for c in controls if not c.direct]
        for control in direct:
            response = client.patch(f"http://{control.run.address}/v1/status", json=RESUME_BODY)
            if response.status_code >= 300:
                raise EngineOutputError(f"k6 on {control.run.place.name} refused the resume: HTTP "
                                        f"{response.status_code}")
    for proc in others:
        if proc.wait(timeout=30) != 0:
            raise EngineOutputError(f"`{' '.join(proc.args)}` failed (exit code {proc.returncode})")  # type: ignore[arg-type]
    return time.monotonic() - started


def run_distributed_window(engine: Engine, spec: LoadSpec, duration_s: float, raw_dir: Path, stem: str,
                           config: RunConfig, places: Sequence[GeneratorPlace]) -> Window:
    """One window on every place at once, merged exactly (merge.py); each place's figures in
    `Window.generators`. Processes are stopped whatever happens (a deadline, Ctrl-C, an error)."""
    if engine.name != "k6":
        raise EngineOutputError(f"several generators need k6 (execution segments); the engine is {engine.name}")
    if spec.timeline_path is not None:
        raise EngineOutputError("a per-request timeline is written by one generator only")
    spec = replace(spec, duration_s=duration_s)
    runs = [place_run(engine, spec, raw_dir, stem, place, segment, sequence, f"127.0.0.1:{free_port()}")
            for place, (segment, sequence) in zip(places, execution_segments(len(places)))]
    for run in runs:
        run.summary.unlink(missing_ok=True)  # a file left from an earlier try must not pass for this one
    stage_remote(engine, spec, raw_dir, places)
    controls = [_Control(run, engine.binary) for run in runs]
    children: list[MeasuredChild] = []
    try:
        for run in runs:
            cpus = (run.place.cpus or tuple(config.generator_cpus)) if run.place.host == "local" else None
            children.append(MeasuredChild(run.argv, stdout_path=raw_dir / f"{run.stem}.stdout",
                                          stderr_path=raw_dir / f"{run.stem}.stderr", cpus=cpus))
        _wait_ready(controls, children, READY_TIMEOUT_S)
        skew = _resume_all(controls)
        wait_all(children, timeout_s=duration_s + 2 * config.http_timeout_s + 60)
    finally:
        for child in children:
            child.stop()
    fetch_remote(runs, raw_dir)
    return _merged_window(runs, children, skew, config, raw_dir.parent.parent, spec.timeout_s)


def _read_summary(run: PlaceRun, code: int | None) -> dict:
    try:
        return json.loads(run.summary.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EngineOutputError(f"k6 summary {run.summary.name} of {run.place.name} unreadable: {exc} (exit code "
                                f"{code}; see {run.stem}.stderr)") from None


def _merged_window(runs: Sequence[PlaceRun], children: Sequence[MeasuredChild], skew_s: float,
                   config: RunConfig, run_dir: Path, timeout_s: float) -> Window:
    parts = [PlaceOutput(run.place.name, summary_counts(_read_summary(run, child.exit_code)),
                         read_latency_samples(run.samples)) for run, child in zip(runs, children)]
    merged = merge(parts, timeout_s * 1000)  # dropped iterations count at the window's HTTP timeout
    figures = []
    for run, child, result in zip(runs, children, merged.places):
        local = run.place.host == "local"
        cpu = (window_cpu_seconds(child.samples, run.summary, result.counts.duration_s, child.cpu_seconds or 0.0)
               if local else None)
        cpus = list(run.place.cpus or config.generator_cpus) if local else None
        figures.append(GeneratorFigures(
            name=run.place.name, host=run.place.host, segment=run.segment, requests=result.counts.requests,
            failures=result.counts.errors.total, answered_2xx=result.counts.answered_2xx,
            duration_seconds=result.counts.duration_s, rps=result.rps, latency_p50_ms=result.p50_ms,
            latency_p99_ms=result.p99_ms, dropped=result.counts.dropped, cpu_seconds=cpu, cpus=cpus,
            clock_offset_seconds=run.place.clock_offset_s,
            clock_offset_method=run.place.clock_offset_method if run.place.clock_offset_s is not None else None,
            raw_output=_relative(run.summary, run_dir), raw_samples=_relative(run.samples, run_dir)))
    cpu_values = [f.cpu_seconds for f in figures]
    total_cpu = None if any(v is None for v in cpu_values) else sum(cpu_values)  # type: ignore[arg-type]
    record = DistributedLoad(places=figures, start=START_METHOD, start_skew_seconds=skew_s, merge=MERGE_METHOD)
    return Window(merged.outcome, total_cpu, runs[0].summary, generators=record)  # type: ignore[arg-type]


def _relative(path: Path, run_dir: Path) -> str:
    try:
        return str(path.relative_to(run_dir))
    except ValueError:
        return str(path)
