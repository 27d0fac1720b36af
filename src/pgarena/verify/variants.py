"""The requests a cell's load draws from, and their expected answers, computed before the load.

A load of one repeated URL is served perfectly by a response cache, so each workload is driven with a
set of distinct requests that the contract allows (docs/methodology.md, "Request variants"):

- perf-test: PERF_TEST_VARIANTS parameter sets (variant 0 is the seed's); `_records` stays the cell's
  parameter, so every answer still has that many rows;
- users: 1 variant — the contract's only parameter is `limit`, which is the cell's parameter (there is
  no offset or start id to vary);
- static, graphql, graphql-nested and users-posts: 1 variant (nothing to vary; graphql's query is seed
  002's, the nested ones the contract's load request);
- tx: the random bodies of the cell's bodies file (TX_BODIES_PER_FILE of them).

The generator picks one variant at random for each request (oha `--urls-from-file`, k6 a SharedArray).
The expected answer of every variant comes from PostgreSQL before the warm-up, so judging a sampled
answer under load costs the stack nothing.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pgarena.contract import workloads as wl
from pgarena.db.expected import expected_answer, expected_perf_test, expected_users, expected_users_posts
from pgarena.db.postgres import Database

PERF_TEST_VARIANTS = 64
"""Distinct perf-test parameter sets per cell."""
_OFFSETS = ("Z", "+02:00", "-05:30", "+09:45")


def _micros(index: int) -> str:
    """Six digits of microseconds for variant `index`, never a whole millisecond (the last three digits are
    1..999), so cutting them to milliseconds always changes the value."""
    return f"{(7919 * index) % 1000:03d}{1 + (104_729 * index) % 999:03d}"


@dataclass(frozen=True)
class Variant:
    """One request of a cell's load and the answer it must get (None where it cannot be predicted)."""

    request: wl.Request
    expected: Any = None


def perf_test_values(index: int) -> dict[str, str]:
    """The 15 value parameters of perf-test variant `index` (0: the seed's values).

    Every variant is valid for its SQL type and differs in every parameter; bigints stay above 2^53 so a
    stack that rounds them through a double is still caught, and both timestamps carry microseconds that
    no millisecond rounds to (`_micros`), so a stack that cuts time values to milliseconds is too.
    """
    if index == 0:
        return dict(wl.SEED_PERF_TEST_VALUES)
    day = dt.date(2024, 1, 15) + dt.timedelta(days=index)
    return {
        "_text": f"variant {index} — ünïcode ✓ & \"quoted\"",
        "_int": str(1000 * index - 31_000),
        "_bigint": str(9_100_000_000_000_000_000 + 1_000_003 * index),
        "_numeric": f"{index}.{index:04d}",
        "_real": f"{index}.25",
        "_double": f"{index * 1000}.125",
        "_bool": "true" if index % 2 else "false",
        "_date": day.isoformat(),
        "_timestamp": f"{day.isoformat()}T{index % 24:02d}:{index % 60:02d}:{(7 * index) % 60:02d}.{_micros(index)}",
        "_timestamptz": f"{day.isoformat()}T10:30:00.{_micros(index + PERF_TEST_VARIANTS)}"
                        f"{_OFFSETS[index % len(_OFFSETS)]}",
        "_uuid": f"00000000-0000-4000-8000-{index:012d}",
        "_json": json.dumps({"variant": index, "list": [index, "x"]}, separators=(",", ":")),
        "_jsonb": json.dumps({"variant": index, "key": "v"}, separators=(",", ":")),
        "_int_array": f"{{{index},{-index},{7 * index}}}",
        "_text_array": f'{{v{index},"w {index}"}}',
    }


def requests_for(workload: str, parameter: int | None) -> list[wl.Request]:
    """The distinct requests of a read workload's cell (tx: see `tx_sampler_bodies`)."""
    if workload == wl.PERF_TEST:
        assert parameter is not None
        return [wl.perf_test_request(parameter, perf_test_values(i)) for i in range(PERF_TEST_VARIANTS)]
    return [wl.load_request(workload, parameter)]


def read_variants(db: Database, workload: str, parameter: int | None) -> list[Variant]:
    """The variants of a read workload's cell with their expected answers from the database
    (static and perf-minimal: None — the answer's timestamp is judged against the clock)."""
    if workload == wl.PERF_TEST:
        assert parameter is not None
        return [Variant(wl.perf_test_request(parameter, perf_test_values(i)),
                        expected_perf_test(db, parameter, perf_test_values(i))) for i in range(PERF_TEST_VARIANTS)]
    if workload == wl.USERS:
        assert parameter is not None
        return [Variant(wl.users_request(parameter), expected_users(db, parameter))]
    if workload == wl.GRAPHQL:
        rows = expected_users(db, wl.GRAPHQL_LIMIT)
        expected = [{field: row[column] for field, (column, _) in wl.GRAPHQL_FIELDS.items()} for row in rows]
        return [Variant(wl.graphql_request(), expected)]
    if workload in wl.NESTED_LISTS:
        return [Variant(wl.load_request(workload, parameter),
                        expected_users_posts(db, wl.NESTED_LIMIT, wl.NESTED_POSTS_LIMIT))]
    if workload in wl.SCENARIOS:  # perf-minimal: None, its ts is judged against the clock like static's
        return [Variant(wl.load_request(workload, parameter), expected_answer(db, workload, parameter))]
    return [Variant(wl.static_request())]


def write_urls_file(path: Path, base_url: str, routes: dict[str, str], requests: list[wl.Request]) -> Path:
    """One absolute URL per line (the stack's routes applied), for the generator to pick from."""
    path.write_text("".join(base_url + wl.routed(r.path, routes) + "\n" for r in requests), encoding="utf-8")
    return path


def tx_aids(bodies: list[bytes]) -> set[int]:
    """The accounts a list of tx bodies touches."""
    return {json.loads(body)["aid"] for body in bodies}


def tx_sampler_bodies(count: int, seed: int, avoid_aids: set[int]) -> list[bytes]:
    """`count` tx bodies on distinct accounts that no body in `avoid_aids` (the generator's) touches,
    so each sampled answer's balance is predictable: the balance before the window plus its delta."""
    rng = random.Random(seed)
    low, high = wl.TX_RANGES["aid"]
    used = set(avoid_aids)
    bodies = []
    while len(bodies) < count:
        aid = rng.randint(low, high)
        if aid in used:
            continue
        used.add(aid)
        tid, bid, delta = (rng.randint(*wl.TX_RANGES[f]) for f in ("tid", "bid", "delta"))
        bodies.append(wl.tx_body(aid, tid, bid, delta))
    return bodies


def tx_variants(db: Database, bodies: list[bytes]) -> list[Variant]:
    """The sampler's tx requests with their expected `abalance`, read from the database now."""
    fields = [json.loads(body) for body in bodies]
    with db.connect() as conn:
        balances = dict(conn.execute("SELECT aid, abalance FROM pgbench_accounts WHERE aid = ANY(%s)",
                                     [[f["aid"] for f in fields]]).fetchall())
    return [Variant(wl.tx_request(body), {"abalance": balances[f["aid"]] + f["delta"]} if f["aid"] in balances
                    else None) for body, f in zip(bodies, fields)]
