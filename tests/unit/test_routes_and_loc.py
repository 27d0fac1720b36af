"""Workload routes of third-party apps, and the lines-of-code count."""

from pathlib import Path

import httpx
import pytest

from pgarena.contract.workloads import routed
from pgarena.stack.loc import count
from pgarena.verify.http import http_client

POSTGREST = {"perf-test": "/rpc/perf_test", "users": "/users?order=id&select=id,username"}


@pytest.mark.parametrize(("path", "expected"), [
    ("/api/perf-test?_records=1&_text=a", "/rpc/perf_test?_records=1&_text=a"),
    ("/api/users?limit=20", "/users?order=id&select=id,username&limit=20"),
    ("/api/users", "/users?order=id&select=id,username"),
    ("/api/static", "/api/static"),  # no route: the contract's path
    ("/api/perf-testing", "/api/perf-testing"),  # only whole paths move
])
def test_routed(path, expected):
    assert routed(path, POSTGREST) == expected


def test_http_client_sends_requests_to_the_routes():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.raw_path.decode())
        return httpx.Response(200, json=[])

    client = http_client("http://app", 5, POSTGREST)
    client._transport = httpx.MockTransport(handler)
    client.get("/api/users?limit=3")
    client.get("/api/static")
    assert seen == ["/users?order=id&select=id,username&limit=3", "/api/static"]


def test_loc_counts_code_lines_only(tmp_path: Path):
    (tmp_path / "app.py").write_text('"""doc"""\n\nimport os\n# comment\n\ndef f():\n    return os.sep\n')
    (tmp_path / "server.js").write_text("// c\nconst a = 1;\n\nmodule.exports = a;\n")
    (tmp_path / "package-lock.json").write_text("{}")
    result = count(tmp_path, ["*.py", "*.js"])
    assert result.files == 2
    assert result.by_language == {"Python": 3, "JavaScript": 2}
    assert result.total == 5 and result.counter == "pygount"
    assert count(tmp_path, ["*.go"]) is None


def test_every_real_stack_has_countable_sources():
    stacks = Path(__file__).resolve().parents[2] / "stacks"
    from pgarena.config.stackdef import load_stacks

    for stack in load_stacks(stacks)[0]:
        if stack.definition.source_globs:
            result = count(stack.directory, stack.definition.source_globs)
            assert result is not None and result.total > 0, stack.id


def _answer(content_encoding: str | None, accept_encoding: str | None) -> httpx.Response:
    request = httpx.Request("GET", "http://127.0.0.1/api/static",
                            headers={"accept-encoding": accept_encoding} if accept_encoding else {})
    headers = {"content-encoding": content_encoding} if content_encoding else {}
    return httpx.Response(200, headers=headers, request=request)


@pytest.mark.parametrize(("content_encoding", "accept_encoding", "unrequested"), [
    (None, None, None),
    ("identity", None, None),
    ("gzip", None, "gzip"),  # pgarena asks for no coding: a gzip answer is one it did not ask for
    ("br", "gzip, deflate", "br"),
    ("gzip", "gzip, deflate", None),
    ("GZIP", "gzip", None),
    ("gzip", "gzip;q=0, deflate", "gzip"),  # q=0 means "not acceptable"
    ("gzip", "*", None),
    ("deflate, gzip", "gzip", "deflate, gzip"),
])
def test_unrequested_content_encoding(content_encoding, accept_encoding, unrequested):
    from pgarena.verify.http import unrequested_encoding

    assert unrequested_encoding(_answer(content_encoding, accept_encoding)) == unrequested


def test_stack_client_sends_no_accept_encoding():
    with http_client("http://127.0.0.1:1", 1, {}) as client:
        assert "accept-encoding" not in client.headers
        assert "accept-encoding" not in client.build_request("GET", "/api/static").headers
