"""What every stage of a run shares: the run's context and the stacks that are up."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgarena.config.redaction import redact_secrets
from pgarena.config.run import RunConfig
from pgarena.config.stackdef import Stack
from pgarena.contract.answer import AnswerShape
from pgarena.db.connections import ConnectionPoller
from pgarena.db.postgres import (
    Database,
)
from pgarena.load.distributed import GeneratorPlace
from pgarena.load.engines import Engine
from pgarena.pipeline.placement import Placement
from pgarena.pipeline.progress import RunProgress
from pgarena.results.models import (
    Cell,
    RunResults,
    StackInfo,
    WorkloadVerification,
)
from pgarena.system import cgroups, pidregistry
from pgarena.system.process import ServerProcess, tail
from pgarena.system.resources import CpuMeters
from pgarena.system.speedprobe import SpeedProbe

LOG_TAIL_LINES = 15

Log = Callable[[str], None]


def redacting(log: Log, known: Sequence[str] = ()) -> Log:
    """`log` with every line redacted first (config.redaction.redact_secrets: URL passwords, `password=` pairs and
    the `known` passwords pgarena set), so no console or log line pgarena writes shows a password."""
    return lambda line: log(redact_secrets(line, known))


class RunError(Exception):
    """The run cannot start (no stacks selected, engine missing, database unavailable)."""


BUILD_WONT_FIT = 75
"""A build's exit code for "I will not finish in PGARENA_BUILD_TIMEOUT_S" (EX_TEMPFAIL), its last line the reason:
a cold tool build that takes longer than a --budget lets builds take says so at once (docs/contract.md)."""


def build_values(values: dict[str, str], timeout_s: float) -> dict[str, str]:
    """A stack's template values for its build command: the run's, and `build_timeout_s`, the whole seconds the
    build may take (PGARENA_BUILD_TIMEOUT_S in its environment)."""
    return {**values, "build_timeout_s": str(int(timeout_s))}


def mark_build_failed(info: StackInfo, build_log: Path, *, timed_out: bool, timeout_s: float, returncode: int,
                      where: str = "", note: str = "") -> None:
    """Record in `info` that the stack's build failed: status `build_failed`, the reason ("build[ on HOST]
    timed out after N s (note)", "… exit code N", or for BUILD_WONT_FIT "not built[ on HOST]: <its last line>
    (note)", with the log's path) and the log's last lines. `where` is said after "build" (e.g. " on bench-1");
    `note` only with a timeout or BUILD_WONT_FIT; `timeout_s` in seconds."""
    last = next((line for line in reversed(tail(build_log, LOG_TAIL_LINES).splitlines()) if line.strip()), "")
    if returncode == BUILD_WONT_FIT and not timed_out and last:
        info.status = "build_failed"
        info.reason = f"not built{where}: {last.strip()}" + (f" ({note})" if note else "") + f" (log: {build_log})"
        info.log_tail = tail(build_log, LOG_TAIL_LINES)
        return
    why = (f"timed out after {timeout_s:.0f} s" + (f" ({note})" if note else "") if timed_out
           else f"exit code {returncode}")
    info.status, info.reason = "build_failed", f"build{where} {why} (log: {build_log})"
    info.log_tail = tail(build_log, LOG_TAIL_LINES)


@dataclass
class RunContext:
    config: RunConfig
    engine: Engine | None
    results: RunResults
    run_dir: Path
    db: Database
    log: Log
    cgroup_backend: cgroups.CgroupBackend | None = None
    db_group: cgroups.CpuGroup | None = None
    progress: RunProgress = field(default_factory=RunProgress)
    done_keys: set[tuple] = field(default_factory=set)
    """Cells already in results.json (a resumed run): not measured again."""
    stored_verifications: dict[str, list[WorkloadVerification]] = field(default_factory=dict)
    """A resumed run: stack → its verifications stored before the interruption. The schedules drop a stack's
    verifications before its first start in this process; `lifecycle.bring_up` puts them back and checks the
    stack briefly when its build inputs are unchanged (stack/inputs.py), else it verifies the stack again."""
    registry: pidregistry.PidRegistry | None = None
    """Where the processes of this run are recorded (run_dir/pids.json), so a killed run's are found."""
    network: Any = None
    """--db-rtt: the run's DbNetwork (pipeline/network.py), None when stacks connect directly."""
    variants_cache: dict = field(default_factory=dict)
    """Read workloads' request variants with their expected answers, per (workload, parameter)."""
    placement: Placement = field(default_factory=Placement)
    """Where the generator, the stacks and PostgreSQL run (--netns: each in a namespace)."""
    deadline: float | None = None
    """time.monotonic() at which the run's budget (--budget) is spent; None: no budget."""
    later_bring_ups: int = 0
    """Stacks still to build and start after the one being built (a budget keeps time for them: lifecycle.py)."""
    generator_places: list[GeneratorPlace] = field(default_factory=lambda: [GeneratorPlace("local")])
    """Where the load generators of each cell run: one place = the single generator (unchanged); more = one
    k6 process per place, each an execution segment, merged exactly (load/distributed.py)."""
    probe: SpeedProbe | None = None
    """The reference probe on the server CPUs, running for the whole run (baselines.speed_probe); None when
    no stack runs on this machine or for `verify`."""


@dataclass
class LiveStack:
    """A built, started, healthy and verified stack: what the schedules put load on."""

    stack: Stack
    info: StackInfo
    server: ServerProcess
    """The stack's process here, or a pipeline.remote.RemoteServer on an SSH host (pid None)."""
    cpu: CpuMeters
    base_url: str
    routes: dict[str, str]
    loadable: set[str]
    """Workloads whose verification passed: only these are loaded."""
    stack_cpu_seconds: Callable[[], float] | None = None
    """Exact cumulative CPU seconds of the stack's cgroup (None without cgroups)."""
    warmed: set[tuple[str, float | None]] = field(default_factory=set)
    """(workload, database round trip) that had the stack's first warm-up until steady (interleaved schedule)."""
    connections: ConnectionPoller | None = None
    """The stack's pg_stat_activity poller (its own connections only, by client port)."""
    db_proxy: Any = None
    """--db-rtt / resilience: the stack's Toxiproxy proxy to the database (system/toxiproxy.Proxy)."""
    set_db_rtt: Callable[[float | None], None] | None = None
    """--db-rtt: puts the stack's database round trip at a cell's level (its Toxiproxy proxy's latency)."""
    pool_size: int | None = None
    """The pool size it was started with (PGARENA_POOL_SIZE); a run with several starts it once per pool size."""
    port: int | None = None
    """The port it listens on (a restart between an A/B's blocks keeps it; base_url may be a proxy's)."""
    load_ended: float | None = None
    """When its last load ended (time.monotonic: a warm-up or a window), for the idle gap's re-warm (contract/idle.py);
    None: no load since it started."""

    @property
    def answer(self) -> AnswerShape | None:
        """The stack's declared answer shape (stack.toml `[answer]`), undone before answers are judged."""
        return self.stack.answer

    def use_network(self, cell: Cell) -> None:
        """The cell's network conditions, before its warm-up and each of its windows."""
        if self.set_db_rtt is not None:
            self.set_db_rtt(cell.db_rtt_ms)

    @property
    def id(self) -> str:
        return self.stack.id

    def crashed(self) -> bool:
        """The stack's process has exited (its info says so once `note_crash` ran)."""
        return self.server.exit_code() is not None

    def note_crash(self) -> None:
        """Record an exit under load in the stack's info."""
        self.info.status, self.info.reason = "crashed", f"exited with code {self.server.exit_code()} under load"
        self.info.log_tail = tail(self.server.log_path, LOG_TAIL_LINES)
