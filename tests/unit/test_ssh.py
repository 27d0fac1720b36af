"""The parts of system/ssh that need no server: the ssh argv, quoting (run through a local /bin/sh exactly as
sshd runs the command string: `$SHELL -c STRING`), the clock-offset maths, what a copy leaves out, the parsing of
what remote scripts print, and the state file."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path, PurePosixPath

import psutil
import pytest

from pgarena.system.ssh import files, shell
from pgarena.system.ssh.clock import ClockSample, offset_from_samples
from pgarena.system.ssh.files import ExcludeRule
from pgarena.system.ssh.host import SshHost, reap_state_file
from pgarena.system.ssh.process import STATE_VERSION, RemoteProcess, read_state, track, untrack
from pgarena.system.ssh.transport import DEFAULT_CONNECT_TIMEOUT_S, SshError, SshInUse, hint
from tests.conftest import PROJECT_DIR

NASTY = ["it's", 'a "quoted" $HOME `date` value', "with spaces;  and \\ backslash", "$(echo no)", "ünï\ncode", "",
         "@KILL_AFTER@ @EXPORTS@"]


def as_sshd_would(command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run a command string the way sshd does: the login shell's `-c`."""
    return subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, timeout=10,
                          env={"PATH": os.environ["PATH"], "HOME": "/nonexistent", **(env or {})})


def test_ssh_argv_never_prompts_and_puts_the_destination_after_the_options():
    host = SshHost("deploy@bench-1", port=2222, identity_file=Path("/keys/id ed25519"),
                   options={"UserKnownHostsFile": "/run/known hosts", "ConnectTimeout": "3"})
    argv = host.ssh_argv("true")
    assert argv[:5] == ["ssh", "-T", "-p", "2222", "-o"] and argv[5] == "BatchMode=yes"
    assert argv[-3:] == ["--", "deploy@bench-1", "true"]
    assert ["-i", "/keys/id ed25519", "-o", "IdentitiesOnly=yes"] == argv[argv.index("-i"):argv.index("-i") + 4]
    options = [argv[i + 1] for i, word in enumerate(argv) if word == "-o"]
    # The user's options come before pgarena's defaults: ssh keeps the first value of an option.
    assert options.index("ConnectTimeout=3") < options.index(f"ConnectTimeout={DEFAULT_CONNECT_TIMEOUT_S}")
    assert "UserKnownHostsFile=/run/known hosts" in options
    assert "-F" not in argv  # the user's own ssh config applies unless one is given


@pytest.mark.parametrize("kwargs, message", [
    ({"destination": "-oProxyCommand=x"}, "leading '-'"),
    ({"destination": "a b"}, "without spaces"),
    ({"destination": "h", "options": {"BatchMode": "no"}}, "always uses BatchMode=yes"),
    ({"destination": "h", "options": {"batchmode": "no"}}, "always uses BatchMode=yes"),
    ({"destination": "h", "options": {"Proxy Command": "x"}}, "a name of letters and digits"),
    ({"destination": "h", "port": 0}, "1 to 65535"),
    ({"destination": "h", "copy_tool": "ftp"}, "'rsync', 'scp' or None"),
])
def test_bad_host_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SshHost(**kwargs)


def test_remote_spec_brackets_ipv6_addresses():
    assert SshHost("root@10.0.0.2").remote_spec("/srv/s") == "root@10.0.0.2:/srv/s"
    assert SshHost("root@fd00::2").remote_spec("s") == "root@[fd00::2]:s"
    assert SshHost("bench").remote_spec("s") == "bench:s"


def test_arguments_arrive_word_for_word():
    done = as_sshd_would(shell.remote_command('for a in "$@"; do printf "<%s>" "$a"; done', *NASTY))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "".join(f"<{word}>" for word in NASTY)


def test_environment_values_arrive_intact_and_bad_names_are_refused():
    env = {f"V{i}": value for i, value in enumerate(NASTY)}
    script = shell.env_exports(env) + '\nfor n in V0 V1 V2 V3 V4 V5 V6; do eval "printf \'<%s>\' \\"\\$$n\\""; done'
    done = as_sshd_would(shell.remote_command(script))
    assert done.stdout == "".join(f"<{value}>" for value in NASTY), done.stderr
    with pytest.raises(ValueError, match="environment variable name"):
        shell.env_exports({"A-B": "x"})
    with pytest.raises(ValueError, match="environment variable name"):
        shell.env_exports({"X; rm -rf /": "x"})


def _local(monkeypatch, host: SshHost) -> list[str]:
    """Make `host._call` run the command string with a local /bin/sh instead of ssh; return the strings."""
    sent = []

    def call(command, *, timeout_s, what, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE):
        sent.append(command)
        return subprocess.run(["/bin/sh", "-c", command], stdout=stdout, stderr=stderr, text=True, timeout=10)

    monkeypatch.setattr(host, "_call", call)
    return sent


def test_run_passes_a_shell_command_its_env_and_cwd(monkeypatch, tmp_path):
    host = SshHost("h")
    _local(monkeypatch, host)
    env = {"MARK": NASTY[1], "TEMPLATE": NASTY[-1]}  # a value that looks like the script's placeholders
    done = host.run('printf "%s|%s|%s|%s" "$MARK" "$TEMPLATE" "$(pwd)" "$0"', cwd=str(tmp_path), env=env,
                    timeout_s=5)
    assert (done.returncode, done.stdout) == (0, f"{NASTY[1]}|{NASTY[-1]}|{tmp_path}|/bin/sh")


def test_run_passes_an_argv_word_for_word_and_logs(monkeypatch, tmp_path):
    host = SshHost("h")
    _local(monkeypatch, host)
    log = tmp_path / "logs" / "build.log"
    done = host.run(["printf", "<%s>", *NASTY], timeout_s=5, log_path=log)
    assert done.returncode == 0
    header, output = log.read_text().split("  (on h)\n", 1)
    assert header.startswith("$ printf '<%s>' ")
    assert output == "".join(f"<{word}>" for word in NASTY)


def test_run_in_a_missing_folder_exits_125_and_an_overrun_124(monkeypatch, tmp_path):
    host = SshHost("h")
    _local(monkeypatch, host)
    assert host.run("true", cwd=str(tmp_path / "missing"), timeout_s=5).returncode == 125
    assert host.run(["sleep", "5"], timeout_s=0.2).returncode == 124


def test_a_relative_state_folder_is_under_the_logins_home():
    script = shell.PRELUDE_SH + 'printf "%s %s" "$pidfile" "$log"'
    done = as_sshd_would(shell.remote_command(script, ".cache/pgarena/ssh", "a" * 32), env={"HOME": "/home/b"})
    assert done.stdout == f"/home/b/.cache/pgarena/ssh/{'a' * 32}.pid /home/b/.cache/pgarena/ssh/{'a' * 32}.log"
    done = as_sshd_would(shell.remote_command(script, "/srv/state", "b" * 32))
    assert done.stdout.startswith(f"/srv/state/{'b' * 32}.pid ")


def test_offset_comes_from_the_shortest_round_trip():
    # Remote clock 2.5 s ahead; the round trips' remote readings land anywhere inside them.
    samples = [ClockSample(sent_s=100.0, remote_s=102.5 + 0.030, round_trip_s=0.040),
               ClockSample(sent_s=101.0, remote_s=103.5 + 0.001, round_trip_s=0.004),
               ClockSample(sent_s=102.0, remote_s=104.5 + 0.050, round_trip_s=0.100)]
    offset, uncertainty = offset_from_samples(samples)
    assert uncertainty == pytest.approx(0.002)
    assert offset == pytest.approx(2.5 + 0.001 - 0.002)
    assert abs(offset - 2.5) <= uncertainty  # the truth lies within the bound
    with pytest.raises(ValueError, match="no clock samples"):
        offset_from_samples([])


def test_offset_is_bounded_by_half_the_round_trip_wherever_the_reading_fell():
    for at in (0.0, 0.25, 0.5, 0.75, 1.0):  # where inside the round trip the remote clock was read
        sample = ClockSample(sent_s=10.0, remote_s=10.0 - 0.3 + at * 0.02, round_trip_s=0.02)
        offset, uncertainty = offset_from_samples([sample])
        assert abs(offset - (-0.3)) <= uncertainty + 1e-12


def test_gitignore_lines_become_rules():
    rules = files.parse_ignore_lines(["# comment", "", "build/", "*.log", "/dist", "docs/out/", "!keep.log",
                                    "**/tmp", "  "])
    assert rules == [ExcludeRule("build", anchored=False, directory_only=True),
                     ExcludeRule("*.log", anchored=False, directory_only=False),
                     ExcludeRule("dist", anchored=True, directory_only=False),
                     ExcludeRule("docs/out", anchored=True, directory_only=True)]
    assert [rule.rsync_pattern for rule in rules] == ["build/", "*.log", "/dist", "/docs/out/"]


@pytest.mark.parametrize("path, is_dir, excluded", [
    ("bin", True, True),             # /bin/: build output at the top
    ("sub/bin", True, False),        # ... but not deeper
    ("bin", False, False),           # ... and a file called bin is a source
    ("node_modules", True, True),
    ("a/b/__pycache__", True, True),  # __pycache__/: anywhere
    ("build", True, True),           # the stack's .gitignore: build/
    ("debug.log", False, True),      # *.log
    ("logs/x.log", False, True),
    ("docs/out", True, True),        # docs/out/: anchored
    ("x/docs/out", True, False),
    ("app.py", False, False),
    (".gitignore", False, False),
])
def test_what_a_copy_leaves_out(tmp_path, path, is_dir, excluded):
    (tmp_path / ".gitignore").write_text("build/\n*.log\ndocs/out/\n")
    rules = files.stack_excludes(tmp_path)
    assert files.is_excluded(PurePosixPath(path), is_dir, rules) is excluded


def test_default_excludes_are_the_projects_stack_build_outputs():
    lines = (PROJECT_DIR / ".gitignore").read_text().splitlines()
    stack_outputs = {"/" + line.removeprefix("stacks/*/") for line in lines if line.startswith("stacks/*/")}
    assert stack_outputs and stack_outputs <= set(files.DEFAULT_EXCLUDES)
    assert "__pycache__/" in lines and "__pycache__/" in files.DEFAULT_EXCLUDES


@pytest.mark.parametrize("remote", ["", "/", ".", "~", "~/", "a/../..", "-rf", "x\ny"])
def test_a_remote_folder_that_is_not_its_own_is_refused(remote):
    with pytest.raises(ValueError, match="remote folder"):
        SshHost("h").copy_folder(Path("."), remote)


def test_sections_and_usage_are_parsed():
    assert shell.parse_sections("junk\n@@pgarena a\n x \n\n@@pgarena b\n@@pgarena c\nl1\nl2\n") == {
        "a": "x", "b": "", "c": "l1\nl2"}
    text = "clock 100 4096\nproc 10 S 150 50 20 5 1000\nproc 11 R 30 20 0 0 500\n"
    usage = shell.parse_usage(text)
    assert usage == shell.RemoteUsage(cpu_seconds=2.75, rss_bytes=1500 * 4096, processes=2)
    assert shell.parse_usage("proc 10 S 1 1 1 1 1\n") is None  # no clock line: not measured, not zero
    assert shell.parse_usage("clock 100 4096\n") == shell.RemoteUsage(cpu_seconds=0.0, rss_bytes=0, processes=0)


def test_ssh_errors_name_the_destination_and_say_what_to_do():
    error = SshError("cannot log in: ssh failed" + hint("root@h: Permission denied (publickey)."),
                     destination="root@h", stderr="root@h: Permission denied (publickey).\n")
    assert str(error).startswith("root@h: cannot log in") and "authorized_keys" in str(error)
    assert str(error).endswith(": root@h: Permission denied (publickey).")
    assert "ssh-keyscan" in hint("Host key verification failed.")
    assert hint("Connection refused") == ""


def _record(process_id: str) -> dict:
    host = SshHost("root@h", identity_file=Path("/k"), options={"StrictHostKeyChecking": "yes"})
    return RemoteProcess(host, process_id, command="exec app", cwd="/srv/s", log_path=Path("/l")).as_dict()


def test_the_state_file_records_processes_and_goes_with_the_last(tmp_path):
    path = tmp_path / "run" / "ssh.json"
    track(path, _record("a" * 32))
    track(path, {**_record("b" * 32), "pgid": 4242})
    track(path, {**_record("a" * 32), "pgid": 4141})  # the pid, once known, replaces the record
    data = read_state(path)
    assert data["owner"]["pid"] == os.getpid() and data["version"] == STATE_VERSION
    assert [(p["id"][0], p["pgid"]) for p in data["processes"]] == [("b", 4242), ("a", 4141)]
    host = SshHost.from_dict(data["processes"][0]["host"])
    assert host.ssh_argv("x") == SshHost("root@h", identity_file=Path("/k"),
                                         options={"StrictHostKeyChecking": "yes"}).ssh_argv("x")
    untrack(path, "b" * 32)
    assert [p["id"] for p in read_state(path)["processes"]] == ["a" * 32]
    untrack(path, "a" * 32)
    assert not path.exists()
    assert reap_state_file(path) == []


def test_a_state_file_of_a_running_pgarena_is_not_reaped(tmp_path):
    path = tmp_path / "ssh.json"
    parent = psutil.Process(os.getppid())
    path.write_text(json.dumps({"version": 1, "owner": {"pid": parent.pid, "start_time": parent.create_time()},
                                "processes": [_record("c" * 32)]}))
    with pytest.raises(SshInUse, match="still running"):
        reap_state_file(path)
    assert path.exists()


def test_an_unreachable_host_keeps_its_record_for_a_later_reap(tmp_path, monkeypatch):
    path = tmp_path / "ssh.json"
    path.write_text(json.dumps({"version": 1, "owner": {"pid": 1, "start_time": 0.0},
                                "processes": [_record("d" * 32)]}))

    def unreachable(self, command, **kwargs):
        raise SshError("cannot stop a started process: ssh failed", destination=self.destination,
                       stderr="ssh: connect to host h port 22: No route to host")

    monkeypatch.setattr(SshHost, "_call", unreachable)
    lines = reap_state_file(path)
    assert len(lines) == 1 and lines[0].startswith("could not stop 'exec app' on root@h: ") and "No route" in lines[0]
    assert [p["id"] for p in read_state(path)["processes"]] == ["d" * 32]


def test_a_broken_state_file_is_one_clear_error(tmp_path):
    path = tmp_path / "ssh.json"
    path.write_text("{not json")
    with pytest.raises(SshError, match="cannot read the SSH state file"):
        reap_state_file(path)
