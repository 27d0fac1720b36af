"""The reference probe's window reading (pgarena.system.speedprobe): which samples count and their median."""

from __future__ import annotations

import pytest

from pgarena.results.models import Repetition
from pgarena.system.resources import CpuMeters
from pgarena.system.speedprobe import (
    GAP_BEGINS,
    GAP_MARGIN_NS,
    GAP_MAX_NS,
    LOAD_BEGINS,
    MIN_SAMPLES,
    UNIT_ARRAY_BYTES,
    UNIT_ITERATIONS,
    UNIT_SYSCALLS,
    ProbeReading,
    SpeedProbe,
    UnitOfWork,
    _pause,
    parse_line,
    reading_between,
    real_time,
)

MS = 1_000_000


def _samples(cpu_ns: list[int], *, every_ms: int = 100, first_ms: int = 0) -> tuple[list[int], list[int]]:
    return [(first_ms + i * every_ms) * MS for i in range(len(cpu_ns))], cpu_ns


def test_the_reading_is_the_mean_of_the_units_started_inside_the_window_slow_ones_included():
    times, cpu = _samples([900, 500, 510, 2_960, 520, 530, 100])
    # units at 0..600 ms; the window [100 ms, 500 ms] holds the 2nd to 6th: 500, 510, 2960, 520, 530 — the one
    # slow unit (a short slow spell of the machine) moves the reading, as it moved the window's throughput
    assert reading_between(times, cpu, 100 * MS, 500 * MS) == ProbeReading(samples=5, unit_ns=1004.0)


def test_window_edges_are_inclusive():
    times, cpu = _samples([400, 600, 800, 1_000])
    assert reading_between(times, cpu, 0, 300 * MS) == ProbeReading(samples=4, unit_ns=700.0)
    assert reading_between(times, cpu, 1, 300 * MS - 1).samples == 2


def test_fewer_than_the_minimum_samples_give_no_reading_but_their_count():
    times, cpu = _samples([500, 600, 700, 800])
    short = reading_between(times, cpu, 0, (MIN_SAMPLES - 2) * 100 * MS)
    assert short == ProbeReading(samples=MIN_SAMPLES - 1, unit_ns=None)
    assert reading_between(times, cpu, 10_000 * MS, 20_000 * MS) == ProbeReading(samples=0, unit_ns=None)
    assert reading_between([], [], 0, 10**12) == ProbeReading(samples=0, unit_ns=None)


def test_the_probe_lines_are_parsed_and_a_torn_line_is_skipped():
    assert parse_line("123456789 480000\n") == (123456789, 480000)
    assert parse_line("123456789") is None
    assert parse_line("12x 5") is None
    assert parse_line("") is None


def test_the_unit_of_work_is_fixed_reads_an_l3_sized_array_at_fixed_positions_and_makes_system_calls():
    # constants: readings compare across runs
    assert (UNIT_ITERATIONS, UNIT_ARRAY_BYTES, UNIT_SYSCALLS) == (5_000, 8 << 20, 250)
    one, two = UnitOfWork(), UnitOfWork()
    # the same positions every time, and one byte from each system call
    assert one() == two() == int(one.values[one.positions].sum()) + UNIT_SYSCALLS
    assert one.values.nbytes == UNIT_ARRAY_BYTES and len(one.positions) == UNIT_ITERATIONS
    three = UnitOfWork(3, syscalls=2)
    assert len(three.positions) == 3 and three() == sum(int(three.values[i]) for i in three.positions) + 2
    for unit in (one, two, three):
        unit.close()
        unit.close()  # idempotent
    with pytest.raises(OSError):
        one()  # closed: its system calls fail rather than read nothing


def test_a_window_without_a_probe_is_not_measured():
    assert CpuMeters({}).probe is None
    fields = Repetition.model_fields
    assert fields["reference_unit_ns"].default is None and fields["reference_samples"].default == 0
    assert "slower" in (fields["reference_unit_ns"].description or "")


@pytest.mark.parametrize("start,end,expected", [(0, 0, 1), (50 * MS, 149 * MS, 1), (0, 10**12, 3)])
def test_counts_follow_the_window(start, end, expected):
    times, cpu = _samples([1, 2, 3])
    assert reading_between(times, cpu, start, end).samples == expected


def test_a_probe_refused_real_time_says_it_runs_as_a_normal_task(monkeypatch):
    import os

    def refuse(*_: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "sched_setscheduler", refuse)
    assert real_time() == "normal (SCHED_FIFO refused: Operation not permitted)"
    seen: list[tuple] = []
    monkeypatch.setattr(os, "sched_setscheduler", lambda *args: seen.append(args))
    assert real_time() == "SCHED_FIFO priority 1"
    assert seen and seen[0][1] == os.SCHED_FIFO and seen[0][2].sched_priority == 1


def _probe_with(times: list[int], cpu: list[int]) -> SpeedProbe:
    probe = SpeedProbe([0])  # not started: its samples set as its reader thread would have read them
    probe._times, probe._cpu = times, cpu
    return probe


def test_the_idle_gap_between_two_loads_is_read_and_told_to_the_load_before_it():
    # units every 10 ms from 0 to 3 s; those in the gap [1.5 s, 2 s] take 700 ns, all others 100 ns
    times = [i * 10 * MS for i in range(301)]
    probe = _probe_with(times, [700 if 1_500 * MS <= t <= 2_000 * MS else 100 for t in times])
    assert probe.load_starts(0) is None  # no load ended before the first: no gap
    told: list[ProbeReading] = []
    probe.load_ended(1_500 * MS, after=told.append)
    gap = probe.load_starts(2_000 * MS)
    # the margins leave out the units at 1.50 s and 2.00 s: 1.51 … 1.99 s are 49 units
    assert gap == ProbeReading(samples=49, unit_ns=700.0) and told == [gap]
    assert probe.load_starts(2_500 * MS) is None  # a load that never said it ended (it failed) leaves no gap


def test_a_long_gap_is_read_over_its_last_second_and_a_short_one_is_not_measured():
    times = [i * 10 * MS for i in range(501)]
    probe = _probe_with(times, [900 if t < 3_000 * MS else 100 for t in times])  # slow before 3 s (a levelling)
    probe.load_ended(0)
    assert GAP_MAX_NS == 1_000 * MS and GAP_MARGIN_NS == 10 * MS
    assert probe.load_starts(4_000 * MS) == ProbeReading(samples=100, unit_ns=100.0)  # 3.00 … 3.99 s
    told: list[ProbeReading] = []
    probe.load_ended(4_000 * MS, after=told.append)
    assert probe.load_starts(4_015 * MS) == ProbeReading(samples=0, unit_ns=None) and len(told) == 1


def test_the_child_takes_its_pace_from_what_the_parent_writes_and_leaves_when_the_parent_is_gone():
    import os
    import time

    read, write = os.pipe()
    try:
        assert _pause(1_000_000, None, True) is True  # no commands: a plain sleep, the pace kept
        started = time.monotonic()
        assert _pause(20_000_000, read, False) is False  # nothing written: the whole pause, the pace kept
        assert time.monotonic() - started >= 0.015
        os.write(write, GAP_BEGINS)
        assert _pause(10_000_000_000, read, False) is True  # a gap begins: at once, not after 10 s
        os.write(write, GAP_BEGINS + LOAD_BEGINS)
        assert _pause(10_000_000_000, read, True) is False  # the last word counts
        os.write(write, b"x")
        assert _pause(10_000_000_000, read, True) is True  # anything else leaves the pace as it was
        os.close(write)
        write = -1
        assert _pause(10_000_000_000, read, False) is None  # the parent closed its end: the child stops
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)
