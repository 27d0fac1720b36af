"""The envelope that ran: pool split, steady warm-up, flags, listen addresses, CPU pinning, PSS, stack order."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from pgarena.config.profiles import build_config
from pgarena.config.stackdef import Stack, parse_stack_toml
from pgarena.contract import flags as F
from pgarena.db.connections import pool_exceeded, pool_refusal, split_pool
from pgarena.db.postgres import Database
from pgarena.db.startline import shuffled
from pgarena.load.warmup import Warming, WindowResult, is_steady, warm_up
from pgarena.report.html import FLAG_MEANINGS
from pgarena.stack import launch
from pgarena.system.envelope import listen_addresses, pinned_to, process_affinity, wide_addresses
from pgarena.system.process import _preexec
from pgarena.system.resources import TreeSampler
from tests.conftest import PROJECT_DIR

METHODOLOGY = (PROJECT_DIR / "docs" / "methodology.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(("pool", "workers", "shares"), [
    (10, 3, [4, 3, 3]), (10, 1, [10]), (10, 4, [3, 3, 2, 2]), (7, 7, [1] * 7), (12, 4, [3, 3, 3, 3]),
])
def test_the_remainder_goes_to_the_first_workers(pool: int, workers: int, shares: list[int]) -> None:
    assert split_pool(pool, workers) == shares
    assert sum(split_pool(pool, workers)) == pool


def test_a_pool_per_worker_needs_a_connection_per_worker() -> None:
    assert pool_refusal(True, 10, 3) is None
    assert pool_refusal(False, 2, 4) is None  # one shared pool: any number of workers fits
    message = pool_refusal(True, 2, 4)
    assert message is not None and "4 workers" in message and "--pool-size 4" in message and "\n" not in message
    with pytest.raises(ValueError):
        split_pool(0, 1)


def test_stacks_receive_every_workers_share(tmp_path: Path) -> None:
    config = build_config(project_dir=tmp_path, overrides={"pool_size": 10, "workers": 3})
    db = Database(host="127.0.0.1", port=5432, user="u", password="p", name="d", admin_url="x", managed=True)
    stack = Stack(parse_stack_toml(PROJECT_DIR / "stacks" / "node-express-pg" / "stack.toml"),
                         PROJECT_DIR / "stacks" / "node-express-pg")
    values = launch.stack_values(config, db, stack, 8080)
    assert values["pool_sizes"] == "4,3,3" and values["pool_size_per_worker"] == "3"
    env = launch.stack_environment(values, {})
    assert env["PGARENA_POOL_SIZES"] == "4,3,3"


def test_stacks_that_fork_a_pool_per_worker_say_so() -> None:
    forking = {"bun-postgresjs", "node-express-pg", "node-express-postgresjs", "node-fastify-pg", "node-nestjs",
               "node-nextjs-postgresjs", "python-django", "python-fastapi-asyncpg", "python-fastapi-psycopg-async",
               "python-fastapi-psycopg-sync", "python-fastapi-psycopg-pgbouncer"}
    for sid in forking:
        assert parse_stack_toml(PROJECT_DIR / "stacks" / sid / "stack.toml").pool_per_worker, sid
    assert not parse_stack_toml(PROJECT_DIR / "stacks" / "go-nethttp-pgx" / "stack.toml").pool_per_worker


def test_python_worker_slots_hand_out_every_share(tmp_path: Path) -> None:
    """Three processes with one parent claim 4, 3 and 3 (stacks/python-*/pool_share.py)."""
    helper = PROJECT_DIR / "stacks" / "python-fastapi-asyncpg"
    code = (f"import sys, time; sys.path.insert(0, {str(helper)!r}); from pool_share import pool_share; "
            "print(pool_share(), flush=True); time.sleep(2)")
    env = {**os.environ, "PGARENA_POOL_SIZES": "4,3,3", "PGARENA_POOL_SIZE_PER_WORKER": "3",
           "PGARENA_PORT": str(os.getpid()), "TMPDIR": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
             for _ in range(3)]
    shares = sorted(int(p.stdout.readline()) for p in procs)  # type: ignore[union-attr]
    for p in procs:
        p.wait(timeout=30)
    assert shares == [3, 3, 4]


WEBFLUX = [120, 141, 171, 181, 259, 276, 345, 264, 248, 193, 289, 317]
"""java-spring-webflux-r2dbc's warm-up in a fresh-clone make bench: three slow windows made the median rule call it
steady; it went on from 397 to 1,324 2xx/s in the rounds."""


@pytest.mark.parametrize(("rps", "steady"), [
    ([100] * 10, True), ([100] * 9, False), ([100] * 5 + [104] * 5, True), ([100 * 1.02 ** i for i in range(10)], False),
    ([100] * 5 + [60] * 5, True),  # falling: more of the same load would not bring it back
    ([100] * 5 + [100, 100, 40, 100, 100], True), ([100] * 5 + [100, 100, 200, 100, 100], True),  # one spell
    ([80, 84, 88, 92, 96, 100, 104, 108, 112, 116], False),  # +4 % a window: its last three were within ±5 %
    ([20, 40, 60, 80, 100] + [100] * 5, False), (WEBFLUX, False), ([0] * 10, True), ([0] * 5 + [5] * 5, False),
])
def test_steady_means_the_robust_trend_of_the_last_ten_windows_rises_at_most_5_percent(
        rps: list[float], steady: bool) -> None:
    assert is_steady(rps) is steady


def test_the_probes_reading_takes_the_machines_speed_out_of_the_trend() -> None:
    """A machine slow for the first windows (the probe's unit time 30 % longer, the rate as much lower) is no climb;
    a stack climbing while the probe reads a steady machine still is one; without the probe's reading of every
    window of the span the rate is judged alone."""
    slow_then_not = [75.0] * 5 + [100.0] * 5
    units = [1300.0] * 5 + [1000.0] * 5
    assert not is_steady(slow_then_not) and is_steady(slow_then_not, units_ns=units)
    assert not is_steady([100 * 1.02 ** i for i in range(10)], units_ns=[1000.0] * 10)
    assert not is_steady(slow_then_not, units_ns=[None] + units[1:])
    assert not is_steady(slow_then_not, units_ns=units[1:]), "not aligned with the rates: not used"
    warming = Warming(minimum_s=1, cap_s=60)
    for rps, unit in zip(slow_then_not, units):
        warming.add(WindowResult(rps=rps, duration_s=1.0, answered_2xx=1), unit)
    record = warming.outcome().record
    assert warming.done and record.steady and record.windows_unit_ns == units
    assert Warming(minimum_s=1).outcome().record.windows_unit_ns == [], "no probe: nothing recorded"


def _windows(values: list[float]):
    seen = iter(values)

    def run(seconds: float) -> WindowResult:
        return WindowResult(rps=next(seen), duration_s=seconds, answered_2xx=int(seconds * 10))
    return run


def test_warm_up_stops_once_steady_and_after_the_minimum() -> None:
    out = warm_up(_windows([10, 50, 90, 100, 101] + [100] * 20), minimum_s=2, cap_s=60)
    n = len(out.record.windows_rps)
    assert out.record.steady and 10 < n < 16 and out.record.seconds == n and out.answered_2xx == 10 * n
    assert not is_steady(out.record.windows_rps[:-1]), "it stopped at the first steady window"
    longer = warm_up(_windows([100] * 20), minimum_s=13, cap_s=60)
    assert longer.record.steady and longer.record.seconds == 13


def test_warm_up_still_climbing_stops_at_the_cap_not_steady() -> None:
    out = warm_up(_windows([100 * 1.02 ** i for i in range(100)]), minimum_s=1, cap_s=30)
    assert not out.record.steady and out.record.seconds == 30 and len(out.record.windows_rps) == 30
    assert out.record.minimum_seconds == 1 and out.record.cap_seconds == 30


def test_warming_a_window_at_a_time_is_warm_up_and_lowers_a_minimum_above_the_cap() -> None:
    warming = Warming(minimum_s=90, cap_s=12)
    assert warming.minimum_s == 12 and not warming.done
    for value in [100] * 11:
        warming.add(WindowResult(rps=value, duration_s=1.0, answered_2xx=100))
        assert not warming.done, "steady from the 10th window, but the minimum is the cap's 12 s"
    warming.add(WindowResult(rps=100, duration_s=1.0, answered_2xx=100))
    assert warming.done and warming.outcome().record.steady and warming.outcome().answered_2xx == 1200


def test_pool_exceeded_is_an_invalid_flag_with_a_legend_and_a_documented_meaning() -> None:
    assert pool_exceeded(11, 10) and not pool_exceeded(10, 10) and not pool_exceeded(None, 10)
    assert F.POOL_EXCEEDED in F.INVALID and F.LISTENS_WIDE not in F.INVALID
    for flag in (F.POOL_EXCEEDED, F.LISTENS_WIDE):
        assert FLAG_MEANINGS.get(flag) and f"`{flag}`" in METHODOLOGY


def _listener(host: str) -> subprocess.Popen:
    code = ("import socket, sys, time; s = socket.socket(); s.bind((sys.argv[1], 0)); s.listen(); "
            "print(s.getsockname()[1], flush=True); time.sleep(30)")
    return subprocess.Popen([sys.executable, "-c", code, host], stdout=subprocess.PIPE, text=True)


@pytest.mark.parametrize(("host", "wide"), [("127.0.0.1", False), ("0.0.0.0", True)])
def test_listen_addresses_are_read_from_the_process_tree(host: str, wide: bool) -> None:
    proc = _listener(host)
    try:
        port = int(proc.stdout.readline())  # type: ignore[union-attr]
        addresses = listen_addresses(proc.pid)
        assert f"{host}:{port}" in addresses
        assert bool(wide_addresses(addresses, "127.0.0.1")) is wide
    finally:
        proc.kill()
        proc.wait()


def test_wide_addresses_include_ipv6_and_other_interfaces() -> None:
    assert wide_addresses(["127.0.0.1:80", "[::]:81", "10.0.0.2:82"]) == ["[::]:81", "10.0.0.2:82"]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to tell the sets apart")
def test_pgarena_pins_itself_but_pinned_children_keep_their_own_set() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    generator, server = cpus[:1], cpus[1:]
    before = os.sched_getaffinity(0)
    child = [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"]
    with pinned_to(generator) as now:
        assert now == generator and sorted(os.sched_getaffinity(0)) == generator
        inherited = subprocess.run(child, capture_output=True, text=True, check=True).stdout.strip()
        pinned = subprocess.run(child, capture_output=True, text=True, check=True,
                                preexec_fn=_preexec(server)).stdout.strip()
        assert inherited == str(generator) and pinned == str(server)
        assert process_affinity(os.getpid()) == generator
        seen: list[list[int]] = []
        thread = threading.Thread(target=lambda: seen.append(sorted(os.sched_getaffinity(0))))  # a sampler thread
        thread.start()
        thread.join()
        assert seen == [generator]
    assert os.sched_getaffinity(0) == before


def test_tree_memory_is_pss_and_pss_counts_shared_pages_once() -> None:
    """Four forked children share their parent's pages: summed PSS stays well below summed RSS."""
    code = ("import os, time\nblob = bytearray(64 * 2**20)\nfor i in range(len(blob) // 4096): blob[i * 4096] = 1\n"
            "for _ in range(4):\n    if os.fork() == 0:\n        time.sleep(30)\n        os._exit(0)\n"
            "print('ready', flush=True)\ntime.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"  # type: ignore[union-attr]
        time.sleep(0.3)
        with TreeSampler({"stack": proc.pid}, interval_s=0.05) as sampler:
            time.sleep(0.2)
        usage = sampler.usage["stack"]
        assert usage.pss_peak_bytes is not None
        assert usage.rss_peak_bytes > 4 * 64 * 2**20  # RSS counts the shared 64 MiB in every process
        assert usage.pss_peak_bytes < usage.rss_peak_bytes / 2
    finally:
        for child in psutil.Process(proc.pid).children():
            child.kill()
        proc.kill()
        proc.wait()


def test_the_stack_order_is_shuffled_by_a_recorded_seed() -> None:
    ids = [f"s{i}" for i in range(8)]
    assert shuffled(ids, 7) == shuffled(ids, 7) and sorted(shuffled(ids, 7)) == ids
    assert shuffled(ids, 7) != shuffled(ids, 8) or shuffled(ids, 7) != ids
    assert shuffled(ids, None) == ids


def test_a_socket_bound_but_not_listening_is_not_listed() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        assert listen_addresses(os.getpid()) == []  # bound but not listening


def test_profiles_cap_the_warmup_and_a_seed_is_kept(tmp_path: Path) -> None:
    assert build_config(profile="quick", project_dir=tmp_path).warmup_cap_s == 15
    assert build_config(profile="standard", project_dir=tmp_path).warmup_cap_s == 60
    config = build_config(project_dir=tmp_path, overrides={"seed": 42, "warmup_cap_s": 5})
    assert config.seed == 42 and config.warmup_cap_s == 5 and config.redacted()["seed"] == 42


def test_the_ipv4_mapped_loopback_of_a_dual_stack_jvm_is_not_wide() -> None:
    mapped = ["[::ffff:127.0.0.1]:8080", "::ffff:127.0.0.1:8081"]
    assert wide_addresses(mapped, "127.0.0.1") == []
    assert wide_addresses(["[::ffff:10.0.0.2]:8080", "[::1]:8081"], "127.0.0.1") == ["[::ffff:10.0.0.2]:8080",
                                                                                       "[::1]:8081"]
