"""What the load generators really send, seen by a server: no request asks for a compressed answer.

oha asks for "gzip, compress, deflate, br" unless run with --disable-compression; k6 asks for no coding;
httpx asks for gzip and deflate by default. pgarena's requests (oha, k6, verification) must ask for none,
so a stack that compresses cannot do it for the benchmark, and verification catches one that does anyway.
"""

from __future__ import annotations

import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pgarena.contract import workloads as wl
from pgarena.load.engines import EngineUnavailable, get_engine
from pgarena.load.engines.base import LoadSpec
from pgarena.verify import http


class _Recorder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[dict[str, str]] = []

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):
        self.seen.append({k.lower(): v for k, v in self.headers.items()})
        body = b'{"status":"ok","timestamp":1}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def recorder():
    _Recorder.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Recorder.seen
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("engine_name", ["oha", "k6"])
def test_load_generators_ask_for_no_content_coding(recorder, engine_name, tmp_path):
    base_url, seen = recorder
    engine = get_engine(engine_name)
    try:
        engine.binary  # noqa: B018
    except EngineUnavailable as exc:
        pytest.skip(f"{engine_name} not installed: {exc}")
    # k6 needs a window of at least 1 s
    spec = LoadSpec(url=base_url + wl.STATIC_PATH, method="GET", connections=1, duration_s=1, timeout_s=2,
                    workload=wl.STATIC)
    subprocess.run(engine.command(spec, tmp_path, "headers"), cwd=tmp_path, capture_output=True, timeout=120,
                   check=False)
    assert seen, f"{engine_name} sent no request"
    assert all("accept-encoding" not in headers for headers in seen), seen[0]


def test_verification_client_asks_for_no_content_coding(recorder):
    base_url, seen = recorder
    with http.http_client(base_url, 5, {}) as client:
        response = http.send(client, wl.static_request())
    assert response.status_code == 200
    assert "accept-encoding" not in seen[0] and "accept-encoding" not in response.request.headers
