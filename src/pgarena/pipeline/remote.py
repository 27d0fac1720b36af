"""A stack on an SSH host (`--topology` with `stack` on a `kind = "ssh"` host): its folder copied there,
built and started there (system/ssh), then verified and loaded from here like any stack.

What pgarena reads of it: its answers (verification and the samplers, over the network), its database
statements and connections (PostgreSQL runs where the topology puts it, here or in a namespace), the host's
environment (CPU, kernel, versions: results.json topology). What it does not read: the stack's CPU and
memory per window (`RemoteProcess.usage` costs an SSH login per read, ~0.5 s here; not wired yet) and the
addresses it listens on — these are "not measured". The run command gets the stack's own variables only
(PGARENA_*, its [run.env]); nothing of pgarena's environment goes to the host.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path

from pgarena.config.stackdef import Stack, render_template
from pgarena.config.topology import HostDef
from pgarena.pipeline.context import RunContext, build_values, mark_build_failed
from pgarena.results.models import StackInfo
from pgarena.system import reaper
from pgarena.system.ssh.host import SshHost
from pgarena.system.ssh.process import RemoteProcess
from pgarena.system.ssh.transport import SshError

EXIT_POLL_S = 1.0
"""The remote process's state is read at most this often (each read is an SSH login)."""


def ssh_host(spec: HostDef, run_dir: Path) -> SshHost:
    identity = Path(spec.identity_file).expanduser() if spec.identity_file else None
    return SshHost(spec.destination or "", port=spec.port, identity_file=identity, options=spec.options,
                       state_file=run_dir / reaper.SSH_STATE_FILE)


class RemoteServer:
    """A stack's run command on an SSH host, with what the pipeline uses of a local ServerProcess: no local
    pid (so no psutil sampling: its CPU and memory are not measured), its exit code, its log, `stop`."""

    pid = None

    def __init__(self, process: RemoteProcess, log_path: Path) -> None:
        self.process = process
        self.log_path = log_path
        self.started_at = process.started_at
        self._checked_at = 0.0
        self._code: int | None = None

    def exit_code(self) -> int | None:
        """The exit code once it ended (read over SSH at most every EXIT_POLL_S; an unreachable host is
        reported as still running until `stop`)."""
        if self._code is None and time.monotonic() - self._checked_at >= EXIT_POLL_S:
            self._checked_at = time.monotonic()
            try:
                self._code = self.process.exit_code()
            except SshError:
                pass
            if self._code is not None:
                self.process.fetch_log()
        return self._code

    def stop(self, grace_s: float = 5.0) -> None:
        self.process.stop(grace_s=grace_s)


def remote_values(values: dict[str, str], remote_dir: str) -> dict[str, str]:
    return {**values, "stack_dir": remote_dir}


def remote_environment(values: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """The run/build command's variables on the host: PGARENA_* and the stack's own mapping, nothing else."""
    env = {f"PGARENA_{key.upper()}": value for key, value in values.items()}
    env.update({key: render_template(value, values) for key, value in extra.items()})
    return env


def build_and_start(ctx: RunContext, stack: Stack, info: StackInfo, values: dict[str, str],
                    scope: ExitStack, *, restart: bool = False) -> tuple[RemoteServer | None, dict[str, str]]:
    """Copy, build and start a stack on the topology's SSH host (a restart at another pool size is started
    again, not copied or built again); (None, values) with the reason in `info` when it cannot be."""
    spec = ctx.placement.definition.hosts[ctx.placement.host_of("stack")]  # type: ignore[union-attr]
    host = ssh_host(spec, ctx.run_dir)
    definition = stack.definition
    logs = ctx.run_dir / "logs" / stack.id
    remote_dir = f"{spec.workdir.rstrip('/')}/{stack.id}"
    values = remote_values(values, remote_dir)
    try:
        if not restart:
            ctx.log(f"[{stack.id}] copying to {spec.destination}:{remote_dir}")
            host.copy_folder(stack.directory, remote_dir)
        if definition.build and not restart:
            ctx.log(f"[{stack.id}] building on {spec.destination}")
            build_log = logs / "build.log"
            for_build = build_values(values, definition.build.timeout_s)
            step = host.run(render_template(definition.build.command, for_build), cwd=remote_dir,
                            env=remote_environment(for_build, definition.build.env),
                            timeout_s=definition.build.timeout_s, log_path=build_log)
            if step.returncode != 0:  # 124: the remote `timeout` fired
                mark_build_failed(info, build_log, timed_out=step.returncode == 124,
                                  timeout_s=definition.build.timeout_s, returncode=step.returncode,
                                  where=f" on {spec.destination}")
                return None, values
        ctx.log(f"[{stack.id}] starting on {spec.destination}, port {values['port']}")
        run_log = logs / ("run.log" if not restart else f"run-pool-{values['pool_size']}.log")
        process = host.start(render_template(definition.run.command, values), cwd=remote_dir,
                             env=remote_environment(values, definition.run.env), log_path=run_log)
    except SshError as exc:
        info.status, info.reason = "start_failed", str(exc)
        return None, values
    server = RemoteServer(process, run_log)
    scope.callback(server.stop)
    return server, values
