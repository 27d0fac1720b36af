"""The one source of truth for defaults and limits of a run, and the default CPU envelope.

Profiles (profiles.py) and the run configuration (run.py) take their defaults from here; the CLI shows them
as its options' defaults.
"""

from __future__ import annotations

import os
import re
from typing import Literal

from pgarena.contract.workloads import WORKLOAD_NAMES

DEFAULT_MAX_ERROR_RATE = 0.01
"""A level whose failed-request share exceeds 1 % breaks the SLO (the same line as the `failures>1%` flag)."""

DEFAULT_ENGINE = "oha"
"""The load generator of a run that names none (--engine)."""
DEFAULT_SCHEDULE = "interleaved"
"""All stacks up together, measured in rounds of a fresh random order (--schedule)."""
DEFAULT_CEILING_SECONDS = 2
"""Seconds of each of the database ceiling's pgbench runs (ceiling.py: 3 runs per workload × parameter ×
round trip × connections, after a 1 s warm-up)."""
DEFAULT_MAX_REWARM_S = 2.0
"""Interleaved runs re-warm a stack before each measured window for the warm-up, but at most this long."""
DEFAULT_WARMUP_CAP_S = 60.0
"""The longest warm-up of one cell (warmup.py); a stack still changing then is recorded as not steady."""
DEFAULT_HEADLINE_SHARE = 1 / 3
"""With a time budget and phases after the headline that are not forecast (SLO searches, several pool sizes), the
headline's rounds get at least this share of the time left when they start."""
DEFAULT_POOL_SIZE = 10
"""Database connections per stack, all its processes together (--pool-size)."""
MAX_POOL_SIZE = 10_000
"""The largest pool size pgarena takes: the managed cluster's max_connections is raised to cover every pool
(stacks up together × the largest pool), and a PostgreSQL backend is a process with its own memory."""
DEFAULT_HTTP_TIMEOUT_S = 10.0
"""Seconds before a request counts as timed out (--http-timeout)."""
DEFAULT_WORKLOADS = WORKLOAD_NAMES
"""Every workload of the contract (--workloads)."""

PERF_TEST_MAX_ROWS = 1000
"""Largest `_records` a stack must serve (docs/contract.md)."""
USERS_MAX_LIMIT = 10000
"""Largest `limit` a stack must serve (docs/contract.md); the table has this many rows."""

Engine = Literal["oha", "k6"]
"""The load generators pgarena drives."""
FaultName = Literal["pg-restart", "terminate", "stall", "reset"]
"""The resilience faults (pipeline/resilience.py)."""
DEFAULT_OPEN_CONNECTIONS = 100
"""Open model: the most requests in flight at once (oha connections, k6 VUs), seed 000's top VU level."""
RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,99}")
"""A run id is one plain folder name inside the results folder: no '/', no '..', not hidden, ≤ 100 characters."""
DEFAULT_SLO_P99_MS = 50.0
"""The default SLO of the max-sustainable-throughput search: p99 at most 50 ms and < 1 % errors."""
K6_MIN_WINDOW_S = 1.0
"""k6's constant-VUs executor refuses shorter durations."""
MAX_GENERATORS = 64
"""Most k6 processes per window (--generators)."""
DEFAULT_WIRE_LOAD_S = 3.0
"""--wire-under-load: seconds of load through the wire observer per workload (--wire-load-seconds)."""
MAX_WIRE_LOAD_S = 60.0
"""The longest of those windows: the second start's load is a sample, not a measurement."""
DEFAULT_WIRE_LOAD_MAX_REQUESTS = 10_000
"""--wire-under-load: most requests of one such window (--wire-load-requests): the generator's arrival rate is
this over the window, so the observer's counters (one entry per distinct statement text: a simple-protocol driver
sends its values inside the text) stay bounded."""


def default_cpu_sets() -> tuple[list[int], list[int]]:
    """(generator CPUs, server CPUs): the first allowed CPU drives load, the rest run stack + PostgreSQL.

    On a one-CPU machine both share it (the run records that, and the report says so).
    """
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return cpus, cpus
    return cpus[:1], cpus[1:]
