"""The connection to an SSH host: the OpenSSH client's argv (key only, BatchMode=yes, keep-alives), one remote
command string with a local deadline (`SshTransport._call`), the login check, the host's environment, and a
command run to completion under the remote GNU `timeout` (`run`). The package docstring (system/ssh) has the
whole picture; file copy is in ssh/files.py, started processes in ssh/process.py and ssh/host.py."""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Self

from pgarena.config.run import redact_secrets
from pgarena.system.ssh.shell import (
    CHECK_SH,
    ENVIRONMENT_SH,
    RUN_SH,
    VERSION_SH,
    env_exports,
    parse_sections,
    remote_command,
)

DEFAULT_PORT = 22
DEFAULT_CONNECT_TIMEOUT_S = 10
"""ssh's ConnectTimeout: the longest the TCP connect and the SSH handshake may take (whole seconds)."""
DEFAULT_SERVER_ALIVE_INTERVAL_S = 5
DEFAULT_SERVER_ALIVE_COUNT = 3
"""A connection whose server has not answered 3 keep-alives 5 s apart (15 s) is given up."""
DEFAULT_COMMAND_TIMEOUT_S = 30.0
"""Longest a short remote command (a check, a stop, a status) may take, after connecting."""
DEFAULT_RUN_TIMEOUT_S = 1800.0
"""Longest a `run` (a stack's build) may take unless the caller says otherwise."""
DEFAULT_COPY_TIMEOUT_S = 600.0
"""Longest a `copy_folder` (or the fetch of a remote log) may take."""
KILL_AFTER_S = 5
"""The remote `timeout -k`: seconds after its SIGTERM before it sends SIGKILL to a command that overran."""
LOCAL_MARGIN_S = 5.0
"""Added to a remote bound for the local deadline of the ssh client (the remote bound fires first)."""
DEFAULT_REMOTE_STATE_DIR = ".cache/pgarena/ssh"
"""Where pid, exit-status and log files of started processes live on a host (relative: to the login's home)."""
DEFAULT_VERSION_TIMEOUT_S = 10
"""Longest one version command of `environment` may take on the host."""

_OPTION_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")
_FORCED_OPTIONS = {"batchmode"}


class SshError(Exception):
    """An SSH operation failed: what, on which destination, and what ssh (or the remote command) printed."""

    def __init__(self, message: str, *, destination: str, stderr: str = "") -> None:
        self.message = message
        self.destination = destination
        self.stderr = stderr.strip()
        output = f": {self.stderr}" if self.stderr else ""
        super().__init__(f"{destination}: {message}{output}")


class SshInUse(SshError):
    """The processes of a state file belong to a pgarena that is still running."""


class SshTransport:
    """A machine reached with the OpenSSH client as `destination` (`[user@]host`, or a Host of ~/.ssh/config).

    `identity_file` is passed as `-i` (with IdentitiesOnly=yes); `options` as `-o NAME=VALUE`, ahead of
    pgarena's defaults so they win (ConnectTimeout, ServerAlive*), except BatchMode, which is always yes;
    `config_file` as `-F` (None: the user's ~/.ssh/config). `state_file` (e.g. `run_dir / "ssh.json"`) records
    every started process for `reap_state_file`; `remote_state_dir` is where their pid and log files live on
    the host. `copy_tool` forces "rsync" or "scp" (None: rsync when both ends have it).

    This is the connection and the commands run to completion; `ssh.files.SshFiles` adds file copy and
    `ssh.host.SshHost` started processes and the clock offset.
    """

    def __init__(self, destination: str, *, port: int = DEFAULT_PORT, identity_file: Path | None = None,
                 options: Mapping[str, str] | None = None, config_file: Path | None = None,
                 connect_timeout_s: int = DEFAULT_CONNECT_TIMEOUT_S, state_file: Path | None = None,
                 remote_state_dir: str = DEFAULT_REMOTE_STATE_DIR, copy_tool: str | None = None) -> None:
        if not destination or destination.startswith("-") or any(c.isspace() for c in destination):
            raise ValueError(f"ssh destination {destination!r}: [user@]host, without spaces or a leading '-'")
        if not 0 < port < 65536:
            raise ValueError(f"ssh port {port}: 1 to 65535")
        options = dict(options or {})
        for name, value in options.items():
            if not _OPTION_NAME_RE.match(name) or "\n" in str(value):
                raise ValueError(f"ssh option {name!r}={value!r}: a name of letters and digits, a one-line value")
            if name.lower() in _FORCED_OPTIONS:
                raise ValueError(f"ssh option {name}: pgarena always uses BatchMode=yes (it never prompts)")
        if copy_tool not in (None, "rsync", "scp"):
            raise ValueError(f"copy tool {copy_tool!r}: 'rsync', 'scp' or None (rsync when available)")
        self.destination = destination
        self.port = port
        self.identity_file = identity_file
        self.options = options
        self.config_file = config_file
        self.connect_timeout_s = int(connect_timeout_s)
        self.state_file = state_file
        self.remote_state_dir = remote_state_dir
        self.copy_tool = copy_tool
        self._remote_rsync: bool | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.destination!r}, port={self.port})"

    def as_dict(self) -> dict:
        """How to reach the host again (for the state file and results.json)."""
        return {"destination": self.destination, "port": self.port,
                "identity_file": str(self.identity_file) if self.identity_file else None,
                "options": self.options, "config_file": str(self.config_file) if self.config_file else None,
                "connect_timeout_s": self.connect_timeout_s, "remote_state_dir": self.remote_state_dir}

    @classmethod
    def from_dict(cls, data: Mapping, *, state_file: Path | None = None) -> Self:
        """The host `as_dict` described, with `state_file` for its started processes."""
        return cls(data["destination"], port=int(data.get("port", DEFAULT_PORT)),
                   identity_file=Path(data["identity_file"]) if data.get("identity_file") else None,
                   options=data.get("options") or {},
                   config_file=Path(data["config_file"]) if data.get("config_file") else None,
                   connect_timeout_s=int(data.get("connect_timeout_s", DEFAULT_CONNECT_TIMEOUT_S)),
                   remote_state_dir=data.get("remote_state_dir", DEFAULT_REMOTE_STATE_DIR), state_file=state_file)

    # -- argv -----------------------------------------------------------------------------------------------------

    def _common_options(self) -> list[str]:
        """The options ssh, scp and rsync's ssh share: identity, config, then `-o` options (first value wins)."""
        argv = ["-o", "BatchMode=yes"]
        if self.config_file is not None:
            argv += ["-F", str(self.config_file)]
        if self.identity_file is not None:
            argv += ["-i", str(self.identity_file), "-o", "IdentitiesOnly=yes"]
        for name, value in self.options.items():
            argv += ["-o", f"{name}={value}"]
        argv += ["-o", f"ConnectTimeout={self.connect_timeout_s}",
                 "-o", f"ServerAliveInterval={DEFAULT_SERVER_ALIVE_INTERVAL_S}",
                 "-o", f"ServerAliveCountMax={DEFAULT_SERVER_ALIVE_COUNT}"]
        return argv

    def ssh_base(self) -> list[str]:
        """`ssh` and its options, without the destination (what rsync's `-e` gets)."""
        return ["ssh", "-T", "-p", str(self.port), *self._common_options()]

    def ssh_argv(self, command: str) -> list[str]:
        """The full argv running the remote command string `command` (see `remote_command`)."""
        return [*self.ssh_base(), "--", self.destination, command]

    def remote_spec(self, path: str) -> str:
        """`destination:path` for scp and rsync (an IPv6 address in brackets)."""
        user, at, host = self.destination.rpartition("@")
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        return f"{user}{at}{host}:{path}"

    # -- calls ----------------------------------------------------------------------------------------------------

    def _call(self, command: str, *, timeout_s: float, what: str, check: bool = True,
              stdout=subprocess.PIPE, stderr=subprocess.PIPE) -> subprocess.CompletedProcess:
        """Run one remote command string; SshError if ssh fails (exit 255), the local deadline (`timeout_s` plus
        the connect timeout and a margin) passes, or (`check`) the command fails."""
        argv = self.ssh_argv(command)
        limit = timeout_s + self.connect_timeout_s + LOCAL_MARGIN_S
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, timeout=limit,
                                  text=True, errors="replace")
        except FileNotFoundError as exc:
            raise SshError(f"cannot {what}: no ssh client ({exc.filename}); install OpenSSH's client",
                           destination=self.destination) from exc
        except subprocess.TimeoutExpired as exc:
            raise SshError(f"cannot {what}: no answer within {limit:.0f} s", destination=self.destination,
                           stderr=text_of(exc.stderr)) from exc
        if done.returncode == 255:
            raise SshError(f"cannot {what}: ssh failed{hint(done.stderr or '')}", destination=self.destination,
                           stderr=done.stderr or "")
        if check and done.returncode != 0:
            raise SshError(f"cannot {what}: the remote command exited with code {done.returncode}",
                           destination=self.destination, stderr=done.stderr or "")
        return done

    def check(self) -> None:
        """The host is reachable, logs in without a prompt and has what pgarena runs there, else SshError
        (naming the destination, with ssh's own message)."""
        out = self._call(remote_command(CHECK_SH), timeout_s=DEFAULT_COMMAND_TIMEOUT_S, what="log in").stdout
        lines = out.splitlines()
        if "pgarena-ok" not in lines:
            raise SshError("logged in, but the test command printed nothing (is the login shell POSIX?)",
                           destination=self.destination, stderr=out)
        missing = [line.removeprefix("missing ") for line in lines if line.startswith("missing ")]
        if missing:
            raise SshError(f"the host lacks {', '.join(missing)} (pgarena needs Linux with GNU coreutils and grep)",
                           destination=self.destination)
        self._remote_rsync = "rsync" in lines

    def environment(self, version_commands: Sequence[Sequence[str]] = ()) -> dict:
        """The host's hostname, cpu_model, cpu_count, memory_bytes, kernel, os and toolchains (each version
        command → the first line it printed, 'not available' when none), the keys of results' Environment;
        a value that could not be read is None (not measured)."""
        commands = {" ".join(argv): list(argv) for argv in version_commands}
        script = ENVIRONMENT_SH + "".join(
            VERSION_SH.format(index=index, program=shlex.quote(argv[0]), argv=shlex.join(argv),
                              timeout=DEFAULT_VERSION_TIMEOUT_S)
            for index, argv in enumerate(commands.values()))
        out = self._call(remote_command(script), what="read the environment",
                         timeout_s=DEFAULT_COMMAND_TIMEOUT_S + 2 * DEFAULT_VERSION_TIMEOUT_S * len(commands)).stdout
        found = parse_sections(out)
        memory_kib = found.get("memory_kib", "")
        cpus = found.get("cpu_count", "")
        *pretty, system = found.get("os", "").splitlines() or [""]
        toolchains = {}
        for index, key in enumerate(commands):
            text = found.get(f"toolchain {index}", "")
            toolchains[key] = text.splitlines()[0].strip() if text else "not available"
        return {
            "hostname": found.get("hostname") or None,
            "cpu_model": found.get("cpu_model") or found.get("machine") or None,
            "cpu_count": int(cpus) if cpus.isdigit() else None,
            "memory_bytes": int(memory_kib) * 1024 if memory_kib.isdigit() else None,
            "kernel": found.get("kernel") or None,
            "os": f"{pretty[0]} ({system})" if pretty else (system or None),
            "toolchains": toolchains,
        }

    def run(self, command: str | Sequence[str], *, cwd: str | None = None, env: Mapping[str, str] | None = None,
            timeout_s: float = DEFAULT_RUN_TIMEOUT_S, log_path: Path | None = None) -> subprocess.CompletedProcess:
        """Run a command on the host to completion: a string through `/bin/sh -c`, a sequence as an argv; in
        `cwd` (remote; None: the login's home), with `env` added to the login's environment.

        Bounded on the host by `timeout -k KILL_AFTER_S timeout_s` (exit code 124 when it fired) and locally
        by a deadline (SshError). With `log_path`, stdout and stderr are appended there (after a `$ command`
        line), else captured. Exit code 255 is ssh's own failure: SshError.
        """
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        script = RUN_SH.replace("@KILL_AFTER@", str(KILL_AFTER_S)).replace("@EXPORTS@", env_exports(env))  # values last
        remote = remote_command(script, cwd or "", f"{timeout_s:.3f}", *argv)
        what = f"run {command if isinstance(command, str) else shlex.join(argv)!r}"
        if log_path is None:
            return self._call(remote, timeout_s=timeout_s + KILL_AFTER_S, what=what, check=False)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "a", encoding="utf-8") as log:
            shown = redact_secrets(command if isinstance(command, str) else shlex.join(argv),
                                   [v for k, v in (env or {}).items() if "PASSWORD" in k.upper()])
            log.write(f"$ {shown}  (on {self.destination})\n")
            log.flush()
            try:
                return self._call(remote, timeout_s=timeout_s + KILL_AFTER_S, what=what, check=False, stdout=log,
                                  stderr=subprocess.STDOUT)
            except SshError as exc:
                raise SshError(exc.message, destination=self.destination,
                               stderr=_tail(log_path)) from exc


def text_of(value: str | bytes | None) -> str:
    """A subprocess output as text (bytes decoded with replacement; None as '')."""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value or ""


def _tail(path: Path, lines: int = 10) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def hint(stderr: str) -> str:
    """What to do about the two refusals users meet first, from ssh's message."""
    if "Permission denied" in stderr:
        return (" (pgarena logs in with a key only, BatchMode=yes: put your public key in the host's "
                "authorized_keys, or load it into ssh-agent, and give identity_file if it is not a default key)")
    if "Host key verification failed" in stderr:
        return (" (the host key is not in known_hosts: connect once with ssh, or add it with ssh-keyscan, "
                "after checking its fingerprint)")
    return ""

