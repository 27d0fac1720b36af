"""The max-sustainable-throughput search against simulated stacks with a known capacity (pgarena.load.slo)."""

from __future__ import annotations

import math
import random

import pytest

from pgarena.load.slo import (
    BUDGET,
    CONVERGED,
    MAX_LEVEL,
    START_FAILS,
    LevelResult,
    SloSearch,
    SloTarget,
    search_max_sustainable,
)

CAPACITY = 1234.0  # requests/s the simulated stack can serve
BASE_P99_MS = 5.0  # p99 below capacity, ±10 % noise
WINDOW_S = 10.0  # over capacity the queue grows for the whole window
SLO = SloTarget(p99_ms=50.0)


class SimulatedStack:
    """Open-model load at `level` requests/s on a stack that serves CAPACITY requests/s.

    Below capacity p99 is BASE_P99_MS ± 10 % (seeded noise). Above it the backlog grows for the whole
    window, so the last requests wait about WINDOW_S · (1 − CAPACITY/level) longer: p99 shoots up within a
    fraction of a percent past CAPACITY, and the achieved rps is capped at CAPACITY.
    """

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.calls: list[float] = []

    def __call__(self, level: float) -> LevelResult:
        self.calls.append(level)
        noise = 1 + self.rng.uniform(-0.1, 0.1)
        queueing_ms = max(0.0, 1 - CAPACITY / level) * WINDOW_S * 1000
        return LevelResult(level=level, rps=min(level, CAPACITY) * (1 + self.rng.uniform(-0.01, 0.01)),
                           p99_ms=BASE_P99_MS * noise + queueing_ms, error_rate=0.0)


def limit_for(base_p99_ms: float) -> float:
    """The level at which p99 reaches the SLO for a given base latency: CAPACITY / (1 − q), q the queue
    share that adds the remaining SLO − base milliseconds."""
    q = (SLO.p99_ms - base_p99_ms) / (WINDOW_S * 1000)
    return CAPACITY / (1 - q)


# With the ±10 % noise on the base latency, the level where the SLO breaks lies in this band (1239.5..1239.6).
TRUE_LIMIT_LOW, TRUE_LIMIT_HIGH = limit_for(BASE_P99_MS * 1.1), limit_for(BASE_P99_MS * 0.9)


def run(seed: int = 1, **kwargs: object) -> tuple[SloSearch, SimulatedStack]:
    stack = SimulatedStack(seed)
    args: dict[str, object] = {"start": 50.0, "max_level": 100_000.0, "target": SLO, "budget_steps": 30,
                               "rel_precision": 0.01}
    args.update(kwargs)
    return search_max_sustainable(stack, **args), stack  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("start", [10.0, 50.0, 333.0])
def test_the_bracket_contains_the_true_limit(seed: int, start: float) -> None:
    search, _ = run(seed, start=start)
    assert search.stop_reason == CONVERGED
    low, high = search.bracket
    assert low <= TRUE_LIMIT_LOW and high >= TRUE_LIMIT_HIGH
    assert search.rel_uncertainty <= 0.01
    assert search.answer_level == low
    assert search.answer_rps == pytest.approx(min(low, CAPACITY), rel=0.011)
    assert search.best is not None and SLO.passes(search.best)
    assert search.first_failure is not None and not SLO.passes(search.first_failure)


def test_the_walked_curve_grows_geometrically_until_the_break_then_bisects() -> None:
    search, stack = run(start=50.0, growth=2.0)
    levels = [r.level for r in search.curve]
    assert levels == stack.calls  # every measurement is in the curve, in order
    first_fail = search.verdicts.index(False)
    growth_levels = levels[:first_fail + 1]
    assert growth_levels == [50.0 * 2**k for k in range(len(growth_levels))]
    assert all(search.verdicts[:first_fail])
    assert growth_levels[-2] < CAPACITY < growth_levels[-1]
    # bisection stays strictly inside the bracket found by growth, each point halving it
    low, high = growth_levels[-2], growth_levels[-1]
    for result, passed in zip(search.curve[first_fail + 1:], search.verdicts[first_fail + 1:]):
        assert result.level == pytest.approx((low + high) / 2)
        low, high = (result.level, high) if passed else (low, result.level)
    assert search.bracket == (low, high)


def test_growth_is_capped_at_max_level() -> None:
    search, stack = run(start=100.0, max_level=1000.0, growth=3.0)
    assert stack.calls == [100.0, 300.0, 900.0, 1000.0]
    assert search.stop_reason == MAX_LEVEL
    assert search.bracket == (1000.0, math.inf)
    assert search.first_failure is None and search.rel_uncertainty == math.inf


@pytest.mark.parametrize("budget", [1, 3, 5, 8])
def test_the_step_budget_is_respected(budget: int) -> None:
    search, stack = run(budget_steps=budget, rel_precision=1e-9)
    assert len(stack.calls) == len(search.curve) == search.steps_used <= budget
    assert search.stop_reason == BUDGET
    low, high = search.bracket
    if math.isfinite(high):  # the growth phase found a failure: the bracket is still a valid bracket
        assert low <= TRUE_LIMIT_LOW and high >= TRUE_LIMIT_HIGH


def test_a_start_level_that_fails_reports_no_answer_when_nothing_down_to_min_level_passes() -> None:
    search, stack = run(start=5000.0, min_level=2500.0)
    assert stack.calls == [5000.0, 2500.0]
    assert search.stop_reason == START_FAILS
    assert search.best is None and search.answer_level is None and search.answer_rps is None
    assert search.bracket == (0.0, 2500.0)


@pytest.mark.parametrize("seed", range(5))
def test_a_failing_start_descends_then_bisects_to_the_true_limit(seed: int) -> None:
    search, stack = run(seed=seed, start=5000.0)  # 4 × capacity: a noisy first step, as on a busy machine
    assert stack.calls[:3] == [5000.0, 2500.0, 1250.0] and stack.calls[3] == 625.0
    assert search.stop_reason == CONVERGED
    low, high = search.bracket
    assert low <= TRUE_LIMIT_LOW and high >= TRUE_LIMIT_HIGH and (high - low) <= 0.01 * low


class ErroringStack:
    """Fast at every level, but above CAPACITY 5 % of the requests fail; exactly 1 % at CAPACITY."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, level: float) -> LevelResult:
        self.calls.append(level)
        error_rate = 0.0 if level < CAPACITY else 0.01 if level == CAPACITY else 0.05
        return LevelResult(level=level, rps=level, p99_ms=3.0, error_rate=error_rate)


def test_error_rate_breaks_count_as_failures() -> None:
    stack = ErroringStack()
    search = search_max_sustainable(stack, start=100, max_level=10_000, target=SLO, budget_steps=40,
                                    rel_precision=0.001)
    assert search.stop_reason == CONVERGED
    low, high = search.bracket
    assert low <= CAPACITY < high
    for result, passed in zip(search.curve, search.verdicts):
        assert passed == (result.error_rate <= 0.01)
        assert result.p99_ms < SLO.p99_ms  # latency alone never breaks it
    assert not all(search.verdicts)


def test_slo_target_boundaries() -> None:
    target = SloTarget(p99_ms=20.0)
    assert target.passes(LevelResult(level=1, rps=1, p99_ms=20.0, error_rate=0.01))
    assert not target.passes(LevelResult(level=1, rps=1, p99_ms=20.01, error_rate=0.0))
    assert not target.passes(LevelResult(level=1, rps=1, p99_ms=1.0, error_rate=0.0101))
    assert not target.passes(LevelResult(level=1, rps=0, p99_ms=math.nan, error_rate=0.0))
    assert not target.passes(LevelResult(level=1, rps=0, p99_ms=1.0, error_rate=math.nan))
    assert SloTarget(p99_ms=20.0, max_error_rate=0.0).passes(LevelResult(1, 1, 1.0, 0.0))
    with pytest.raises(ValueError):
        SloTarget(p99_ms=0)
    with pytest.raises(ValueError):
        SloTarget(p99_ms=10, max_error_rate=1.0)


def test_integer_levels_for_vus_converge_to_adjacent_integers() -> None:
    max_vus = 37  # p99 breaks the SLO from 38 VUs on

    def measure(vus: float) -> LevelResult:
        assert vus == int(vus)
        return LevelResult(level=vus, rps=vus * 100, p99_ms=10.0 if vus <= max_vus else 80.0, error_rate=0.0)

    search = search_max_sustainable(measure, start=1, max_level=500, target=SLO, budget_steps=20,
                                    rel_precision=1e-9, integer_levels=True)
    assert search.stop_reason == CONVERGED
    assert search.bracket == (37.0, 38.0)
    assert search.answer_rps == 3700.0
    levels = [r.level for r in search.curve]
    assert levels[:7] == [1, 2, 4, 8, 16, 32, 64]
    assert len(levels) == len(set(levels))  # no level measured twice
    # a growth factor below 2 still steps by at least one VU
    slow = search_max_sustainable(measure, start=1, max_level=500, target=SLO, budget_steps=40,
                                  growth=1.2, integer_levels=True)
    assert [r.level for r in slow.curve][:4] == [1, 2, 3, 4]


def test_the_search_is_deterministic_for_a_deterministic_measure() -> None:
    a, _ = run(seed=7)
    b, _ = run(seed=7)
    assert a == b


@pytest.mark.parametrize("kwargs", [
    {"start": 0.0}, {"start": 100.0, "max_level": 50.0}, {"budget_steps": 0}, {"growth": 1.0},
    {"rel_precision": 0.0},
])
def test_bad_arguments_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        run(**kwargs)


def test_a_step_with_any_timeout_fails() -> None:
    """Issue 10 item 4: one request left without an answer breaks the SLO, whatever the share."""
    target = SloTarget(p99_ms=50.0, max_error_rate=0.01)
    assert target.passes(LevelResult(level=1, rps=1, p99_ms=20.0, error_rate=0.001))
    assert not target.passes(LevelResult(level=1, rps=1, p99_ms=20.0, error_rate=0.001, timeouts=1))


def test_the_stored_search_and_the_headroom_name_their_engine(tmp_path, monkeypatch) -> None:
    """Every figure records its engine: an SLO search's record and the generator headroom line."""
    from pgarena.config.profiles import build_config
    from pgarena.load import measure
    from pgarena.load.engines import LoadOutcome
    from pgarena.load.windowrecord import Window
    from pgarena.report.markdown_environment import _headroom
    from pgarena.results.models import Errors, Headroom, Latency
    from tests.fixtures.report_run import sample_results

    class FakeEngine:
        name = "k6"

    def window(engine, spec, duration_s, raw_dir, stem, config):
        out = LoadOutcome(requests=int(spec.rate * duration_s), duration_seconds=duration_s,
                          latency=Latency(avg_ms=1, p50_ms=1, p90_ms=1, p95_ms=1, p99_ms=1 if spec.rate < 400 else 99,
                                          max_ms=99), errors=Errors(), status_codes={"200": int(spec.rate * duration_s)}, dropped=0)
        return Window(out, 0.1, raw_dir / stem)

    monkeypatch.setattr(measure, "run_window", window)
    monkeypatch.setattr("pgarena.config.profiles.default_cpu_sets", lambda: ([0], [1]))
    config = build_config(profile="quick", project_dir=tmp_path, overrides={"slo_p99_ms": 50.0})
    found = measure.search_sustainable(stack="s", workload="static", parameter=None, peak_rps=300.0,
                                       engine=FakeEngine(), config=config, base_url="http://127.0.0.1:1",  # type: ignore[arg-type]
                                       routes={}, run_dir=tmp_path, log=lambda _: None)
    assert found.engine == "k6" and found.answer_level is not None
    results = sample_results()
    results.generator_headroom = Headroom(rps=75000.0, latency_p99_ms=4.5, connections=50, duration_seconds=2.0,
                                          generator_cpu_fraction=0.9, endpoint="trivial", engine="oha")
    assert _headroom(results).startswith("75,000 req/s with oha, p99")
