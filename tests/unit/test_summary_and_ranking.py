"""A cell's summary (intervals, stop reason, flags, cost) and the report's tie-aware ranks (issue 5)."""

from __future__ import annotations

import pytest

from pgarena.analysis.ranking import UNRANKED, comparable_groups, efficiency_ranks, throughput_ranks
from pgarena.config.profiles import build_config
from pgarena.contract.flags import DATABASE_BOUND, DROPPED, FAILURES, GENERATOR_BOUND, NOISY, TIMEOUTS
from pgarena.load.summary import keep_repeating, summarize
from pgarena.results.models import Cell, Errors, Latency, Repetition


@pytest.fixture
def config(tmp_path, monkeypatch):
    monkeypatch.setattr("pgarena.config.profiles.default_cpu_sets", lambda: ([0], [1]))
    return build_config(profile="full", project_dir=tmp_path)  # target ±2 %, 3..10 repetitions, 40 s budget


def rep(index: int, rps: float, *, seconds: float = 5.0, stack_cpu: float | None = 1.0, db_cpu: float | None = 1.0,
        generator_cpu: float = 1.0, timeouts: int = 0, failed: int = 0, offered: int | None = None,
        dropped: int = 0) -> Repetition:
    requests = round(rps * seconds)
    return Repetition(index=index, requests=requests, duration_seconds=seconds, rps=rps,
                      latency=Latency(avg_ms=1, p50_ms=1, p90_ms=2, p95_ms=3, p99_ms=4, max_ms=5),
                      errors=Errors(timeout=timeouts, other=failed), status_codes={"200": requests},
                      stack_cpu_seconds=stack_cpu, db_cpu_seconds=db_cpu, stack_rss_peak_bytes=2**20,
                      generator_cpu_seconds=generator_cpu, raw_output="x", offered_requests=offered,
                      dropped=dropped)


def cell(stack: str, reps: list[Repetition], config, **kw) -> Cell:
    kw.setdefault("vus", 50)
    kw.setdefault("engine", "oha")
    c = Cell(stack=stack, workload="perf-test", parameter_name="rows", parameter=1,
             warmup_seconds=1, duration_seconds=5, repetitions=reps, **kw)
    summarize(c, config)
    return c


def test_tight_repetitions_give_a_narrow_interval_and_no_noise_flag(config):
    c = cell("a", [rep(i, v) for i, v in enumerate([10_000, 10_050, 9_980], 1)], config)
    s = c.summary
    assert s.rps_interval.low < 10_010 < s.rps_interval.high
    assert s.rps_interval.rel_half_width < 0.02 and not s.noisy and NOISY not in c.flags
    assert s.stop_reason == "interval"
    assert "t-interval" in s.rps_interval.method


def test_wide_repetitions_are_noisy_and_say_why_they_stopped(config):
    values = [10_000, 7_000, 12_000, 9_000, 11_000, 8_000, 10_500, 9_500, 12_500, 7_500]
    c = cell("a", [rep(i, v) for i, v in enumerate(values, 1)], config)
    assert c.summary.noisy and NOISY in c.flags
    assert c.summary.stop_reason == "max-repetitions"
    short = cell("a", [rep(i, v) for i, v in enumerate(values[:4], 1)], config)
    assert short.summary.stop_reason == "budget"


def test_cost_per_request_and_cpu_fractions(config):
    # 2 reps × 5 s × 1,000 req/s = 10,000 requests; stack 0.5 s + 0.5 s CPU → 100 µs/request
    c = cell("a", [rep(1, 1000, stack_cpu=0.5, db_cpu=4.8), rep(2, 1000, stack_cpu=0.5, db_cpu=4.8)], config)
    s = c.summary
    assert s.stack_cpu_us_per_request == pytest.approx(100)
    assert s.db_cpu_us_per_request == pytest.approx(960)
    assert s.db_cpu_fraction == pytest.approx(0.96) and s.stack_cpu_fraction == pytest.approx(0.1)
    assert DATABASE_BOUND in c.flags, "PostgreSQL at 96 % of the server CPU while the stack idles"
    assert s.cpu_us_per_request_interval.mean == pytest.approx(1060)


def test_generator_bound_timeouts_failures_and_drops_are_flagged(config):
    c = cell("a", [rep(1, 1000, generator_cpu=4.9, timeouts=3, failed=200)], config)
    assert {GENERATOR_BOUND, TIMEOUTS, FAILURES} <= set(c.flags)
    assert c.summary.timeouts_total == 3
    o = cell("a", [rep(1, 1000, offered=6000, dropped=900), rep(2, 1000, offered=6000, dropped=0)], config,
             model="open", arrival_rate=1200, arrival_rate_spec="1200")
    assert o.summary.offered_total == 12_000 and o.summary.dropped_total == 900 and DROPPED in o.flags


def test_unmeasured_cpu_gives_no_cost_and_no_database_flag(config):
    c = cell("a", [rep(1, 1000, stack_cpu=None), rep(2, 1000, stack_cpu=None)], config)
    assert c.summary.stack_cpu_us_per_request is None and c.summary.stack_cpu_fraction is None
    assert DATABASE_BOUND not in c.flags


def test_keep_repeating_follows_minimum_target_cap_and_budget(config):
    assert keep_repeating([1000, 1000], 10, 5, config), "below the minimum of 3"
    assert not keep_repeating([1000, 1001, 999], 15, 5, config), "interval within ±2 %"
    assert keep_repeating([1000, 800, 1200], 15, 5, config), "wide, budget and cap left"
    assert not keep_repeating([1000, 800, 1200], 36, 5, config), "another 5 s window exceeds the 40 s budget"
    assert not keep_repeating([1000, 800] * 5, 0, 5, config), "cap of 10 reached"


def _ranks(ranked):
    return [(c.stack, label) for c, label in ranked]


def test_overlapping_intervals_tie_noisy_cells_are_ranked_where_clear_and_invalid_ones_not(config):
    """Issue 11 item 4: `noisy` no longer hides a rank; a wide interval gets the range it allows."""
    a = cell("a", [rep(i, v) for i, v in enumerate([10_000, 10_020, 9_990], 1)], config)
    b = cell("b", [rep(i, v) for i, v in enumerate([10_010, 9_995, 10_030], 1)], config)
    c = cell("c", [rep(i, v) for i, v in enumerate([5_000, 5_010, 4_995], 1)], config)
    noisy = cell("noisy", [rep(i, v) for i, v in enumerate([20_000, 12_000, 30_000], 1)], config)
    invalid = cell("invalid", [rep(i, v, failed=5000) for i, v in enumerate([15_000, 15_010, 14_990], 1)], config)
    ranked = _ranks(throughput_ranks([c, invalid, a, b]))
    assert ranked == [("invalid", UNRANKED), ("b", "1–2"), ("a", "1–2"), ("c", "3")], \
        "listed by median; the invalid cell is shown but takes no place in the field"
    # a noisy cell is ranked with every position its wide interval allows
    assert NOISY in noisy.flags
    ranked = _ranks(throughput_ranks([c, invalid, a, noisy, b]))
    assert ranked == [("noisy", "1–4"), ("invalid", UNRANKED), ("b", "1–3"), ("a", "1–3"), ("c", "3–4")]
    # and a fast noisy cell whose interval is clear of a slow tight one is plainly first
    fast_noisy = cell("fast", [rep(i, v) for i, v in enumerate([40_000, 30_000, 50_000], 1)], config)
    slow = cell("slow", [rep(i, v) for i, v in enumerate([1_000, 1_001, 999], 1)], config)
    assert fast_noisy.summary.noisy
    assert _ranks(throughput_ranks([slow, fast_noisy])) == [("fast", "1"), ("slow", "2")]


def test_cells_of_different_engines_never_share_a_rank(config):
    """Same workload, parameter and level, measured with oha and with k6: two groups, each ranked alone."""
    fast_k6 = cell("a", [rep(i, v) for i, v in enumerate([20_000, 20_010, 19_990], 1)], config, engine="k6")
    slow_oha = cell("b", [rep(i, v) for i, v in enumerate([10_000, 10_020, 9_990], 1)], config)
    slower_oha = cell("c", [rep(i, v) for i, v in enumerate([5_000, 5_010, 4_995], 1)], config)
    groups = comparable_groups([fast_k6, slow_oha, slower_oha])
    assert [[c.stack for c in cells] for cells in groups.values()] == [["a"], ["b", "c"]]
    assert [key[-1] for key in groups] == ["k6", "oha"]
    assert [_ranks(throughput_ranks(cells)) for cells in groups.values()] == [
        [("a", "1")], [("b", "1"), ("c", "2")]], "b is first among the oha cells, not second behind a k6 cell"


def test_efficiency_ranks_lower_cpu_per_request_first(config):
    lean = cell("lean", [rep(i, 1000, stack_cpu=0.5 + i / 1000) for i in (1, 2, 3)], config)
    heavy = cell("heavy", [rep(i, 3000, stack_cpu=5.0 + i / 1000) for i in (1, 2, 3)], config)
    assert _ranks(efficiency_ranks([heavy, lean])) == [("lean", "1"), ("heavy", "2")]


def test_relative_arrival_rates_scale_the_closed_peak_of_the_same_parameter(config):
    from pgarena.pipeline.plan import resolve_rate

    low = cell("a", [rep(i, 1000) for i in (1, 2, 3)], config)
    high = cell("a", [rep(i, 2000) for i in (1, 2, 3)], config, vus=100)
    other = cell("a", [rep(i, 9000) for i in (1, 2, 3)], config)
    other.parameter = 500  # another parameter's peak must not be used
    opened = Cell(stack="a", workload="perf-test", parameter_name="rows", parameter=1, vus=100, model="open",
                  arrival_rate_spec="90%", engine="oha", warmup_seconds=1, duration_seconds=5)
    resolve_rate(opened, [low, high, other])
    assert opened.arrival_rate == pytest.approx(1800)
    lonely = opened.model_copy(update={"arrival_rate": None, "stack": "b"})
    with pytest.raises(ValueError, match="no measured closed-model cell"):
        resolve_rate(lonely, [low, high])


# ---------------------------------------------------------------- issue 10 items 4, 5, 7


def test_summary_marks_a_p99_that_counts_timeouts_as_a_lower_bound(config):
    """A repetition whose p99 reaches requests without an answer is '≥ timeout'; when it decides the
    median, the cell's p99 is a lower bound too."""
    timed_out = Latency(avg_ms=60, p50_ms=1, p90_ms=250, p95_ms=250, p99_ms=250, max_ms=250,
                        censored=["avg_ms", "p90_ms", "p95_ms", "p99_ms", "max_ms"])
    reps = [rep(i, 1000) for i in (1, 2, 3)]
    reps[1] = reps[1].model_copy(update={"latency": timed_out})
    reps[2] = reps[2].model_copy(update={"latency": timed_out})
    c = cell("a", reps, config)
    assert c.summary.latency_p99_ms.median == 250
    assert c.summary.latency_censored == ["latency_p99_ms", "latency_avg_ms"]
    # one censored repetition above the median does not make the median a bound
    reps = [rep(i, 1000) for i in (1, 2, 3)]
    reps[2] = reps[2].model_copy(update={"latency": timed_out})
    assert cell("b", reps, config).summary.latency_censored == []


def test_rps_is_2xx_answers_and_every_request_is_reported_beside_it(config):
    reps = []
    for i in (1, 2, 3):
        r = rep(i, 1000)  # 5,000 requests in 5 s, of which 1,000 answered 500
        reps.append(r.model_copy(update={"rps": 800.0, "requests_per_second_all": 1000.0,
                                         "status_codes": {"200": 4000, "500": 1000},
                                         "errors": Errors(non_2xx=1000)}))
    c = cell("a", reps, config)
    assert c.summary.rps.median == 800
    assert c.summary.requests_per_second_all.median == 1000
    # CPU per request is per answered (2xx) request: 1 s stack CPU / 4,000 answers per window
    assert c.summary.stack_cpu_us_per_request == pytest.approx(250)


def test_a_cell_near_the_generator_headroom_is_generator_bound_and_not_ranked(config):
    fast = [rep(i, v) for i, v in enumerate([9_500, 9_510, 9_490], 1)]
    slow = [rep(i, v) for i, v in enumerate([5_000, 5_010, 4_990], 1)]
    a = Cell(stack="a", workload="perf-test", parameter_name="rows", parameter=1, engine="oha", vus=50,
             warmup_seconds=1, duration_seconds=5, repetitions=fast)
    b = Cell(stack="b", workload="perf-test", parameter_name="rows", parameter=1, engine="oha", vus=50,
             warmup_seconds=1, duration_seconds=5, repetitions=slow)
    summarize(a, config, headroom_rps=10_000)  # 9,500 req/s ≥ 90 % of the generator's 10,000
    summarize(b, config, headroom_rps=10_000)
    assert GENERATOR_BOUND in a.flags and GENERATOR_BOUND not in b.flags
    assert _ranks(throughput_ranks([a, b])) == [("a", UNRANKED), ("b", "1")]
    assert dict(_ranks(efficiency_ranks([a, b])))["a"] == UNRANKED


def test_generator_cpu_bound_cells_are_not_ranked(config):
    bound = cell("bound", [rep(i, 9_000 + i, generator_cpu=4.9) for i in (1, 2, 3)], config)
    free = cell("free", [rep(i, 5_000 + i) for i in (1, 2, 3)], config)
    assert GENERATOR_BOUND in bound.flags
    assert _ranks(throughput_ranks([bound, free])) == [("bound", UNRANKED), ("free", "1")]


def _open(stack: str, rps: list[float], p99: list[float], config, spec: str, **kw) -> Cell:
    reps = [rep(i, v) for i, v in enumerate(rps, 1)]
    for r, value in zip(reps, p99):
        r.latency = Latency(avg_ms=1, p50_ms=1, p90_ms=1, p95_ms=1, p99_ms=value, max_ms=value,
                            censored=kw.get("censored", []))
    return cell(stack, reps, config, model="open", vus=100, arrival_rate_spec=spec,
                arrival_rate=2000.0 if not spec.endswith("%") else rps[0])


def test_open_model_at_a_shared_rate_ranks_p99_and_at_a_relative_rate_not_at_all(config):
    """Issue 10 item 6: at the same offered rate 2xx/s is the offered rate, so p99 decides; at a share
    of each stack's own peak the stacks got different loads, so nothing is ranked."""
    from pgarena.analysis.ranking import BY_P99, BY_RPS, NOT_RANKED, rank_basis, table_ranks

    slow = _open("slow", [2000, 2001, 1999], [9.0, 9.1, 9.2], config, "2000")
    quick = _open("quick", [1999, 2000, 1998], [2.0, 2.1, 2.05], config, "2000")
    timing_out = _open("timing-out", [2000, 2000, 2001], [250, 250, 250], config, "2000",
                       censored=["p99_ms", "max_ms"])
    assert rank_basis([slow, quick]) == BY_P99
    assert _ranks(table_ranks([slow, quick, timing_out])) == [("quick", "1"), ("slow", "2"), ("timing-out", "3")]
    big = _open("big", [9000, 9010, 9005], [5, 5, 5], config, "90%")
    small = _open("small", [1000, 1001, 1002], [5, 5, 5], config, "90%")
    assert rank_basis([big, small]) == NOT_RANKED
    assert _ranks(table_ranks([small, big])) == [("big", UNRANKED), ("small", UNRANKED)]
    assert all(label == UNRANKED for _, label in efficiency_ranks([small, big]))
    closed = cell("a", [rep(i, 1000) for i in (1, 2, 3)], config)
    assert rank_basis([closed]) == BY_RPS


# ---------------------------------------------------------------- issue 11 items 3, 4, 5: report/verdicts.py


def rounds(stack: str, values: list[float], config, *, in_rounds: bool = True, **kw) -> Cell:
    """A cell whose repetition i was measured in interleaved round i (or, in_rounds=False, sequentially)."""
    reps = [rep(i, v).model_copy(update={"round": i if in_rounds else None}) for i, v in enumerate(values, 1)]
    c = cell(stack, reps, config, **kw)
    for flag in kw.get("flags", []):
        c.flags.append(flag)
    return c


# The machine drifts from round to round; the two stacks move together, 1.5× apart.
FAST = [15_000, 12_000, 18_000, 13_500]
SLOW = [10_000, 8_100, 11_900, 9_000]


def test_paired_rounds_order_what_independent_intervals_cannot(config):
    from pgarena.analysis.verdicts import table_verdict

    fast, slow = rounds("fast", FAST, config), rounds("slow", SLOW, config)
    assert fast.summary.noisy and slow.summary.noisy
    assert fast.summary.rps_interval.low < slow.summary.rps_interval.high, "the own intervals overlap"
    v = table_verdict([slow, fast])
    assert v.paired and v.rounds == 4
    assert (v.rank_exact, v.rank_all) == ({"fast": "1", "slow": "2"}, {"fast": "1", "slow": "2"})
    assert [c.stack for c in v.cells] == ["fast", "slow"] and v.leaders() == ["fast"]
    [sentence] = v.sentences()
    assert sentence.startswith("fast is 1.50× slow (") and "indistinguishable" not in sentence
    assert v.best == "fast" and v.to_best["slow"].text().startswith("0.67× (0.6")
    assert "Paired over 4 interleaved round(s)" in v.method()
    # the same figures without rounds (a sequential run): today's independent intervals, a tie
    fast_seq, slow_seq = rounds("fast", FAST, config, in_rounds=False), rounds("slow", SLOW, config, in_rounds=False)
    w = table_verdict([slow_seq, fast_seq])
    assert not w.paired and w.rank_all == {"fast": "1–2", "slow": "1–2"} and w.sentences() == []
    assert w.leaders() == ["fast", "slow"], "an explicit tie for rank 1"
    assert w.to_best["slow"].text() == f"{statistics_median(SLOW) / statistics_median(FAST):.2f}×", "of medians"
    assert "Independent" in w.method()


def statistics_median(values: list[float]) -> float:
    import statistics

    return statistics.median(values)


def test_equal_pairs_are_equivalent_within_the_margin_and_scattered_ones_not_resolved(config):
    from pgarena.analysis.verdicts import table_verdict

    a = rounds("a", [10_000, 8_000, 12_000], config)
    b = rounds("b", [10_100, 7_900, 12_050], config)
    v = table_verdict([a, b])
    assert v.rank_all == {"a": "1–2", "b": "1–2"} or v.rank_all == {"b": "1–2", "a": "1–2"}
    assert "are equivalent within ±10 % (" in v.sentences()[0]
    assert v.groups() in (["a", "b"], [["a", "b"]], [["b", "a"]])
    c = rounds("c", [10_000, 8_000, 12_000], config)
    d = rounds("d", [12_000, 7_000, 10_000], config)
    w = table_verdict([c, d])
    assert ": not resolved (" in w.sentences()[0]
    assert "95 % confidence" in (w.family_sentence() or "") and "1 pair(s) of its 2 stacks" in (w.family_sentence() or "")


def test_wrong_columns_rank_among_all_only_and_invalid_cells_in_neither(config):
    """Issue 11 item 5: ❌ columns: ranked among all stacks, named; a cache or failed requests: no rank."""
    from pgarena.analysis.verdicts import table_verdict
    from pgarena.contract.flags import COLUMNS_WRONG, INEXACT, INVALID, QUERIES_WRONG

    assert COLUMNS_WRONG in INEXACT and COLUMNS_WRONG not in INVALID and QUERIES_WRONG in INVALID
    fast = rounds("fast", FAST, config)
    node = rounds("node", [v * 2 for v in FAST], config, flags=[COLUMNS_WRONG])
    cache = rounds("cache", [v * 5 for v in FAST], config, flags=[QUERIES_WRONG])
    failing = rounds("failing", [v * 3 for v in FAST], config)
    failing.flags.append(FAILURES)
    slow = rounds("slow", SLOW, config)
    v = table_verdict([slow, fast, node, cache, failing], wrong_columns={"node": ["timestamp_val"]})
    assert v.rank_all == {"node": "1", "fast": "2", "slow": "3", "cache": UNRANKED, "failing": UNRANKED}
    assert v.rank_exact == {"node": UNRANKED, "fast": "1", "slow": "2", "cache": UNRANKED, "failing": UNRANKED}
    assert v.wrong_columns == {"node": ["timestamp_val"]}
    assert v.leaders() == ["fast"] and v.best == "fast", "rank 1 among the exact answers"
    assert v.to_best["node"].ratio == pytest.approx(2.0)
    assert any("(node: ❌ timestamp_val)" in s for s in v.sentences())
    assert "cache" not in v.to_best and "failing" not in v.to_best, "invalid cells get no ratio"


def test_ratios_to_a_baseline_and_a_missing_baseline_is_said(config):
    from pgarena.analysis.verdicts import table_verdict

    fast, slow = rounds("fast", FAST, config), rounds("slow", SLOW, config)
    v = table_verdict([fast, slow], baseline="slow")
    assert v.to_baseline["fast"].text().startswith("1.50× (1.4") and v.baseline_problem is None
    w = table_verdict([fast, slow], baseline="elsewhere")
    assert w.to_baseline == {} and w.baseline_problem == "baseline elsewhere is not in this table"


def test_a_stack_measured_on_its_own_is_shown_beside_a_paired_table_but_neither_ranked_nor_compared(config):
    from pgarena.analysis.verdicts import table_verdict

    fast, slow = rounds("fast", FAST, config), rounds("slow", SLOW, config)
    alone = rounds("alone", [30_000, 30_100, 29_900], config, in_rounds=False)  # far above both, at another time
    v = table_verdict([alone, slow, fast], baseline="alone")
    assert v.paired and v.sequential == ["alone"] and v.inference is not None, "the rounds' stacks keep the inference"
    assert set(v.inference.fit.effect) == {"fast", "slow"}
    assert v.rank_all == {"fast": "1", "slow": "2", "alone": "–"}, "no rank from a moment no round shared"
    assert [c.stack for c in v.cells] == ["fast", "slow", "alone"] and v.best == "fast" and v.leaders() == ["fast"]
    assert "alone" not in v.to_best and v.to_best["slow"].interval is not None
    assert [(p.upper, p.lower) for p in v.pairs] == [("fast", "slow")]
    assert "alone: measured on its own after the rounds" in v.method() and v.family_sentence() is not None
    assert v.to_baseline == {} and v.baseline_problem == "baseline alone was measured on its own, not in the rounds of this table"


def _probed_cells(config, seed: int, offsets: dict[str, float]):
    """30 rounds of equal stacks whose 2xx/s follows the machine's speed u, the probe reading u shifted by each
    stack's offset (log units)."""
    import math
    import random

    rng = random.Random(seed)
    cells = []
    for stack, offset in offsets.items():
        reps = []
        for i in range(1, 31):
            u = rng.gauss(0, 0.15)
            reps.append(rep(i, 1000 * math.exp(-u + rng.gauss(0, 0.03))).model_copy(
                update={"round": i, "reference_unit_ns": 5e5 * math.exp(u + offset + rng.gauss(0, 0.03))}))
        cells.append(cell(stack, reps, config))
    return cells


def test_a_table_judged_without_the_probe_says_beside_which_stacks_it_read_differently(config):
    """The method sentence names the stacks beside which the probe read fastest and slowest, so a reader sees
    where the dependence that withheld the correction comes from (analysis/probecheck.py)."""
    from pgarena.analysis.verdicts import table_verdict

    # the probe reads 35 % slower beside a, 10 % faster beside d
    v = table_verdict(_probed_cells(config, 4, {"a": 0.3, "b": 0.0, "c": 0.0, "d": -0.1}))
    assert v.paired and "not corrected for the machine's speed" in v.method()
    assert "fastest beside d (" in v.method() and "slowest beside a (+" in v.method()


@pytest.mark.parametrize(("seed", "widened"), [(2, True), (0, False)])
def test_a_corrected_table_says_when_its_intervals_carry_the_probes_unseen_shift(config, seed, widened):
    """The probe reads a and d 4 % apart, too little for its check (F 2.4, p 0.07 with seed 2; F 0.94 with seed 0):
    the correction is used, and where F exceeds 1 every interval carries the shift's variance
    (probecheck.shift_variance) and the method sentence says so."""
    from pgarena.analysis.verdicts import table_verdict

    v = table_verdict(_probed_cells(config, seed, {"a": 0.04, "b": 0.0, "c": 0.0, "d": -0.04}))
    assert v.inference is not None and v.inference.fit.slope < 0
    assert "corrected for the machine's speed" in v.method()
    assert bool(v.inference.fit.bias_variance) is widened
    assert ("widened for a shift of the probe by stack" in v.method()) is widened
