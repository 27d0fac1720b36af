"""`SshHost`, an SSH host as pgarena uses it: the connection (ssh/transport.py), file copy (ssh/files.py) and
`start`, which leaves a `RemoteProcess` (ssh/process.py) recorded in the run's state file; and
`reap_state_file`, which stops what a crashed run's state file names."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from pgarena.system.ssh.files import SshFiles
from pgarena.system.ssh.process import RemoteProcess, owner_alive, read_state, stop_remote, track, untrack
from pgarena.system.ssh.shell import CLEAN_SH, START_SH, env_exports, remote_command
from pgarena.system.ssh.transport import DEFAULT_COMMAND_TIMEOUT_S, SshError, SshInUse


class SshHost(SshFiles):
    """A machine reached with the OpenSSH client (see `SshTransport` for the arguments) on which pgarena runs
    commands, copies files and starts processes (`start`)."""

    def start(self, command: str, *, cwd: str, env: Mapping[str, str] | None = None,
              log_path: Path) -> RemoteProcess:
        """Start `/bin/sh -c command` on the host in `cwd`, with `env` added, in a session of its own; its
        output goes to a remote log that `RemoteProcess.fetch_log` (and `stop`) appends to `log_path`.

        Recorded in `state_file` before it starts, so a crashed run's process is found by `reap_state_file`.
        """
        process_id = secrets.token_hex(16)
        exports = env_exports(env)  # checks the names before anything starts
        process = RemoteProcess(self, process_id, command=command, cwd=cwd, log_path=log_path)
        if self.state_file is not None:
            track(self.state_file, process.as_dict())
        script = START_SH.replace("@EXPORTS@", exports)
        try:
            out = self._call(remote_command(script, self.remote_state_dir, process_id, cwd, command),
                             timeout_s=DEFAULT_COMMAND_TIMEOUT_S, what=f"start {command!r}").stdout.strip()
            process.pgid = int(out.splitlines()[-1])
        except BaseException as exc:
            try:
                process.stop(grace_s=1.0)
            except SshError:
                pass  # unreachable: the state file keeps it for the reaper
            if isinstance(exc, (SshError, KeyboardInterrupt)):
                raise
            raise SshError(f"cannot start {command!r}: no pid from the host", destination=self.destination,
                           stderr=str(exc)) from exc
        if self.state_file is not None:
            track(self.state_file, process.as_dict())
        return process


def reap_state_file(path: Path, *, grace_s: float = 2.0) -> list[str]:
    """Stop what a crashed run's state file names on each host, append each remote log to its local log
    file, remove the remote files; one line per process. Records of hosts that cannot be reached stay in the
    file (a line says so) for a later try; the file goes when none is left. SshInUse if the run's pgarena
    still runs (and is not this process); [] if there is no file."""
    data = read_state(path)
    if data is None:
        return []
    owner = data.get("owner") or {}
    if owner.get("pid") != os.getpid() and owner_alive(owner):
        raise SshInUse(f"the processes of {path} belong to pid {owner.get('pid')}, which is still running",
                       destination="(state file)")
    lines = []
    for record in list(data["processes"]):
        host = SshHost.from_dict(record["host"])
        log_path = Path(record["log_path"]) if record.get("log_path") else None
        process = RemoteProcess(host, record["id"], command=record.get("command", ""), cwd=record.get("cwd", ""),
                                log_path=log_path, pgid=record.get("pgid"))
        try:
            found, killed, left = stop_remote(host, process.id, grace_s)
        except SshError as exc:
            lines.append(f"could not stop {process.command!r} on {host.destination}: {exc}")
            continue
        if left:
            lines.append(f"{left} process(es) of {process.command!r} on {host.destination} survived SIGKILL")
            continue
        what = (f"stopped {found} process(es)" + (f" ({killed} with SIGKILL)" if killed else "")) if found else \
            "nothing left running"
        lines.append(f"{host.destination}: {what} of {process.command!r}")
        try:
            if log_path is not None:
                with open(log_path, "a", encoding="utf-8") as log:
                    log.write(f"--- the remote log of {process.command!r}, fetched by the reaper\n")
                process.fetch_log()
            process._script(CLEAN_SH, what="remove the pid and log files")
        except (SshError, OSError) as exc:  # stopped all the same: the files are all that is left
            lines.append(f"{host.destination}: the log and pid files of {process.command!r} stay in "
                         f"{host.remote_state_dir}: {exc}")
        untrack(path, process.id)
    return lines
