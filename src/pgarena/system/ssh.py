"""SSH hosts: a stack built and run on another machine over plain OpenSSH (the `ssh`, `scp` and `rsync` clients).

What pgarena does on a host (docs/hosts.md has the user's view):

- **Logs in with a key only**: every call is `ssh -o BatchMode=yes`, so ssh never prompts; a host that wants
  a password, or whose host key is unknown, is an `SshError` naming the destination and what ssh printed.
  Host keys are checked as the user's ssh configuration says (`StrictHostKeyChecking`, `UserKnownHostsFile`;
  `options` adds `-o` options, e.g. a known_hosts file of the run's own). Each connection gives up after
  `connect_timeout_s` and a dead one is noticed within `ServerAliveInterval × ServerAliveCountMax`; every call
  also has a local deadline after which the ssh client is killed.
- **Copies a stack folder** (`copy_folder`) with rsync when both ends have it (`--delete`, incremental), scp of
  a filtered copy otherwise, leaving out what pgarena's own .gitignore and the stack's .gitignore call build
  output (`DEFAULT_EXCLUDES`, `stack_excludes`).
- **Runs commands** (`run`, for builds) under the remote GNU `timeout`, so a build is bounded even if pgarena
  dies; **starts the stack** (`start`) under `setsid` in a session of its own whose leader's pid (= its process
  group and session id) goes to a pid file in `remote_state_dir`, with a random token in its environment
  (`PGARENA_SSH_TOKEN`) that every descendant inherits. `RemoteProcess.stop` sends SIGTERM, then SIGKILL, to
  every process carrying the token or belonging to that session, over a new connection, so it works even when
  the connection that started it is gone; the token (checked in /proc/PID/environ) keeps a reused pid from
  ever being signalled.
- **Leaves nothing running**: started processes are recorded in a local state file (`state_file`, e.g.
  `run_dir/ssh.json`) before they start; `reap_state_file` stops what a crashed run left on each host and fetches
  its log. The copied stack folder stays (the next copy is then incremental); pid, exit and log files are
  removed when the process is stopped.

The remote host must be Linux (/proc) with a POSIX login shell and GNU coreutils/grep (`setsid`, `timeout`,
`grep -z`): `check` says what is missing. Commands are sent as one string that the remote login shell parses
(that is how ssh works), built with `shlex.quote` for every argument and value; the scripts themselves are in
system/ssh_shell.py.

Clock offset (`clock_offset`) is Cristian's method (F. Cristian, "Probabilistic clock synchronization",
Distributed Computing 3, 1989): over one connection, several round trips each read the remote
`date +%s.%N`; the remote reading happened somewhere between sending the request and reading the answer, so
for the shortest round trip the offset is remote − midpoint, give or take half that round trip.
"""

from __future__ import annotations

import fnmatch
import json
import math
import os
import re
import secrets
import selectors
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import psutil

from pgarena.config.redaction import redact_secrets
from pgarena.results.atomic import write_text_atomic
from pgarena.system.ssh_shell import (
    CHECK_SH,
    CLEAN_SH,
    ENVIRONMENT_SH,
    LOG_SH,
    RUN_SH,
    START_SH,
    STATUS_SH,
    STOP_SH,
    USAGE_SH,
    VERSION_SH,
    RemoteUsage,
    env_exports,
    parse_sections,
    parse_usage,
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
"""Longest a `copy_folder` may take."""
DEFAULT_STOP_GRACE_S = 10.0
"""Seconds between SIGTERM and SIGKILL when stopping a remote process tree."""
KILL_AFTER_S = 5
"""The remote `timeout -k`: seconds after its SIGTERM before it sends SIGKILL to a command that overran."""
LOCAL_MARGIN_S = 5.0
"""Added to a remote bound for the local deadline of the ssh client (the remote bound fires first)."""
DEFAULT_CLOCK_SAMPLES = 9
"""Round trips `clock_offset` makes; the shortest one gives the offset."""
DEFAULT_REMOTE_STATE_DIR = ".cache/pgarena/ssh"
"""Where pid, exit-status and log files of started processes live on a host (relative: to the login's home)."""
DEFAULT_VERSION_TIMEOUT_S = 10
"""Longest one version command of `environment` may take on the host."""
STATE_VERSION = 1
"""Version of the local state file (1: `owner` and `processes`, each with its host and id)."""
OWNER_START_TOLERANCE_S = 0.05

DEFAULT_EXCLUDES = ("/bin/", "/.venv/", "/node_modules/", "/target/", "__pycache__/", "/.git/")
"""Build outputs never copied to a host, in .gitignore syntax relative to the stack folder.

NOTE: the same as the project's .gitignore says for `stacks/*/` (bin/, .venv/, node_modules/, target/,
__pycache__/), plus .git; a stack's own .gitignore adds more (`stack_excludes`). tests/unit/test_ssh.py checks
that they agree."""

_ID_RE = re.compile(r"^[0-9a-f]{32}$")
_OPTION_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")
_FORCED_OPTIONS = {"batchmode"}
_STATE_LOCK = threading.Lock()


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


# -- What is copied ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ExcludeRule:
    """One .gitignore line: `glob` matched against a path's last component (unanchored) or against the whole
    path relative to the folder (`anchored`: the line had a leading or inner slash); `directory_only` for a
    trailing slash. `*` and `?` never match `/`, as in git."""

    glob: str
    anchored: bool
    directory_only: bool

    @property
    def rsync_pattern(self) -> str:
        """The rule as an rsync `--exclude` pattern (rsync anchors only with a leading slash)."""
        return ("/" if self.anchored else "") + self.glob + ("/" if self.directory_only else "")


def parse_ignore_lines(lines: Sequence[str]) -> list[ExcludeRule]:
    """The rules of .gitignore lines. Blank lines and comments are skipped, and so are what this simple
    reading does not model — negations (`!`) and `**` — so such a file copies more, never less."""
    rules = []
    for raw in lines:
        line = raw.rstrip("\n").rstrip()
        if not line or line.startswith("#") or line.startswith("!") or "**" in line:
            continue
        directory_only = line.endswith("/")
        line = line.rstrip("/")
        anchored = "/" in line
        glob = line.lstrip("/")
        if glob:
            rules.append(ExcludeRule(glob=glob, anchored=anchored, directory_only=directory_only))
    return rules


def stack_excludes(local: Path) -> list[ExcludeRule]:
    """What `copy_folder` leaves out of `local`: `DEFAULT_EXCLUDES` and the lines of `local/.gitignore`."""
    rules = parse_ignore_lines(DEFAULT_EXCLUDES)
    try:
        rules += parse_ignore_lines((local / ".gitignore").read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError):
        pass
    return rules


def is_excluded(relative: PurePosixPath, is_dir: bool, rules: Sequence[ExcludeRule]) -> bool:
    """True if the path (relative to the copied folder) matches a rule; its parents are not looked at (the
    copy does not descend into an excluded folder)."""
    for rule in rules:
        if rule.directory_only and not is_dir:
            continue
        if rule.anchored:
            pattern = PurePosixPath(rule.glob).parts
            if len(pattern) == len(relative.parts) and all(
                    fnmatch.fnmatchcase(part, glob) for part, glob in zip(relative.parts, pattern)):
                return True
        elif fnmatch.fnmatchcase(relative.name, rule.glob):
            return True
    return False


def _check_remote_folder(remote: str) -> str:
    """`remote` if it names a folder pgarena may replace (ValueError for '', '/', '.', '~', '..' and the like)."""
    path = PurePosixPath(remote)
    if (not remote.strip() or "\n" in remote or remote.startswith("-") or str(path) in ("/", ".")
            or ".." in path.parts or path.parts[0].startswith("~")):
        raise ValueError(f"remote folder {remote!r}: give a folder of its own (absolute, or relative to the "
                         "login's home), not '/', '.', '~' or one with '..'")
    return str(path)


# -- Clock offset -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ClockSample:
    """One round trip: local wall-clock time when the request was sent (`sent_s`), the remote clock's reading
    (`remote_s`), and the round trip measured on the local monotonic clock (`round_trip_s`)."""

    sent_s: float
    remote_s: float
    round_trip_s: float


def offset_from_samples(samples: Sequence[ClockSample]) -> tuple[float, float]:
    """(offset, uncertainty) in seconds, remote clock − local clock, from the shortest round trip: the remote
    reading happened between sending and receiving, so offset = remote − (sent + rtt/2) ± rtt/2 (Cristian 1989).
    ValueError without samples."""
    if not samples:
        raise ValueError("no clock samples")
    best = min(samples, key=lambda sample: sample.round_trip_s)
    half = best.round_trip_s / 2
    return best.remote_s - (best.sent_s + half), half


# -- The host ----------------------------------------------------------------------------------------------------

class SshHost:
    """A machine reached with the OpenSSH client as `destination` (`[user@]host`, or a Host of ~/.ssh/config).

    `identity_file` is passed as `-i` (with IdentitiesOnly=yes); `options` as `-o NAME=VALUE`, ahead of
    pgarena's defaults so they win (ConnectTimeout, ServerAlive*), except BatchMode, which is always yes;
    `config_file` as `-F` (None: the user's ~/.ssh/config). `state_file` (e.g. `run_dir / "ssh.json"`) records
    every started process for `reap_state_file`; `remote_state_dir` is where their pid and log files live on
    the host. `copy_tool` forces "rsync" or "scp" (None: rsync when both ends have it).
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
        return f"SshHost({self.destination!r}, port={self.port})"

    def as_dict(self) -> dict:
        """How to reach the host again (for the state file and results.json)."""
        return {"destination": self.destination, "port": self.port,
                "identity_file": str(self.identity_file) if self.identity_file else None,
                "options": self.options, "config_file": str(self.config_file) if self.config_file else None,
                "connect_timeout_s": self.connect_timeout_s, "remote_state_dir": self.remote_state_dir}

    @classmethod
    def from_dict(cls, data: Mapping, *, state_file: Path | None = None) -> SshHost:
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
                           stderr=_text(exc.stderr)) from exc
        if done.returncode == 255:
            raise SshError(f"cannot {what}: ssh failed{_hint(done.stderr or '')}", destination=self.destination,
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

    def clock_offset(self, samples: int = DEFAULT_CLOCK_SAMPLES,
                     timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S) -> tuple[float, float]:
        """(offset, uncertainty) in seconds: the host's clock minus this machine's, from the shortest of
        `samples` round trips over one connection (`offset_from_samples`)."""
        argv = self.ssh_argv(remote_command('while read -r _; do date +%s.%N; done'))
        deadline = time.monotonic() + timeout_s + self.connect_timeout_s
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except FileNotFoundError as exc:
            raise SshError(f"cannot measure the clock offset: no ssh client ({exc.filename})",
                           destination=self.destination) from exc
        found: list[ClockSample] = []
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(proc.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]
                for _ in range(samples):
                    sent, started = time.time(), time.perf_counter()
                    proc.stdin.write(b"\n")  # type: ignore[union-attr]
                    proc.stdin.flush()  # type: ignore[union-attr]
                    if not selector.select(max(0.0, deadline - time.monotonic())):
                        raise SshError("cannot measure the clock offset: no answer in time",
                                       destination=self.destination)
                    line = proc.stdout.readline()  # type: ignore[union-attr]
                    round_trip = time.perf_counter() - started
                    if not line:
                        break
                    try:
                        remote = float(line)
                    except ValueError:
                        raise SshError("cannot measure the clock offset: `date +%s.%N` printed "
                                       f"{line.decode(errors='replace').strip()!r}",
                                       destination=self.destination) from None
                    found.append(ClockSample(sent_s=sent, remote_s=remote, round_trip_s=round_trip))
        except OSError:  # ssh ended (it could not connect): its stderr says why
            found = []
        finally:
            _end(proc)
        if not found:
            stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""  # type: ignore[union-attr]
            raise SshError(f"cannot measure the clock offset{_hint(stderr)}", destination=self.destination,
                           stderr=stderr)
        return offset_from_samples(found)

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

    def copy_folder(self, local: Path, remote: str, *, timeout_s: float = DEFAULT_COPY_TIMEOUT_S) -> str:
        """Make the remote folder `remote` a copy of `local` without its build outputs (`stack_excludes`);
        return the tool used ("rsync" or "scp").

        rsync (`-a --delete`) keeps the host's excluded build outputs between copies, so builds stay
        incremental; with scp the remote folder is removed and copied anew.
        """
        remote = _check_remote_folder(remote)
        if not local.is_dir():
            raise ValueError(f"{local} is not a folder")
        tool = self.copy_tool
        if tool is None:
            if self._remote_rsync is None:
                self.check()
            tool = "rsync" if self._remote_rsync and shutil.which("rsync") else "scp"
        rules = stack_excludes(local)
        parent = str(PurePosixPath(remote).parent)
        if tool == "rsync":
            self._call(remote_command('mkdir -p -- "$1"', remote), timeout_s=DEFAULT_COMMAND_TIMEOUT_S,
                       what=f"create {remote}")
            argv = ["rsync", "-a", "--delete", f"--timeout={int(timeout_s)}", "-e", shlex.join(self.ssh_base()),
                    *[f"--exclude={rule.rsync_pattern}" for rule in rules], f"{local}/", self.remote_spec(f"{remote}/")]
            self._copy(argv, timeout_s, remote, tool)
            return tool
        self._call(remote_command('rm -rf -- "$1" && mkdir -p -- "$2"', remote, parent),
                   timeout_s=DEFAULT_COMMAND_TIMEOUT_S, what=f"replace {remote}")
        with tempfile.TemporaryDirectory(prefix="pgarena-scp-") as tmp:
            staged = Path(tmp) / "stack"
            _copy_filtered(local, staged, rules)
            argv = ["scp", "-r", "-p", "-q", "-P", str(self.port), *self._common_options(), "--", str(staged),
                    self.remote_spec(remote)]
            self._copy(argv, timeout_s, remote, tool)
        return tool

    def put_files(self, local: Sequence[Path], remote_dir: str, *, timeout_s: float = DEFAULT_COPY_TIMEOUT_S) -> None:
        """Copy single files into the remote folder `remote_dir` (created if missing), keeping their names."""
        remote_dir = _check_remote_folder(remote_dir)
        self._call(remote_command('mkdir -p -- "$1"', remote_dir), timeout_s=DEFAULT_COMMAND_TIMEOUT_S,
                   what=f"create {remote_dir}")
        argv = ["scp", "-p", "-q", "-P", str(self.port), *self._common_options(), "--", *map(str, local),
                self.remote_spec(f"{remote_dir}/")]
        self._copy(argv, timeout_s, remote_dir, "scp")

    def get_files(self, remote: Sequence[str], local_dir: Path, *, timeout_s: float = DEFAULT_COPY_TIMEOUT_S) -> None:
        """Copy remote files into the local folder `local_dir`, keeping their names."""
        local_dir.mkdir(parents=True, exist_ok=True)
        argv = ["scp", "-p", "-q", "-P", str(self.port), *self._common_options(), "--",
                *[self.remote_spec(path) for path in remote], f"{local_dir}/"]
        self._copy(argv, timeout_s, str(local_dir), "scp")

    def _copy(self, argv: list[str], timeout_s: float, remote: str, tool: str) -> None:
        what = f"copy to {remote} with {tool}"
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace",
                                  timeout=timeout_s + self.connect_timeout_s + LOCAL_MARGIN_S)
        except FileNotFoundError as exc:
            raise SshError(f"cannot {what}: {exc.filename} is not installed", destination=self.destination) from exc
        except subprocess.TimeoutExpired as exc:
            raise SshError(f"cannot {what}: not done within {timeout_s:.0f} s", destination=self.destination,
                           stderr=_text(exc.stderr)) from exc
        if done.returncode != 0:
            raise SshError(f"cannot {what} (exit code {done.returncode}){_hint(done.stderr)}",
                           destination=self.destination, stderr=done.stderr)

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
            _track(self.state_file, process.as_dict())
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
            _track(self.state_file, process.as_dict())
        return process


def _text(value: str | bytes | None) -> str:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value or ""


def _tail(path: Path, lines: int = 10) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _hint(stderr: str) -> str:
    """What to do about the two refusals users meet first, from ssh's message."""
    if "Permission denied" in stderr:
        return (" (pgarena logs in with a key only, BatchMode=yes: put your public key in the host's "
                "authorized_keys, or load it into ssh-agent, and give identity_file if it is not a default key)")
    if "Host key verification failed" in stderr:
        return (" (the host key is not in known_hosts: connect once with ssh, or add it with ssh-keyscan, "
                "after checking its fingerprint)")
    return ""


def _end(proc: subprocess.Popen) -> None:
    """Close a clock session's stdin (the remote loop ends, so does ssh); kill it if it does not."""
    try:
        proc.stdin.close()  # type: ignore[union-attr]
    except OSError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _copy_filtered(local: Path, target: Path, rules: Sequence[ExcludeRule]) -> None:
    """Copy `local` to `target` without what `rules` exclude (symbolic links as links)."""
    def ignore(folder: str, names: list[str]) -> list[str]:
        base = PurePosixPath(Path(folder).relative_to(local).as_posix())
        return [name for name in names
                if is_excluded(base / name, os.path.isdir(os.path.join(folder, name)) and
                               not os.path.islink(os.path.join(folder, name)), rules)]

    shutil.copytree(local, target, symlinks=True, ignore=ignore)


# -- A started process -------------------------------------------------------------------------------------------

class RemoteProcess:
    """A command `SshHost.start` started on a host: its session leader's pid `pgid` (= process group and
    session id; None until known) and the `id` (token) its processes carry."""

    def __init__(self, host: SshHost, process_id: str, *, command: str, cwd: str, log_path: Path | None,
                 pgid: int | None = None) -> None:
        if not _ID_RE.match(process_id):
            raise ValueError(f"process id {process_id!r}: 32 hexadecimal digits")
        self.host = host
        self.id = process_id
        self.command = command
        self.cwd = cwd
        self.log_path = log_path
        self.pgid = pgid
        self.started_at = time.monotonic()
        """When `start` was called (time.monotonic(), as `process.ServerProcess.started_at`)."""
        self.started_wall_s = time.time()
        self._log_offset = 0
        self._stopped = False

    def __repr__(self) -> str:
        return f"RemoteProcess({self.host.destination!r}, pgid={self.pgid}, command={self.command!r})"

    def as_dict(self) -> dict:
        """The state file's record: how to reach the host, the id, the pid and where its log goes."""
        return {"id": self.id, "host": self.host.as_dict(), "pgid": self.pgid, "command": self.command,
                "cwd": self.cwd, "log_path": str(self.log_path) if self.log_path else None,
                "started_at": self.started_wall_s}

    def _script(self, script: str, *args: str, what: str, timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S) -> str:
        command = remote_command(script, self.host.remote_state_dir, self.id, *args)
        return self.host._call(command, timeout_s=timeout_s, what=what).stdout

    def _status(self) -> tuple[int, int | None]:
        members, code = 0, None
        for line in self._script(STATUS_SH, what="look at the started process").splitlines():
            key, _, value = line.partition(" ")
            if key == "members":
                members = int(value)
            elif key == "exit" and value.strip().lstrip("-").isdigit():
                code = int(value)
        return members, code

    def alive(self) -> bool:
        """True while any process of the tree runs on the host."""
        return self._status()[0] > 0

    def exit_code(self) -> int | None:
        """None while the tree runs; then the run command's exit status (128 + N: killed by signal N), or -1
        if none was recorded (its wrapper shell was killed, e.g. by `stop`)."""
        members, code = self._status()
        if members:
            return None
        return code if code is not None else -1

    def usage(self) -> RemoteUsage | None:
        """CPU seconds so far and resident memory now of the tree (`RemoteUsage`); None: not measured."""
        try:
            return parse_usage(self._script(USAGE_SH, what="read CPU and memory"))
        except (SshError, ValueError):
            return None

    def cpu_seconds(self) -> float | None:
        """CPU seconds the tree has used so far (`RemoteUsage.cpu_seconds`); None: not measured."""
        usage = self.usage()
        return usage.cpu_seconds if usage else None

    def rss_bytes(self) -> int | None:
        """Summed resident memory of the tree now (`RemoteUsage.rss_bytes`); None: not measured."""
        usage = self.usage()
        return usage.rss_bytes if usage else None

    def fetch_log(self) -> Path | None:
        """Append what the remote log gained since the last fetch to `log_path` (returned)."""
        if self.log_path is None:
            return None
        text = self._script(LOG_SH, str(self._log_offset + 1), what="fetch the log",
                            timeout_s=DEFAULT_COPY_TIMEOUT_S)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "a", encoding="utf-8") as log:
            log.write(text)
        self._log_offset += len(text.encode("utf-8", errors="replace"))
        return self.log_path

    def stop(self, grace_s: float = DEFAULT_STOP_GRACE_S) -> None:
        """SIGTERM every process of the tree, SIGKILL what is left after `grace_s`, fetch the log, remove the
        remote files and the state file's record (idempotent). SshError if the host cannot be reached (the
        record stays for `reap_state_file`) or a process survived SIGKILL."""
        if self._stopped:
            return
        _, _, left = _stop_remote(self.host, self.id, grace_s)
        if left:
            raise SshError(f"{left} process(es) of {self.command!r} survived SIGKILL",
                           destination=self.host.destination)
        try:
            self.fetch_log()
        finally:
            self._script(CLEAN_SH, what="remove the pid and log files")
        if self.host.state_file is not None:
            _untrack(self.host.state_file, self.id)
        self._stopped = True

    def __enter__(self) -> RemoteProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _stop_remote(host: SshHost, process_id: str, grace_s: float) -> tuple[int, int, int]:
    """(found, killed with SIGKILL, left) after stopping the tree of `process_id` on `host`."""
    tries = max(1, math.ceil(grace_s * 10))
    command = remote_command(STOP_SH, host.remote_state_dir, process_id, str(tries))
    out = host._call(command, timeout_s=grace_s + 2 * DEFAULT_COMMAND_TIMEOUT_S, what="stop a started process").stdout
    for line in out.splitlines():
        fields = line.split()
        if fields[:1] == ["stopped"] and len(fields) == 4:
            return int(fields[1]), int(fields[2]), int(fields[3])
    raise SshError("the stop command printed no result", destination=host.destination, stderr=out)


# -- The state file ----------------------------------------------------------------------------------------------

def read_state(path: Path) -> dict | None:
    """The state file's content (None if there is none; SshError naming the file if it is unreadable)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise SshError(f"cannot read the SSH state file {path}: {exc}", destination="(state file)") from exc
    if not isinstance(data, dict) or not isinstance(data.get("processes"), list):
        raise SshError(f"{path} is not an SSH state file", destination="(state file)")
    return data


def _write_state(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(data, indent=2))


def _owner() -> dict:
    try:
        return {"pid": os.getpid(), "start_time": psutil.Process().create_time()}
    except psutil.Error:
        return {"pid": os.getpid(), "start_time": None}


def _track(path: Path, record: dict) -> None:
    """Add (or replace) a started process's record."""
    with _STATE_LOCK:
        data = read_state(path) or {"version": STATE_VERSION, "owner": _owner(), "processes": []}
        data["processes"] = [p for p in data["processes"] if p.get("id") != record["id"]] + [record]
        _write_state(path, data)


def _untrack(path: Path, process_id: str) -> None:
    """Forget a stopped process; the file goes with the last one."""
    with _STATE_LOCK:
        data = read_state(path)
        if data is None:
            return
        data["processes"] = [p for p in data["processes"] if p.get("id") != process_id]
        if data["processes"]:
            _write_state(path, data)
        else:
            path.unlink(missing_ok=True)


def _owner_alive(owner: Mapping) -> bool:
    try:
        proc = psutil.Process(int(owner.get("pid", 0)))
        started = owner.get("start_time")
        return (started is not None and abs(proc.create_time() - started) <= OWNER_START_TOLERANCE_S
                and proc.status() != psutil.STATUS_ZOMBIE)
    except (psutil.Error, ValueError):
        return False


def reap_state_file(path: Path, *, grace_s: float = 2.0) -> list[str]:
    """Stop what a crashed run's state file names on each host, append each remote log to its local log
    file, remove the remote files; one line per process. Records of hosts that cannot be reached stay in the
    file (a line says so) for a later try; the file goes when none is left. SshInUse if the run's pgarena
    still runs (and is not this process); [] if there is no file."""
    data = read_state(path)
    if data is None:
        return []
    owner = data.get("owner") or {}
    if owner.get("pid") != os.getpid() and _owner_alive(owner):
        raise SshInUse(f"the processes of {path} belong to pid {owner.get('pid')}, which is still running",
                       destination="(state file)")
    lines = []
    for record in list(data["processes"]):
        host = SshHost.from_dict(record["host"])
        log_path = Path(record["log_path"]) if record.get("log_path") else None
        process = RemoteProcess(host, record["id"], command=record.get("command", ""), cwd=record.get("cwd", ""),
                                log_path=log_path, pgid=record.get("pgid"))
        try:
            found, killed, left = _stop_remote(host, process.id, grace_s)
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
        _untrack(path, process.id)
    return lines
