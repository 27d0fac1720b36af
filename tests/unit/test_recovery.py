"""Recovery from a fault on crafted timelines (analysis/recovery.py): every figure as its docstring defines it.

Timelines are written as segments of 100 ms bins: `seg(100, 5.0)` is 5 s of bins holding 100 2xx answers
each (1,000 2xx/s).
"""

from __future__ import annotations

import pytest

from pgarena.analysis.recovery import (
    ERROR_KINDS,
    NOT_RANKED,
    Recovery,
    RecoveryUndefined,
    Timeline,
    rank_by_recovery,
    recovery,
)

BIN = 0.1


def seg(value: int, seconds: float) -> list[int]:
    return [value] * round(seconds / BIN)


def timeline(ok: list[int], *, unanswered: bool = True, **errors: list[int]) -> Timeline:
    """A 100 ms timeline; error series not given are zeros (or None for every unanswered kind when
    `unanswered` is False, as oha's file gives)."""
    n = len(ok)
    for name, series in errors.items():
        assert len(series) == n, name
    kinds = {kind: errors.get(kind, [0] * n) for kind in ERROR_KINDS}
    if not unanswered:
        kinds = {"non_2xx": kinds["non_2xx"]}
    return Timeline(origin_unix_s=1_795_000_000.0, bin_s=BIN, ok_2xx=tuple(ok), **kinds)


def at(seconds: float, n: int, value: int = 1) -> list[int]:
    """A series of n zero bins with `value` in the bin that starts at `seconds`."""
    series = [0] * n
    series[round(seconds / BIN)] = value
    return series


# ---------------------------------------------------------------- the figures


def test_clean_dip_and_recovery():
    # 5 s steady, the fault 5.0–6.0 s answers nothing, a ramp at 50 and 80, then steady from 6.2 s
    ok = seg(100, 5.0) + seg(0, 1.0) + [50, 80] + seg(100, 3.8)
    timeouts = seg(0, 5.0) + seg(30, 1.0) + [5, 0] + seg(0, 3.8)
    rec = recovery(timeline(ok, timeout=timeouts), 5.0, 6.0)
    assert rec.status == "recovered" and rec.recovered and rec.ranked
    assert rec.baseline_rps == pytest.approx(1000)
    assert rec.baseline_s == 5.0 and rec.baseline_within_share == 1.0 and rec.baseline_failed == 0
    assert rec.first_ok_after_s == 0.0  # the 50 answers in the bin starting at the fault's end
    # 6.0 s: the second from there holds 930 answers (93 % of the baseline) and every second after it more
    assert rec.recovered_after_s == pytest.approx(0.0)
    assert rec.failed_requests == 305 and rec.errors_by_kind["timeout"] == 305
    assert rec.failed_until_s == pytest.approx(7.0)  # the sustained run that confirmed it included
    assert rec.unanswered == 305
    assert not rec.answers_continued


def test_bins_just_outside_tolerance_are_not_recovered():
    # 89 per bin is 11 % below 100: not within 10 %; 90 is
    ok = seg(100, 5.0) + seg(0, 0.5) + seg(89, 1.0) + seg(90, 2.0)
    rec = recovery(timeline(ok), 5.0, 5.5)
    assert rec.recovered_after_s == pytest.approx(1.0)


def test_never_recovers_is_a_finding():
    ok = seg(100, 5.0) + seg(0, 1.0) + seg(50, 4.0)  # back at half its throughput, to the end
    connect = seg(0, 5.0) + seg(40, 1.0) + seg(0, 4.0)
    rec = recovery(timeline(ok, connect=connect), 5.0, 6.0)
    assert rec.status == "never-recovered" and not rec.recovered and rec.ranked
    assert rec.recovered_after_s is None
    assert rec.first_ok_after_s == 0.0
    assert rec.failed_until_s == pytest.approx(10.0)  # counted to the timeline's end
    assert rec.failed_requests == 400 and rec.errors_by_kind["connect"] == 400


def test_no_answer_at_all_after_the_fault():
    ok = seg(100, 5.0) + seg(0, 5.0)
    rec = recovery(timeline(ok), 5.0, 6.0)
    assert rec.status == "never-recovered"
    assert rec.first_ok_after_s is None and rec.recovered_after_s is None


def test_the_sustained_run_must_fit_in_the_timeline():
    # back at 9.0 s: a one-second rate from 9.0 s and from each of the next 9 bins needs 1.9 s of data
    late = seg(100, 5.0) + seg(0, 4.0) + seg(100, 1.9)  # from 8.9 s the next second holds 90 %: recovered
    assert recovery(timeline(late), 5.0, 6.0).recovered_after_s == pytest.approx(2.9)
    too_late = seg(100, 5.0) + seg(0, 4.0) + seg(100, 1.7)  # 1.7 s cannot confirm it
    rec = recovery(timeline(too_late), 5.0, 6.0)
    assert rec.status == "never-recovered" and rec.first_ok_after_s == pytest.approx(3.0)


def test_recovers_then_relapses_needs_the_sustained_run():
    # back for 0.5 s, down again for 0.3 s, then steady: the first return does not count
    ok = seg(100, 5.0) + seg(0, 1.0) + seg(100, 0.5) + seg(0, 0.3) + seg(100, 3.2)
    rec = recovery(timeline(ok), 5.0, 6.0)
    assert rec.first_ok_after_s == 0.0
    assert rec.recovered_after_s == pytest.approx(0.7)  # from 6.7 s every one-second rate is ≥ 90 %
    shorter = recovery(timeline(ok), 5.0, 6.0, sustain_s=0.5)  # half-second rates: 6.0 s alone is not a run
    assert shorter.recovered_after_s == pytest.approx(0.8)


def test_a_catch_up_burst_above_the_baseline_is_not_yet_recovery():
    # a stall releases its backlog: 300, 200, 150 per bin before it settles
    ok = seg(100, 5.0) + seg(0, 2.0) + [300, 200, 150] + seg(100, 2.7)
    rec = recovery(timeline(ok), 5.0, 7.0)
    assert rec.first_ok_after_s == 0.0
    assert rec.recovered_after_s == pytest.approx(0.2)  # the second from 7.0 s holds 135 %, from 7.1 s 115 %


def test_errors_only_no_drop_in_throughput():
    # pg_terminate_backend at 5.0 s: the requests in flight fail, throughput never leaves the band
    ok = seg(100, 10.0)
    other = at(5.0, 100, 4)
    reset = at(5.1, 100, 3)
    late_timeout = at(6.5, 100, 2)  # a request the fault caught, timing out later
    rec = recovery(timeline(ok, other=other, reset=reset, timeout=late_timeout), 5.0, 5.0)
    assert rec.recovered and rec.recovered_after_s == 0.0 and rec.first_ok_after_s == 0.0
    assert rec.answers_continued
    assert rec.failed_until_s == pytest.approx(6.0)
    assert rec.failed_requests == 7  # counted until the sustained run ended; the 6.5 s timeout is after it
    assert rec.errors_by_kind == {"non_2xx": 0, "connect": 0, "reset": 3, "timeout": 0, "other": 4, "dropped": 0}


def test_fault_between_bin_edges():
    ok = seg(100, 5.0) + seg(0, 1.1) + seg(100, 3.9)  # nothing answered in 5.0–6.1 s
    rec = recovery(timeline(ok), 5.03, 6.05)
    assert rec.first_ok_after_s == pytest.approx(0.05)  # the bin from 6.1 s
    assert rec.recovered_after_s == pytest.approx(0.05)
    assert rec.baseline_s == 5.0  # bins 0.0–5.0 s: the bin holding 5.03 s is not baseline


def test_non_2xx_answers_are_failures_not_throughput():
    ok = seg(100, 5.0) + seg(0, 1.0) + seg(100, 4.0)
    non_2xx = seg(0, 5.0) + seg(100, 1.0) + seg(0, 4.0)  # a stack answering 503 while the database is down
    rec = recovery(timeline(ok, non_2xx=non_2xx), 5.0, 6.0)
    assert rec.recovered_after_s == 0.0
    assert rec.failed_requests == 1000 and rec.errors_by_kind["non_2xx"] == 1000
    assert rec.unanswered == 0  # every one of them was answered: outcome known


# ---------------------------------------------------------------- unknown outcome, unrecorded errors


def test_requests_without_an_answer_are_unknown_outcome():
    n = 100
    ok = seg(100, 5.0) + seg(0, 1.0) + seg(100, 4.0)
    rec = recovery(timeline(ok, timeout=at(5.5, n, 6), reset=at(5.2, n, 2), connect=at(5.9, n, 5),
                            other=at(6.0, n, 1), non_2xx=at(5.6, n, 9)), 5.0, 6.0)
    assert rec.unanswered == 6 + 2 + 5 + 1  # may have run at the server (tx: may have committed)
    assert rec.failed_requests == rec.unanswered + 9


def test_unrecorded_unanswered_requests_are_unknown_not_zero():
    """oha's per-request file has answers only: failed requests cannot be counted from it."""
    ok = seg(100, 5.0) + seg(0, 1.0) + seg(100, 4.0)
    rec = recovery(timeline(ok, non_2xx=at(5.5, 100, 3), unanswered=False), 5.0, 6.0)
    assert rec.recovered_after_s == 0.0  # throughput figures need answers only
    assert rec.failed_requests is None and rec.unanswered is None and rec.baseline_failed is None
    assert rec.errors_by_kind == {"non_2xx": 3}


# ---------------------------------------------------------------- no baseline


def test_fault_at_the_start_of_the_data_has_no_baseline():
    ok = seg(100, 10.0)
    with pytest.raises(RecoveryUndefined, match=r"0\.3 s of whole bins before it, the baseline needs 5 s"):
        recovery(timeline(ok), 0.35, 1.0)
    with pytest.raises(RecoveryUndefined, match="baseline"):
        recovery(timeline(ok), 0.0, 0.0)
    assert recovery(timeline(ok), 0.35, 1.0, baseline_window_s=0.3).recovered  # a shorter baseline fits


def test_fault_too_close_to_the_end_cannot_be_judged():
    ok = seg(100, 10.0)
    with pytest.raises(RecoveryUndefined, match="needs at least 2 s"):
        recovery(timeline(ok), 8.0, 9.5)


def test_no_answer_before_the_fault_is_no_baseline():
    ok = seg(0, 5.0) + seg(0, 1.0) + seg(100, 4.0)
    rec = recovery(timeline(ok), 5.0, 6.0)
    assert rec.status == "no-baseline" and not rec.recovered and not rec.ranked
    assert rec.baseline_rps == 0 and rec.recovered_after_s is None
    assert rec.first_ok_after_s == 0.0  # still true: answers came right after the fault


def test_noisy_baseline_claims_no_finding():
    # seconds at 30 and 70 answers alternate: no second of the baseline stays within 10 % of its mean
    wave = ([3] * 10 + [7] * 10) * 2
    ok = wave + [3] * 10 + seg(0, 1.0) + wave
    rec = recovery(timeline(ok), 5.0, 6.0)
    assert rec.status == "unsteady-baseline" and not rec.ranked
    assert rec.baseline_within_share < 0.5
    assert rec.recovered_after_s is None


def test_arguments_are_checked():
    t = timeline(seg(100, 10.0))
    for args in [(6.0, 5.0), (5.0, 11.0), (-1.0, 5.0)]:
        with pytest.raises(ValueError, match="does not lie in the timeline"):
            recovery(t, *args)
    with pytest.raises(ValueError, match="tolerance"):
        recovery(t, 5.0, 6.0, tolerance=10)


def test_timeline_checks_its_series():
    with pytest.raises(ValueError, match="has 2 bins"):
        Timeline(origin_unix_s=0, bin_s=BIN, ok_2xx=(1, 2, 3), non_2xx=(0, 0))
    with pytest.raises(ValueError, match="all given or all None"):
        Timeline(origin_unix_s=0, bin_s=BIN, ok_2xx=(1,), non_2xx=(0,), timeout=(0,))
    with pytest.raises(ValueError, match="negative"):
        Timeline(origin_unix_s=0, bin_s=BIN, ok_2xx=(1, -1), non_2xx=(0, 0))
    t = Timeline(origin_unix_s=100.0, bin_s=BIN, ok_2xx=[1, 2], non_2xx=[0, 1], connect=[0, 0], reset=[0, 0],
                 timeout=[0, 3], other=[0, 0])
    assert t.ok_2xx == (1, 2) and t.duration_s == pytest.approx(0.2)
    assert t.ok_rps() == [pytest.approx(10), pytest.approx(20)]
    assert t.failed() == [0, 4]
    assert t.seconds_after_origin(105.5) == 5.5


# ---------------------------------------------------------------- ranking


def rec_after(seconds: float | None, status: str = "recovered") -> Recovery:
    """A Recovery with only what ranking reads filled in."""
    return Recovery(status=status, fault_start_s=5.0, fault_end_s=6.0, bin_s=BIN, tolerance=0.1, sustain_s=1.0,
                    baseline_rps=1000, baseline_s=5.0, baseline_within_share=1.0, baseline_failed=0,
                    first_ok_after_s=0.0, recovered_after_s=seconds, failed_requests=0, failed_until_s=7.0)


def test_ranking_orders_by_recovery_time_with_ties_and_never_recovered_last():
    ranked = rank_by_recovery([
        ("never-a", rec_after(None, "never-recovered")),
        ("slow", rec_after(1.0)),
        ("unsteady", rec_after(None, "unsteady-baseline")),
        ("fast", rec_after(0.3)),
        ("never-b", rec_after(None, "never-recovered")),
        ("close-second", rec_after(0.4)),  # within one bin of 0.3 s: a tie
        ("none", rec_after(None, "no-baseline")),
    ])
    assert [(r.key, r.rank) for r in ranked] == [
        ("fast", "1–2"), ("close-second", "1–2"), ("slow", "3"),
        ("never-a", "4–5"), ("never-b", "4–5"),
        ("unsteady", NOT_RANKED), ("none", NOT_RANKED),
    ]
    assert ranked[0].recovery.recovered_after_s == 0.3


def test_ranking_ties_are_not_transitive_beyond_one_bin():
    ranked = rank_by_recovery([("a", rec_after(0.0)), ("b", rec_after(0.1)), ("c", rec_after(0.2)),
                               ("d", rec_after(0.3)), ("e", rec_after(0.45))])
    # neighbours one bin apart tie (exactly one bin counts), two bins apart do not: b could be 1st to 3rd
    assert [(r.key, r.rank) for r in ranked] == [("a", "1–2"), ("b", "1–3"), ("c", "2–4"), ("d", "3–4"),
                                                 ("e", "5")]


def test_ranking_clear_order_and_mixed_bin_widths():
    ranked = rank_by_recovery([("b", rec_after(2.0)), ("a", rec_after(0.5))])
    assert [(r.key, r.rank) for r in ranked] == [("a", "1"), ("b", "2")]
    coarse = Recovery(**{**rec_after(0.5).__dict__, "bin_s": 1.0})
    with pytest.raises(ValueError, match="bin widths"):
        rank_by_recovery([("a", rec_after(0.5)), ("b", coarse)])
    assert rank_by_recovery([]) == []
