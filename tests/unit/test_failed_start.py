"""Issue 22 item 13: a start that fails every request stops early and says why (the answer's body, the
database's errors for the stack's role), with the health URL shortened."""

from __future__ import annotations

import sys
import time

import pytest

from pgarena.db.postgres import free_port
from pgarena.db.serverlog import role_errors
from pgarena.system.process import NotReady, ServerProcess, shown_url, wait_until_healthy

SERVER = """
import http.server, sys
status = int(sys.argv[2])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"error": "function public.perf_test(unknown, integer) does not exist"}'
        self.send_response(status); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def _server(tmp_path, status: int) -> tuple[ServerProcess, str]:
    (tmp_path / "server.py").write_text(SERVER)
    port = free_port()
    server = ServerProcess(f"exec {sys.executable} server.py {port} {status}", cwd=tmp_path, env={},
                           log_path=tmp_path / "run.log")
    long_query = "&".join(f"_p{i}=" + "x" * 30 for i in range(20))  # a health URL of some 700 characters
    return server, f"http://127.0.0.1:{port}/api/perf-test?{long_query}"


def test_a_start_that_answers_500_to_everything_stops_early_and_shows_the_body(tmp_path):
    server, url = _server(tmp_path, 500)
    with server:
        started = time.monotonic()
        with pytest.raises(NotReady) as info:
            wait_until_healthy(server, url, timeout_s=60, failing_s=1.0)
    assert time.monotonic() - started < 15  # not the 60 s deadline
    message = str(info.value)
    assert "answered HTTP 500 to every health request for 1 s" in message
    assert "function public.perf_test(unknown, integer) does not exist" in message
    assert url not in message and f"({len(url)} characters)" in message and len(message) < 500


def test_503_is_not_ready_yet_and_is_waited_for_until_the_deadline(tmp_path):
    server, url = _server(tmp_path, 503)
    with server, pytest.raises(NotReady, match=r"not healthy after 2 s at .*\(last: HTTP 503\)"):
        wait_until_healthy(server, url, timeout_s=2, failing_s=0.2)


def test_a_shown_url_is_short_and_redacted():
    assert shown_url("http://u:s3cret@h:1/api/x?" + "a" * 900).endswith("… (923 characters)")  # counted after redaction
    assert "s3cret" not in shown_url("http://u:s3cret@h:1/api")
    assert shown_url("http://127.0.0.1:1/api/static") == "http://127.0.0.1:1/api/static"


def test_the_database_errors_of_one_role_are_counted_most_frequent_first(tmp_path):
    log = tmp_path / "postgres.log"
    missing = "function public.perf_test(unknown, integer) does not exist at character 15"
    log.write_text("\n".join(
        [f"2026-11-25 20:30:01.123 UTC [77] testuser@testdb ERROR:  {missing}"] * 1111
        + ["2026-11-25 20:30:01.124 UTC [77] testuser@testdb STATEMENT:  SELECT public.perf_test($1, $2)",
           "2026-11-25 20:30:02.000 UTC [78] other@testdb ERROR:  relation \"x\" does not exist",
           "2026-11-25 20:30:03.000 UTC [79] testuser@testdb FATAL:  password authentication failed",
           "2026-11-25 20:30:04.000 UTC [10] LOG:  checkpoint starting: time"]) + "\n")
    assert role_errors(log, "testuser") == [f"ERROR: {missing} (1,111 times)",
                                            "FATAL: password authentication failed (1 time)"]
    assert role_errors(tmp_path / "absent.log", "testuser") == []
