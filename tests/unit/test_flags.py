"""Saturation flags on crafted samples (pgarena.contract.flags)."""

from __future__ import annotations

import math

import pytest

from pgarena.contract.flags import (
    DATABASE_BOUND,
    DATABASE_BOUND_DB_CPU_FRACTION,
    DATABASE_BOUND_STACK_CPU_FRACTION,
    GENERATOR_BOUND,
    GENERATOR_BOUND_CPU_FRACTION,
    TIMEOUTS,
    saturation_flags,
)


def test_thresholds_are_the_documented_ones() -> None:
    assert GENERATOR_BOUND_CPU_FRACTION == 0.90
    assert DATABASE_BOUND_DB_CPU_FRACTION == 0.90
    assert DATABASE_BOUND_STACK_CPU_FRACTION == 0.50
    assert (GENERATOR_BOUND, DATABASE_BOUND, TIMEOUTS) == ("generator-bound", "database-bound", "timeouts")


@pytest.mark.parametrize(("generator", "db", "stack", "timeouts", "expected"), [
    # a healthy cell: the stack was the limit
    (0.40, 0.30, 0.65, 0, []),
    # the generator saturated its core (k6 on the cheapest cells)
    (0.97, 0.10, 0.80, 0, ["generator-bound"]),
    (0.90, 0.10, 0.80, 0, []),  # exactly 90 % is not above 90 %
    (0.9001, 0.10, 0.80, 0, ["generator-bound"]),
    (1.03, 0.10, 0.80, 0, ["generator-bound"]),  # sampling can overshoot 1.0
    # PostgreSQL busy, the stack mostly waiting on it
    (0.30, 0.95, 0.04, 0, ["database-bound"]),
    (0.30, 0.90, 0.04, 0, []),  # exactly 90 %
    (0.30, 0.95, 0.50, 0, []),  # the stack used exactly 50 %: not < 50 %
    (0.30, 0.95, 0.49, 0, ["database-bound"]),
    (0.30, 0.95, 0.70, 0, []),  # both busy (over-committed server set): not the database alone
    # timeouts, whatever the CPUs did
    (0.10, 0.10, 0.10, 1, ["timeouts"]),
    (0.10, 0.10, 0.10, 250, ["timeouts"]),
    # everything at once, in the documented order
    (0.99, 0.99, 0.01, 3, ["generator-bound", "database-bound", "timeouts"]),
])
def test_saturation_flags_on_crafted_samples(generator: float, db: float, stack: float, timeouts: int,
                                             expected: list[str]) -> None:
    assert saturation_flags(generator, db, stack, timeouts) == expected


def test_unmeasured_fractions_raise_no_flag() -> None:
    assert saturation_flags(None, None, None, 0) == []
    assert saturation_flags(None, 0.99, None, 0) == []  # database-bound needs the stack's share too
    assert saturation_flags(None, None, 0.01, 0) == []
    assert saturation_flags(0.95, None, None, 2) == ["generator-bound", "timeouts"]


@pytest.mark.parametrize("args", [(-0.1, 0.5, 0.5, 0), (0.5, math.nan, 0.5, 0), (0.5, 0.5, -1.0, 0),
                                  (0.5, 0.5, 0.5, -1)])
def test_invalid_samples_are_refused(args: tuple[float, float, float, int]) -> None:
    with pytest.raises(ValueError):
        saturation_flags(*args)


def test_generator_bound_when_the_request_rate_reaches_the_measured_headroom() -> None:
    """Issue 10 item 7: a cell asking as fast as the generator can (≥ 90 % of its headroom) measured the
    generator, even when its CPU figure stayed below 90 %."""
    from pgarena.contract.flags import GENERATOR_BOUND_HEADROOM_FRACTION, INVALID

    assert GENERATOR_BOUND_HEADROOM_FRACTION == 0.90
    assert saturation_flags(0.5, None, None, 0, requests_per_second=9_000, headroom_rps=10_000) == [GENERATOR_BOUND]
    assert saturation_flags(0.5, None, None, 0, requests_per_second=8_999, headroom_rps=10_000) == []
    assert saturation_flags(0.5, None, None, 0, requests_per_second=9_000, headroom_rps=None) == []
    assert GENERATOR_BOUND in INVALID, "generator-bound cells are not ranked"
