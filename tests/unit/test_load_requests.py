"""What the load sends: the variants' URL file through each engine's own mechanism, and the sampler's
headers equal to the generator's (a stack must not tell them apart)."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from pgarena.contract import workloads as wl
from pgarena.load.engines import EngineUnavailable
from pgarena.load.engines.base import LoadSpec
from pgarena.load.engines.k6 import K6Engine
from pgarena.load.engines.oha import OhaEngine
from pgarena.verify.checks import AnswerSampler, bare_client, check_variants, fill_headers
from pgarena.verify.variants import Variant
from tests.fixtures.local_http import recording


def _but_host(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Headers in order, Host left out: h11 (under httpx) always writes Host first, oha writes it last."""
    return [(name, value) for name, value in headers if name.lower() != "host"]


@pytest.fixture
def recorder():
    """(base URL, requests seen: path, headers with their names as sent, body); every answer a static one."""
    with recording(b'{"status": "ok", "timestamp": 0}') as (base_url, seen):
        yield base_url, seen


def test_fill_headers_puts_host_and_length_where_the_engine_does():
    template = [("accept", "*/*"), ("content-type", "application/json"), ("host", None), ("content-length", None)]
    assert fill_headers(template, "127.0.0.1:9", b"{}") == [
        ("accept", "*/*"), ("content-type", "application/json"), ("host", "127.0.0.1:9"), ("content-length", "2")]
    assert fill_headers(template, "127.0.0.1:9", None) == [
        ("accept", "*/*"), ("content-type", "application/json"), ("host", "127.0.0.1:9")]


def test_sampler_client_sends_exactly_the_given_headers_in_order(recorder):
    base_url, seen = recorder
    netloc = base_url.removeprefix("http://")
    wanted = [("accept", "*/*"), ("accept-encoding", "gzip, compress, deflate, br"), ("user-agent", "oha/1.16.0"),
              ("host", netloc)]
    with bare_client(base_url, 5, {}) as client:
        client.get("/api/static", headers=wanted)
    # none of httpx's own (python-httpx User-Agent, Connection); the others in the order given
    assert _but_host(seen[0][1]) == _but_host(wanted) and ("host", netloc) in seen[0][1]


def test_variants_are_checked_one_by_one_with_the_generator_headers(recorder):
    base_url, seen = recorder
    variants = [Variant(wl.Request("GET", f"/api/static?v={i}")) for i in range(3)]
    template = [("Host", None), ("User-Agent", "Grafana k6/1.1.0"), ("Content-Length", None)]
    failed, first = check_variants(base_url, "static", variants, template, 5)
    assert [path for path, _ in seen] == ["/api/static?v=0", "/api/static?v=1", "/api/static?v=2"]
    netloc = base_url.removeprefix("http://")
    assert all(h == [("Host", netloc), ("User-Agent", "Grafana k6/1.1.0")] for _, h in seen)
    assert failed == 3 and "timestamp 0 outside" in first  # the recorder's timestamp is 1970


def test_tx_sampler_sends_each_body_once(recorder, monkeypatch):
    import pgarena.verify.checks as checks

    monkeypatch.setattr(checks, "SAMPLE_INTERVAL_S", 0.01)
    base_url, seen = recorder
    bodies = [wl.tx_body(i, 1, 1, 0) for i in (11, 12)]
    sampler = AnswerSampler(base_url, "tx", [Variant(wl.tx_request(b)) for b in bodies],
                            [("Host", None), ("Content-Length", None), ("Content-Type", "application/json")], 5,
                            reuse=False)
    with sampler:  # two bodies, each sent once: wait until both were (bounded: a busy machine is slow)
        for _ in range(500):
            if len(sampler.samples) >= 2:
                break
            threading.Event().wait(0.01)
        threading.Event().wait(0.05)  # a third send, if the sampler wrongly repeated a body, would show here
    assert len(sampler.samples) == 2 and sampler.answered_2xx == 2 and sampler.unknown == 0
    checked, failed, first = sampler.judge()
    assert checked == failed == 2 and "abalance" in first  # the recorder does not answer like a tx
    assert [h for _, h in seen][0][1:] == [("Content-Length", str(len(bodies[0]))),
                                           ("Content-Type", "application/json")]


@pytest.fixture
def fake_binaries(monkeypatch):
    monkeypatch.setattr(OhaEngine, "locate", lambda self: Path("/opt/tools/oha"))
    monkeypatch.setattr(K6Engine, "locate", lambda self: Path("/opt/tools/k6"))


def test_oha_draws_urls_from_the_variants_file(fake_binaries, tmp_path):
    urls = tmp_path / "cell.urls"
    spec = LoadSpec(url="http://127.0.0.1:1/a?v=0", method="GET", connections=2, duration_s=1, timeout_s=1,
                    urls_file=urls)
    argv = OhaEngine().command(spec, tmp_path, "s")
    assert argv[-2:] == ["--urls-from-file", str(urls)]
    assert spec.url not in argv


def test_k6_draws_urls_from_a_shared_array(fake_binaries, tmp_path):
    urls = tmp_path / "cell.urls"
    spec = LoadSpec(url="http://127.0.0.1:1/a?v=0", method="GET", connections=2, duration_s=1, timeout_s=1,
                    urls_file=urls)
    argv = K6Engine().command(spec, tmp_path, "s")
    assert f"PGARENA_URLS_FILE={urls}" in argv
    script = Path(argv[-1]).read_text()
    assert "new SharedArray('urls'" in script and "PGARENA_EXPECT_ROWS" not in script


@pytest.mark.parametrize("engine_class", [OhaEngine, K6Engine])
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_engine_request_headers_are_what_the_real_binary_sends(engine_class, method, recorder, tmp_path):
    """Engine.request_headers (what the sampler copies) against one real request of the pinned binary."""
    engine = engine_class()
    try:
        engine.binary  # noqa: B018
    except EngineUnavailable as exc:
        pytest.skip(f"{engine.name} not installed: {exc}")
    base_url, seen = recorder
    body = b'{"aid":1,"tid":1,"bid":1,"delta":0}' if method == "POST" else None
    (tmp_path / "urls").write_text(f"{base_url}/api/static?v=1\n{base_url}/api/static?v=2\n")
    spec = LoadSpec(url=f"{base_url}/api/static", method=method, connections=1, duration_s=1, timeout_s=2,
                    body=body, content_type="application/json" if body else None,
                    urls_file=tmp_path / "urls" if method == "GET" else None)
    subprocess.run(engine.command(spec, tmp_path, "h"), capture_output=True, timeout=60, check=False)
    assert seen, f"{engine.name} sent nothing"
    netloc = base_url.removeprefix("http://")
    expected = fill_headers(engine.request_headers(spec), netloc, body)
    assert {tuple(_but_host(headers)) for _, headers in seen} == {tuple(_but_host(expected))}
    assert all(sorted(headers) == sorted(expected) for _, headers in seen)  # Host too, same spelling
    if method == "GET":
        assert {path for path, _ in seen} <= {"/api/static?v=1", "/api/static?v=2"}
