"""What the load generators really send, seen by a server: no request asks for a compressed answer.

oha asks for "gzip, compress, deflate, br" unless run with --disable-compression; k6 asks for no coding;
httpx asks for gzip and deflate by default. pgarena's requests (oha, k6, verification) must ask for none,
so a stack that compresses cannot do it for the benchmark, and verification catches one that does anyway.
"""

from __future__ import annotations

import subprocess

import pytest

from pgarena.contract import workloads as wl
from pgarena.load.engines import EngineUnavailable, get_engine
from pgarena.load.engines.base import LoadSpec
from pgarena.verify import http
from tests.fixtures.local_http import recording


@pytest.fixture
def recorder():
    with recording(b'{"status":"ok","timestamp":1}') as (base_url, seen):
        yield base_url, seen


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
    assert all("accept-encoding" not in request.names for request in seen), seen[0]


def test_verification_client_asks_for_no_content_coding(recorder):
    base_url, seen = recorder
    with http.http_client(base_url, 5, {}) as client:
        response = http.send(client, wl.static_request())
    assert response.status_code == 200
    assert "accept-encoding" not in seen[0].names and "accept-encoding" not in response.request.headers
