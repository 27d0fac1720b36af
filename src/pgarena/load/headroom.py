"""The load generator's measured headroom: its RPS against a trivial endpoint on the run's CPU sets.

Before any stack runs, pgarena builds a minimal Go net/http server (trivial/main.go: a fixed 2-byte
answer), starts it pinned to the server CPUs and drives it with the run's generator pinned to the
generator CPUs for one window at `HEADROOM_CONNECTIONS`. The RPS it reaches is about the most this
generator can produce here; a stack cell that comes near it (or whose generator CPU is near 100 %) says
more about the generator than about the stack. The figure is stored in results.json and shown in reports.

A run with several generator places (--generators N, a topology's generators in namespaces or on SSH hosts)
measures the headroom with those places, together, as every cell is driven: several local generators give
the headroom of N together on the generator CPUs, and each place's part is recorded with its own CPU. A
generator on another machine has no CPU figure here: whether it was the limit is "not measured".
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from pgarena.config.run import RunConfig
from pgarena.db.postgres import free_port
from pgarena.load.distributed import GeneratorPlace
from pgarena.load.engines import Engine
from pgarena.load.engines.base import EngineOutputError, LoadSpec
from pgarena.load.summary import cpu_set_shares
from pgarena.load.window import run_window
from pgarena.results.models import DistributedLoad, Headroom, HeadroomPlace
from pgarena.system.gotool import GoBuildError, go_program
from pgarena.system.process import NotReady, ServerProcess, wait_until_healthy

HEADROOM_CONNECTIONS = 50
"""Closed-model connections of the headroom window (seed 000's middle load level)."""
BUILD_TIMEOUT_S = 300


class HeadroomUnavailable(Exception):
    """The trivial endpoint cannot be built or started here; the message says why."""


def trivial_server_binary() -> Path:
    """Build (once per source version, cached) and return the trivial endpoint's binary."""
    try:
        return go_program("pgarena.trivial", ("main.go", "go.mod"), "trivial-server", timeout_s=BUILD_TIMEOUT_S)
    except GoBuildError as exc:
        raise HeadroomUnavailable(str(exc)) from None


def measure_headroom(engine: Engine, config: RunConfig, run_dir: Path, *, server_prefix: tuple[str, ...] = (),
                     server_host: str = "127.0.0.1", places: Sequence[GeneratorPlace] = ()) -> Headroom:
    """One window of the generator against the trivial endpoint (HeadroomUnavailable if it cannot run);
    under --netns the endpoint runs where the stacks do (`server_prefix`, listening on `server_host`). With
    several generator `places` (or one elsewhere) they drive it together, as they drive every cell: the
    headroom is theirs together, each place's part and CPU in `Headroom.places` (`place_headroom`)."""
    binary = trivial_server_binary()
    port = free_port()
    logs = run_dir / "logs" / "headroom"
    logs.mkdir(parents=True, exist_ok=True)
    raw_dir = run_dir / "raw" / "headroom"
    raw_dir.mkdir(parents=True, exist_ok=True)
    env = {"PGARENA_HOST": server_host, "PGARENA_PORT": str(port), "GOMAXPROCS": str(len(config.server_cpus)),
           "PATH": "/usr/bin:/bin"}
    server = ServerProcess(str(binary), cwd=raw_dir, env=env, log_path=logs / "run.log", cpus=config.server_cpus,
                           argv_prefix=server_prefix)
    with server:
        url = f"http://{server_host}:{port}/"
        try:
            wait_until_healthy(server, url, 30)
        except NotReady as exc:
            raise HeadroomUnavailable(f"the trivial endpoint did not start: {exc}") from None
        spec = LoadSpec(url=url, method="GET", connections=HEADROOM_CONNECTIONS, duration_s=0,
                        timeout_s=config.http_timeout_s)
        try:
            window = run_window(engine, spec, config.warmup_s, raw_dir, "warmup", config, places)
            window = run_window(engine, spec, config.duration_s, raw_dir, "headroom", config, places)
        except EngineOutputError as exc:
            raise HeadroomUnavailable(str(exc)) from None
    out = window.outcome
    seconds = out.duration_seconds * len(config.generator_cpus)
    headroom = Headroom(
        rps=out.rps, latency_p99_ms=out.latency.p99_ms, connections=HEADROOM_CONNECTIONS,
        duration_seconds=out.duration_seconds,
        generator_cpu_fraction=window.generator_cpu_seconds / seconds
        if seconds and window.generator_cpu_seconds is not None else None,
        endpoint=f"Go {_go_version()} net/http, fixed 2-byte answer, GOMAXPROCS={len(config.server_cpus)}",
        engine=engine.name)
    return place_headroom(headroom, window.generators) if window.generators is not None else headroom


def place_headroom(headroom: Headroom, load: DistributedLoad) -> Headroom:
    """`headroom` with each place's part of a window driven by several places (or one elsewhere): its requests
    per second and its CPU set's busy share (places of one host pinned to the same CPUs share them); a place
    on another machine has no CPU figure ("not measured", listed in `cpu_not_measured`), and the headroom's
    `generator_cpu_fraction` is the busiest measured set's (None when no set was measured)."""
    figures = load.places
    shares = cpu_set_shares([(f.host, tuple(f.cpus or ()), f.cpu_seconds) for f in figures],
                            max((f.duration_seconds for f in figures), default=0.0))
    places = [HeadroomPlace(name=f.name, host=f.host, cpus=f.cpus,
                            rps=f.requests / f.duration_seconds if f.duration_seconds else 0.0,
                            cpu_fraction=shares.get((f.host, tuple(f.cpus or ()))))
              for f in figures]
    return headroom.model_copy(update={
        "places": places, "cpu_not_measured": [p.name for p in places if p.cpu_fraction is None],
        "generator_cpu_fraction": max(shares.values()) if shares else None})


def _go_version() -> str:
    go = shutil.which("go")
    if not go:
        return "?"
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, timeout=30)
    return out.stdout.strip().removeprefix("go") or "?"
