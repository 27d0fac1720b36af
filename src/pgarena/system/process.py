"""Subprocess hygiene: own process groups, CPU pinning, logs per phase, deadlines, whole-tree stops.

Every child starts in its own process group (as asv's `check_output` does) so that a server that forks
workers is stopped entirely; readiness is polled against a deadline, never a fixed sleep. Every child
also asks the kernel for a parent-death signal, so that it dies with pgarena even when pgarena is
killed with SIGKILL; what that signal cannot reach is left to reaper.py (`tracker`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import httpx
import psutil

from pgarena.config.redaction import redact_secrets

DEFAULT_STOP_GRACE_S = 10.0
PR_SET_PDEATHSIG = 1
"""prctl(2) option: the signal the calling process gets when its parent thread dies."""


class ProcessTracker(Protocol):
    """Records the process groups pgarena starts so that a later run can stop them (pidregistry.PidRegistry)."""

    def track(self, pid: int, role: str) -> None: ...

    def untrack(self, pid: int) -> None: ...


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """libc's prctl, loaded in the parent (loading it between fork and exec is not safe); None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _preexec(cpus: Sequence[int] | None, then: Callable[[], None] | None = None, *,
             death_signal: signal.Signals | None = signal.SIGKILL) -> Callable[[], None] | None:
    """The child's setup before exec: die with pgarena, pin it to `cpus`, then run `then` (e.g. join a cgroup).

    NOTE: the kernel sends `death_signal` when the *thread* that forked the child ends, not only the
    process: a child that must outlive the thread that started it gets `death_signal=None`. The signal
    survives exec but not a change of user (setpriv, runuser) and is not inherited by grandchildren;
    reaper.py covers those.
    """
    prctl = _prctl() if death_signal is not None else None
    if not cpus and then is None and prctl is None:
        return None
    cpu_set = set(cpus or ())
    parent = os.getpid()

    def setup() -> None:
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, int(death_signal), 0, 0, 0)
            if os.getppid() != parent:  # pgarena died before the request was made: nobody will signal
                os.kill(os.getpid(), death_signal)
        if cpu_set:
            os.sched_setaffinity(0, cpu_set)
        if then is not None:
            then()

    return setup


def _death_signal_for_server() -> signal.Signals | None:
    """SIGTERM (a stack's script may clean up) for a child started by the main thread, which lives as
    long as pgarena; none for one started by another thread, which may end before the child should."""
    return signal.SIGTERM if threading.current_thread() is threading.main_thread() else None


def popen_guarded(argv: Sequence[str], **kwargs) -> subprocess.Popen:
    """subprocess.Popen with Ctrl-C / SIGTERM held back while the child starts.

    NOTE: children run in their own process groups, so an interrupt reaches only pgarena; one that
    arrives while Popen is starting a child would leave that child orphaned. Here the signal is
    recorded instead, the child is stopped, and then the signal is delivered to pgarena's handler.
    """
    pending: list[int] = []
    saved = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            saved[sig] = signal.signal(sig, lambda signum, frame: pending.append(signum))
    proc = None
    try:
        proc = subprocess.Popen(list(argv), **kwargs)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        if pending:
            if proc is not None:
                kill_tree(proc.pid, grace_s=2.0)
                proc.wait()
            signal.raise_signal(pending[0])
    return proc


def _spawn_shell(command: str, *, cwd: Path, env: dict[str, str], log, cpus: Sequence[int] | None,
                 preexec: Callable[[], None] | None = None,
                 death_signal: signal.Signals | None = signal.SIGTERM,
                 argv_prefix: Sequence[str] = (), secrets: Sequence[str] = ()) -> subprocess.Popen:
    """`/bin/sh -c command` in its own process group, pinned to `cpus`, output appended to `log`;
    it gets `death_signal` when the thread that started it dies (SIGTERM: the shell may clean up).
    `argv_prefix` starts it elsewhere (`ip netns exec NAME`, which execs the shell: same pid and group).
    The command is echoed to the log first, every password in it redacted (`secrets`: ones known to be in it)."""
    log.write(f"$ {redact_secrets(command, secrets)}\n".encode())
    log.flush()
    return popen_guarded(
        [*argv_prefix, "/bin/sh", "-c", command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        process_group=0,
        preexec_fn=_preexec(cpus, preexec, death_signal=death_signal),
    )


def tail(path: Path, lines: int = 20) -> str:
    """The last `lines` lines of a log file ('' if it does not exist)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


@dataclass(frozen=True)
class StepResult:
    """Outcome of a command run to completion (a build)."""

    returncode: int | None
    duration_s: float
    timed_out: bool

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def run_logged(
    command: str,
    *,
    cwd: Path,
    env: dict[str, str],
    log_path: Path,
    timeout_s: float,
    cpus: Sequence[int] | None = None,
    tracker: ProcessTracker | None = None,
    secrets: Sequence[str] = (),
) -> StepResult:
    """Run a shell command to completion, output appended to `log_path`; kill its group on timeout.

    `tracker` records the command's process group while it runs (so a killed pgarena's build is found);
    `secrets`: passwords that may stand in the command, redacted where it is echoed to the log."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with open(log_path, "ab") as log:
        proc = _spawn_shell(command, cwd=cwd, env=env, log=log, cpus=cpus, secrets=secrets)
        try:
            if tracker is not None:
                tracker.track(proc.pid, "build")
            returncode = proc.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            kill_tree(proc.pid, grace_s=2.0)
            returncode = proc.wait()
            timed_out = True
        except BaseException:  # Ctrl-C: the build has its own process group, so stop it here
            kill_tree(proc.pid, grace_s=2.0)
            raise
        finally:
            if tracker is not None:
                tracker.untrack(proc.pid)
    return StepResult(returncode, time.monotonic() - started, timed_out)


def kill_tree(pid: int, *, grace_s: float = DEFAULT_STOP_GRACE_S) -> None:
    """SIGTERM a process, its process group and every descendant; SIGKILL what is left after grace_s."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        procs = []
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    for proc in procs:
        try:
            proc.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for proc in alive:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=2.0)


class ServerProcess:
    """A long-running child (a stack) in its own process group, pinned to a CPU set, logging to a file."""

    def __init__(
        self,
        command: str,
        *,
        cwd: Path,
        env: dict[str, str],
        log_path: Path,
        cpus: Sequence[int] | None = None,
        preexec: Callable[[], None] | None = None,
        tracker: ProcessTracker | None = None,
        role: str = "stack",
        argv_prefix: Sequence[str] = (),
        secrets: Sequence[str] = (),
    ) -> None:
        """Start `command` now; `secrets`: passwords that may stand in it, redacted where it is echoed to the log."""
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path = log_path
        self.started_at = time.monotonic()
        self._tracker = tracker
        with open(log_path, "ab") as log:
            self._proc = _spawn_shell(command, cwd=cwd, env=env, log=log, cpus=cpus, preexec=preexec,
                                      death_signal=_death_signal_for_server(), argv_prefix=argv_prefix,
                                      secrets=secrets)
        if tracker is not None:
            try:
                tracker.track(self._proc.pid, role)
            except BaseException:  # e.g. a full disk: not recorded, so not left running either
                kill_tree(self._proc.pid, grace_s=2.0)
                self._proc.wait()
                raise

    @property
    def pid(self) -> int:
        return self._proc.pid

    def exit_code(self) -> int | None:
        """The exit code if the process has ended, else None."""
        return self._proc.poll()

    def stop(self, grace_s: float = DEFAULT_STOP_GRACE_S) -> None:
        """Stop the whole tree (idempotent)."""
        if self._proc.poll() is None:
            kill_tree(self._proc.pid, grace_s=grace_s)
        else:
            kill_tree(self._proc.pid, grace_s=0.5)  # orphaned children of a dead shell
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        if self._tracker is not None:
            self._tracker.untrack(self._proc.pid)
            self._tracker = None

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class NotReady(Exception):
    """The server exited, answered only server errors, or did not answer its health path before the deadline."""


FAILING_START_S = 10.0
"""Seconds of nothing but server errors (HTTP 5xx other than 503) from the health path after which a start is
given up before its deadline: the app is up and fails every request (a missing function, a wrong password),
and waiting the full startup timeout would only delay the same verdict. 503 ("not ready yet") is waited for."""
SHOWN_URL_CHARS = 100
SHOWN_BODY_CHARS = 300


def shown_url(url: str, limit: int = SHOWN_URL_CHARS) -> str:
    """A URL fit for a message: passwords redacted, cut to `limit` characters with its full length said
    (a perf-test health URL is some 700 characters of query string)."""
    url = redact_secrets(url)
    return url if len(url) <= limit else f"{url[:limit]}… ({len(url)} characters)"


def shown_body(text: str, limit: int = SHOWN_BODY_CHARS) -> str:
    """An answer's body for a message: one line, redacted, cut to `limit` characters."""
    text = redact_secrets(" ".join(text.split()))
    return text if len(text) <= limit else text[:limit] + "…"


def wait_until_healthy(server: ServerProcess, url: str, timeout_s: float,
                       failing_s: float = FAILING_START_S) -> float:
    """Poll `url` until it answers 2xx; return seconds since the server started.

    Raises NotReady if the process exits, if every answer for `failing_s` seconds was a server error (5xx but
    503: the message shows the last body), or when the deadline passes (the message says which, with the URL
    shortened).
    """
    deadline = time.monotonic() + timeout_s
    delay = 0.05
    last_error = "no answer yet"
    failing_since: float | None = None  # the first of an unbroken run of server errors
    with httpx.Client(timeout=2.0) as client:
        while True:
            code = server.exit_code()
            if code is not None:
                raise NotReady(f"exited with code {code} before answering {shown_url(url)}")
            try:
                response = client.get(url)
                if 200 <= response.status_code < 300:
                    return time.monotonic() - server.started_at
                last_error = f"HTTP {response.status_code}"
                if response.status_code >= 500 and response.status_code != 503:
                    failing_since = failing_since if failing_since is not None else time.monotonic()
                    if time.monotonic() - failing_since >= failing_s:
                        raise NotReady(f"answered HTTP {response.status_code} to every health request for "
                                       f"{failing_s:.0f} s at {shown_url(url)}; body: "
                                       f"{shown_body(response.text) or '(empty)'}")
                else:
                    failing_since = None
            except httpx.HTTPError as exc:
                last_error = type(exc).__name__
                failing_since = None
            if time.monotonic() >= deadline:
                raise NotReady(f"not healthy after {timeout_s:.0f} s at {shown_url(url)} (last: {last_error})")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.1)  # fine enough to time cold starts


def first_line(argv: list[str]) -> str:
    """The first output line of a version command ('' if it fails)."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else ""


MIN_OPEN_FILES = 4096
"""Open files a run needs at least: 500 VUs are 500 sockets in the generator and 500 in the stack, plus
pools, logs and pipes; a soft limit of 1,024 (a common default) would fail above ~500 VUs."""


def raise_open_files_limit() -> tuple[int, int]:
    """Raise this process's soft open-file limit to its hard limit (children inherit it): generators and
    stacks above 100 VUs need one descriptor per connection. Returns (soft, hard) after the change."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1_048_576)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft, hard
