"""Issue 22 item 15: no line pgarena writes to a log or the console shows a password (the stack's command with
${database_url} rendered in it used to be echoed to logs/<stack>/run.log as it was)."""

from __future__ import annotations

import sys

from pgarena.pipeline.context import redacting
from pgarena.system.process import ServerProcess, run_logged

URL = "postgresql://testuser:pa#ss w/rd@127.0.0.1:5432/testdb"


def test_a_build_commands_echo_in_its_log_hides_the_password(tmp_path):
    log = tmp_path / "build.log"
    step = run_logged(f"true {URL} --password s3cretpw", cwd=tmp_path, env={}, log_path=log, timeout_s=30,
                      secrets=["s3cretpw"])
    assert step.ok
    text = log.read_text()
    assert text.startswith("$ true postgresql://testuser:***@127.0.0.1:5432/testdb --password ***")
    assert "pa#ss" not in text and "s3cretpw" not in text


def test_a_stacks_run_log_hides_the_password_of_its_database_url(tmp_path):
    log = tmp_path / "run.log"
    with ServerProcess(f"exec {sys.executable} -c 'pass' '{URL}'", cwd=tmp_path, env={}, log_path=log) as server:
        server._proc.wait(timeout=30)
    text = log.read_text()
    assert "postgresql://testuser:***@127.0.0.1:5432/testdb" in text and "pa#ss" not in text


def test_every_console_line_of_a_run_is_redacted():
    lines: list[str] = []
    log = redacting(lines.append, ["r4ndompw"])
    log(f"[x] not healthy at http://127.0.0.1:1/api?x=1: {URL} password=r4ndompw")
    log("role r4ndompw")
    assert lines == ["[x] not healthy at http://127.0.0.1:1/api?x=1: postgresql://testuser:***@127.0.0.1:5432/testdb "
                     "password=***", "role ***"]
