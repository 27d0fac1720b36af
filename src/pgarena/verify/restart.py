"""A stack restarted at another pool size (--pool-size 10,50), checked briefly before its cells are loaded.

The first start of a stack runs the whole verification (verification.py). A restart changes only the
PGARENA_POOL_* values it was given, so once its health path answers (the caller waits for that) one request
per workload is enough to show that the new process answers right: it is sent once and its answer judged
whole, value by value, against the answer computed from the database now (answers.judge_answer, as the
samplers under load do). Every cell then checks its own request variants before its load (load/measure.py).
A tx request changes one account the generator's bodies do not touch; no load runs meanwhile.
"""

from __future__ import annotations

import zlib
from collections.abc import Collection, Mapping

from pgarena.contract import workloads as wl
from pgarena.contract.answer import AnswerShape
from pgarena.db.expected import expected_perf_test
from pgarena.db.postgres import Database
from pgarena.verify.checks import check_variants
from pgarena.verify.variants import Variant, perf_test_values, read_variants, tx_sampler_bodies, tx_variants

HEADERS: list[tuple[str, str | None]] = [("Host", None), ("Content-Length", None)]
"""What the check sends besides a body's own Content-Type (Host and Content-Length filled per request)."""


def first_variant(db: Database, workload: str, parameter: int | None) -> Variant:
    """One request of the workload at `parameter` with the answer it must get (tx: on an account chosen from
    the workload's name, its balance read now)."""
    if workload == wl.TX:
        body = tx_sampler_bodies(1, zlib.crc32(b"pgarena restart check"), set())
        return tx_variants(db, body)[0]
    if workload == wl.PERF_TEST:
        assert parameter is not None
        values = perf_test_values(0)
        return Variant(wl.perf_test_request(parameter, values), expected_perf_test(db, parameter, values))
    return read_variants(db, workload, parameter)[0]


def check_after_restart(base_url: str, db: Database, workloads: Mapping[str, int | None], *, timeout_s: float,
                        routes: dict[str, str], known_wrong: Mapping[str, Collection[str]],
                        answer: AnswerShape | None = None) -> dict[str, str | None]:
    """Workload → None when its request (at the given parameter) was answered right, else why not. Columns in
    `known_wrong[workload]` were judged ❌ by the first start's verification and are not judged again;
    `answer` is the stack's declared answer shape (stack.toml [answer])."""
    problems: dict[str, str | None] = {}
    for workload, parameter in workloads.items():
        variant = first_variant(db, workload, parameter)
        content_type = variant.request.content_type
        headers = HEADERS + ([("Content-Type", content_type)] if content_type else [])
        failed, first = check_variants(base_url, workload, [variant], headers, timeout_s, routes,
                                       known_wrong.get(workload, ()), answer=answer)
        problems[workload] = first or ("answered wrongly" if failed else None)
    return problems
