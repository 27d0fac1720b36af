"""Saturation flags of a cell: was the measured figure limited by the stack, or by something else?

A throughput number only ranks stacks when the stack was the bottleneck. These flags say when it may
not have been (docs/methodology.md, "Flags"). CPU fractions are CPU seconds used during the measured
window divided by (window seconds × CPUs in the relevant CPU set), so 1.0 is the whole set busy; sampled
values may slightly exceed 1.0.
"""

from __future__ import annotations

import math

FAILURES = "failures>1%"
"""More than 1 % of requests failed: the cell is invalid and not ranked."""
NOISY = "noisy"
"""The RPS confidence interval ended wider than the target: more rounds (repetitions) would have helped.
It does not hide a rank: a noisy cell is ranked wherever its interval is clear of its neighbours."""
DROPPED = "dropped>1%"
"""Open model: more than 1 % of the offered requests were not completed in the window (invalid)."""
CHECKS_FAILED = "checks-failed>1%"
"""The answers sampled under load show more than 1 % wrong: the one-sided exact binomial test of "at most
1 % wrong" rejects at level 1 % (load/summary.py, CHECKS_TEST_LEVEL) — on the few answers sampled, the
observed share alone would invalidate honest stacks by chance (invalid)."""
QUERIES_WRONG = "queries-wrong"
"""The database did not see the workload's statements for the answers (a cache or an N+1), at
verification or in a measured window (windowcheck.py): invalid."""
VARIANTS_WRONG = "variants-wrong"
"""A request variant of the cell was answered wrongly when checked before the load (invalid)."""
POOL_EXCEEDED = "pool-exceeded"
"""The stack held more database connections than PGARENA_POOL_SIZE (pg_stat_activity): not the envelope the
report states, so the cell is invalid."""
LISTENS_WIDE = "listens-wide"
"""A stack flag: it listened on an address other than the loopback address it was given."""
GENERATOR_BOUND = "generator-bound"
"""The load generator, not the stack, may have been the limit: the cell measured the generator."""
INVARIANTS_BROKEN = "invariants-broken"
"""A tx cell lost, duplicated or half-applied writes (invalid)."""
QUERIES_WRONG = "queries-wrong"
"""The database accounting found a cache or an N+1: the stack skipped (or multiplied) the work (invalid)."""
COLUMNS_WRONG = "columns-wrong"
"""The stack's answers have ❌ columns: it answered every request from the database, but some values are
not exact. Ranked among all stacks, not among the stacks whose answers are exact."""
DEMONSTRATION = "demonstration"
"""The stack does not compete (its stack.toml says `competes = false`): a mistake kept on purpose to show
what it costs (e.g. a blocking driver inside async handlers). Shown beside the others, never ranked."""
INVALID = (FAILURES, DROPPED, CHECKS_FAILED, INVARIANTS_BROKEN, QUERIES_WRONG, VARIANTS_WRONG, GENERATOR_BOUND,
           POOL_EXCEEDED)
"""Flags that make a cell's figures not comparable: such cells are shown but never ranked."""
CONTENT_TYPE_WRONG = "content-type-wrong"
"""The stack's answers hold the right JSON but not `Content-Type: application/json` (e.g. no header at all):
loaded and measured, ranked among all stacks only, like ❌ columns."""
CONTENT_TYPE = "content-type"
"""The name under which a wrong content type is passed with the ❌ columns not judged again under load."""
ANSWER_MAPPED = "answer-mapped"
"""The stack's row answers come in a shape its stack.toml `[answer]` declares (an envelope, camelCase keys),
which pgarena undid before judging the values (contract/answer.py): loaded and measured, ranked among all
stacks only, like ❌ columns."""
DB_UNCHECKED = "db-unchecked"
"""The database could not be checked (pg_stat_statements unreadable: `--database-url` without
pg_read_all_stats, or ingested generator outputs), so nothing shows that the cell's answers came from the
database rather than a cache: loaded and measured, ranked among all stacks only with this flag, never
among the verified ones as if it had been checked (issue 22)."""
PIPELINES_ACROSS_REQUESTS = "pipelines-across-requests"
"""The wire observer saw the stack put statements of several concurrent requests into one flight to
PostgreSQL (pipelining or batching across requests, verify/wire.py): it does work the others cannot, so it is
ranked among all stacks only, never among those that send one request's statements at a time (TechEmpower
stratifies its database results the same way)."""
INEXACT = (COLUMNS_WRONG, CONTENT_TYPE_WRONG, ANSWER_MAPPED, DB_UNCHECKED, PIPELINES_ACROSS_REQUESTS)
"""Flags of a valid cell whose answers are not all exact, or not verified against the database, or that
pipelines across requests: ranked among all stacks only."""
ABOVE_CEILING = "above-db-ceiling"
"""The cell's 2xx/s was above the database ceiling measured under its conditions (pgbench alone, ceiling.py):
no stack can beat the database it waits on, so one of the two measurements is wrong (a noisy ceiling, a
disturbed window, or answers not from the database). Not ranked away (window accounting judges caching), but
the ceiling share beside it is a measurement problem, not a finding."""
DATABASE_BOUND = "database-bound"
TIMEOUTS = "timeouts"

GENERATOR_BOUND_CPU_FRACTION = 0.90
"""The load generator's CPU set was more than 90 % busy over the measured windows (the generator, and what
shares those CPUs with it: pgarena's own samplers and pollers, Toxiproxy): the generator, not the stack,
may be the limit."""
GENERATOR_BOUND_HEADROOM_FRACTION = 0.90
"""... or the cell's request rate (every request, answered or not) reached 90 % of the generator's
measured headroom (its rate against a trivial endpoint, headroom.py): the stack answered about as fast as
the generator can ask."""
DATABASE_BOUND_DB_CPU_FRACTION = 0.90
"""PostgreSQL used more than 90 % of the server CPU set ..."""
DATABASE_BOUND_STACK_CPU_FRACTION = 0.50
"""... while the stack used less than 50 % of it: the database, not the stack, is the limit, so the cell
compares PostgreSQL (and the queries the stack sends) more than the stack itself."""


def _check(name: str, value: float | None) -> None:
    if value is not None and (math.isnan(value) or value < 0):
        raise ValueError(f"{name} must be a non-negative number or None, got {value}")


def saturation_flags(generator_cpu_fraction: float | None, db_cpu_fraction: float | None,
                     stack_cpu_fraction: float | None, timeouts: int, *,
                     requests_per_second: float | None = None, headroom_rps: float | None = None) -> list[str]:
    """The saturation flags of one cell, in this order when present:

    - "generator-bound" (invalid: not ranked): generator_cpu_fraction > GENERATOR_BOUND_CPU_FRACTION
      (0.90) of the generator's CPU set (the caller passes the set's whole busy share: the generator plus
      pgarena's own process and Toxiproxy, which share those CPUs — load/summary.py), or `requests_per_second` (every completed request per second)
      ≥ GENERATOR_BOUND_HEADROOM_FRACTION (0.90) × `headroom_rps` (the generator's measured headroom,
      None when it was not measured);
    - "database-bound": db_cpu_fraction > DATABASE_BOUND_DB_CPU_FRACTION (0.90) of the server CPU set and
      stack_cpu_fraction < DATABASE_BOUND_STACK_CPU_FRACTION (0.50) of the same set;
    - "timeouts": timeouts > 0 (requests that hit the HTTP timeout, over all repetitions).

    Thresholds are strict: exactly 0.90 is not bound, exactly 0.50 stack CPU is not "< 50 %". A fraction
    that was not measured is None and raises no flag (database-bound needs both fractions). Negative or
    NaN fractions and negative timeouts raise ValueError.
    """
    _check("generator_cpu_fraction", generator_cpu_fraction)
    _check("db_cpu_fraction", db_cpu_fraction)
    _check("stack_cpu_fraction", stack_cpu_fraction)
    if timeouts < 0:
        raise ValueError(f"timeouts must be >= 0, got {timeouts}")
    flags: list[str] = []
    near_headroom = (requests_per_second is not None and headroom_rps is not None and headroom_rps > 0
                     and requests_per_second >= GENERATOR_BOUND_HEADROOM_FRACTION * headroom_rps)
    if (generator_cpu_fraction is not None and generator_cpu_fraction > GENERATOR_BOUND_CPU_FRACTION) or near_headroom:
        flags.append(GENERATOR_BOUND)
    if (db_cpu_fraction is not None and stack_cpu_fraction is not None
            and db_cpu_fraction > DATABASE_BOUND_DB_CPU_FRACTION
            and stack_cpu_fraction < DATABASE_BOUND_STACK_CPU_FRACTION):
        flags.append(DATABASE_BOUND)
    if timeouts > 0:
        flags.append(TIMEOUTS)
    return flags
