"""Toxiproxy's pure parts: the pinned install's paths and command, toxic bodies, the RTT split, the
overhead summary (pgarena.system.toxiproxy). The server itself is exercised in tests/integration."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pgarena.load.engines.base import tool_cache_dir
from pgarena.system import toxiproxy, toxiproxy_install
from pgarena.system.toxiproxy import Toxiproxy, join_host_port, rtt_split_ms, toxic_body
from pgarena.system.toxiproxy_install import ToxiproxyUnavailable
from pgarena.system.toxiproxy_overhead import percentile, summarize_round_trips


def test_default_cache_dir_is_the_tool_cache_of_the_load_engines(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert toxiproxy_install.default_cache_dir() == tool_cache_dir() == tmp_path / "pgarena" / "tools"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert toxiproxy_install.default_cache_dir() == tool_cache_dir()


def test_install_paths_name_the_pinned_version(tmp_path):
    assert toxiproxy_install.install_dir(tmp_path) == tmp_path / f"toxiproxy-{toxiproxy_install.TOXIPROXY_VERSION}"
    assert toxiproxy_install.binary_path(tmp_path) == tmp_path / "toxiproxy-2.5.0" / "bin" / "server"


def test_install_command_pins_the_module_version_and_stamps_it():
    argv = toxiproxy_install.install_command("/usr/local/go/bin/go")
    assert argv[:2] == ["/usr/local/go/bin/go", "install"]
    assert argv[-1] == "github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0"
    assert "-ldflags=-X github.com/Shopify/toxiproxy/v2.Version=2.5.0" in argv
    hint = toxiproxy_install.install_hint(Path("/cache"))
    assert hint.startswith("GOBIN=/cache/toxiproxy-2.5.0/bin go install ")


def test_locate_finds_only_an_executable_in_the_cache(tmp_path):
    assert toxiproxy_install.locate(tmp_path) is None
    binary = toxiproxy_install.binary_path(tmp_path)
    binary.parent.mkdir(parents=True)
    binary.write_bytes(b"#!/bin/sh\n")
    assert toxiproxy_install.locate(tmp_path) is None  # not executable
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    assert toxiproxy_install.locate(tmp_path) == binary
    assert toxiproxy_install.install(cache_dir=tmp_path) == binary  # installed: no build


def test_install_without_go_says_how(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ToxiproxyUnavailable, match="Go is not on PATH.*go install"):
        toxiproxy_install.install(cache_dir=tmp_path)
    assert not toxiproxy_install.install_dir(tmp_path).exists()


def test_a_failed_build_leaves_no_binary_and_shows_the_log(monkeypatch, tmp_path):
    fake_go = tmp_path / "go"
    fake_go.write_text("#!/bin/sh\necho 'go: module lookup disabled' >&2\nexit 1\n")
    fake_go.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    cache = tmp_path / "cache"
    with pytest.raises(ToxiproxyUnavailable, match="(?s)exit code 1.*module lookup disabled"):
        toxiproxy_install.install(cache_dir=cache)
    assert toxiproxy_install.locate(cache) is None
    assert sorted(p.name for p in toxiproxy_install.install_dir(cache).iterdir()) == ["install.log"]


def test_a_successful_build_is_moved_into_place(monkeypatch, tmp_path):
    fake_go = tmp_path / "go"
    fake_go.write_text('#!/bin/sh\nprintf "#!/bin/sh\\n" > "$GOBIN/server"; chmod +x "$GOBIN/server"\n')
    fake_go.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    cache = tmp_path / "cache"
    assert toxiproxy_install.install(cache_dir=cache) == toxiproxy_install.binary_path(cache)
    assert sorted(p.name for p in toxiproxy_install.install_dir(cache).iterdir()) == ["bin", "install.log"]


@pytest.mark.parametrize(("rtt_ms", "split"), [(0, (0, 0)), (1, (1, 0)), (2, (1, 1)), (4, (2, 2)), (5, (3, 2)),
                                               (4.0, (2, 2)), (100, (50, 50))])
def test_rtt_split_sums_to_the_rtt_in_whole_ms(rtt_ms, split):
    assert rtt_split_ms(rtt_ms) == split
    assert sum(split) == rtt_ms


@pytest.mark.parametrize("rtt_ms", [0.5, 2.25, -1, float("nan"), float("inf")])
def test_rtt_split_refuses_what_the_latency_toxic_cannot_do(rtt_ms):
    with pytest.raises(ValueError):
        rtt_split_ms(rtt_ms)


def test_toxic_body_is_toxiproxys_json():
    assert toxic_body("latency", "upstream", {"latency": 2, "jitter": 0}, name="pgarena_rtt_upstream") == {
        "name": "pgarena_rtt_upstream", "type": "latency", "stream": "upstream", "toxicity": 1.0,
        "attributes": {"latency": 2, "jitter": 0}}
    assert toxic_body("reset_peer", "downstream", {"timeout": 0}, toxicity=0.5)["name"] == "reset_peer_downstream"


@pytest.mark.parametrize(("stream", "toxicity"), [("both", 1.0), ("Upstream", 1.0), ("upstream", 1.5)])
def test_toxic_body_refuses_bad_streams_and_toxicity(stream, toxicity):
    with pytest.raises(ValueError):
        toxic_body("timeout", stream, {"timeout": 0}, toxicity=toxicity)


def test_toxiproxy_without_a_binary_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(ToxiproxyUnavailable, match="not installed: GOBIN="):
        Toxiproxy(log_path=tmp_path / "log")


def test_server_argv_runs_behind_the_prefix(tmp_path):
    server = Toxiproxy(Path("/opt/server"), log_path=tmp_path / "log", host="10.0.0.2",
                       prefix=["ip", "netns", "exec", "ns1"])
    assert server.argv(8474) == ["ip", "netns", "exec", "ns1", "/opt/server", "-host", "10.0.0.2", "-port", "8474"]


def test_join_host_port_brackets_ipv6():
    assert join_host_port("127.0.0.1", 5) == "127.0.0.1:5"
    assert join_host_port("::1", 5) == "[::1]:5"


def test_percentile_interpolates_between_order_statistics():
    values = list(range(1, 101))  # 1..100
    assert percentile(values, 0.5) == pytest.approx(50.5)
    assert percentile(values, 0.99) == pytest.approx(99.01)
    assert percentile([7], 0.99) == 7


def test_overhead_summary_subtracts_direct_from_proxied():
    direct = [50_000] * 98 + [80_000, 90_000]  # ns
    proxied = [150_000] * 98 + [400_000, 500_000]
    result = summarize_round_trips(direct, proxied, cpu_seconds=0.002, payload_bytes=64)
    assert result.round_trips == 100
    assert result.direct_median_us == 50 and result.proxied_median_us == 150
    assert result.added_median_us == 100
    assert result.added_p99_us == pytest.approx(percentile([150] * 98 + [400, 500], 0.99)
                                                - percentile([50] * 98 + [80, 90], 0.99))
    assert result.cpu_us_per_round_trip == pytest.approx(20.0)
    assert set(result.as_dict()) >= {"added_median_us", "added_p99_us", "cpu_us_per_round_trip", "round_trips"}


def test_overhead_summary_needs_pairs():
    with pytest.raises(ValueError):
        summarize_round_trips([], [], cpu_seconds=0, payload_bytes=1)
    with pytest.raises(ValueError):
        summarize_round_trips([1, 2], [1], cpu_seconds=0, payload_bytes=1)
