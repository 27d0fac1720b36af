"""The exact merge of several k6 processes' outputs (load/merge.py) and the pieces of a distributed window
that need no process (load/distributed.py): segments, commands, the generator-bound figure."""

from __future__ import annotations

import csv
import gzip
import json
import statistics
from pathlib import Path

import pytest

from pgarena.config.profiles import build_config
from pgarena.load.distributed import GeneratorPlace, execution_segments, place_run
from pgarena.load.engines.base import EngineOutputError, LoadSpec
from pgarena.load.engines.k6 import K6Engine, parse_k6_summary
from pgarena.load.merge import PlaceCounts, PlaceOutput, merge, read_latency_samples, summary_counts
from pgarena.load.summary import generator_cpu_fraction
from pgarena.results.models import DistributedLoad, Errors, GeneratorFigures, Latency, Repetition

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "k8s"


def _counts(answered: int, non_2xx: int = 0, timeout: int = 0, duration_s: float = 2.0, dropped=None) -> PlaceCounts:
    return PlaceCounts(answered_2xx=answered, errors=Errors(non_2xx=non_2xx, timeout=timeout), checks_total=0,
                       checks_failed=0, dropped=dropped, duration_s=duration_s)


def _p99(values: list[float]) -> float:
    """p99 by linear interpolation between closest ranks, computed here independently of pgarena."""
    ordered = sorted(values)
    position = 0.99 * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def test_counts_are_summed_and_latency_comes_from_the_union():
    fast = PlaceOutput("gen1", _counts(1000), [1.0 + i / 1000 for i in range(1000)])
    slow = PlaceOutput("gen2", _counts(95, non_2xx=5, duration_s=2.1), [100.0 + i for i in range(100)])
    merged = merge([fast, slow])
    out = merged.outcome
    assert (out.requests, out.answered_2xx, out.errors.non_2xx) == (1100, 1095, 5)
    assert out.duration_seconds == 2.1  # the longest place's run
    union = [*fast.latencies_ms, *slow.latencies_ms]
    assert out.latency.p99_ms == pytest.approx(_p99(union), abs=1e-9)
    assert out.latency.max_ms == 199.0 and out.latency.avg_ms == pytest.approx(statistics.fmean(union))
    assert [p.name for p in merged.places] == ["gen1", "gen2"]
    assert merged.places[1].p99_ms == pytest.approx(_p99(slow.latencies_ms))


def test_averaging_the_places_percentiles_would_be_wrong():
    # 1,000 fast requests on one generator, 10 slow ones on the other: 99 % of all requests took 1 ms, so the
    # p99 of the requests is 1 ms; the mean of the two generators' p99s is about 50 ms
    parts = [PlaceOutput("gen1", _counts(1000), [1.0] * 1000), PlaceOutput("gen2", _counts(10), [100.0] * 10)]
    merged = merge(parts)
    naive = statistics.fmean(p.p99_ms for p in merged.places)
    assert merged.outcome.latency.p99_ms == 1.0
    assert naive == pytest.approx(50.5)


def test_failed_requests_mark_the_figures_they_reach_as_lower_bounds():
    parts = [PlaceOutput("gen1", _counts(98), [2.0] * 98), PlaceOutput("gen2", _counts(0, timeout=2), [2000.0] * 2)]
    latency = merge(parts).outcome.latency
    assert latency.censored == ["avg_ms", "p99_ms", "max_ms"] and latency.p99_ms == 2000.0


def test_a_generator_that_sent_nothing_is_merged_and_one_without_answers_anywhere_is_an_error():
    merged = merge([PlaceOutput("gen1", _counts(10), [3.0] * 10), PlaceOutput("gen2", _counts(0), [])])
    assert merged.outcome.requests == 10 and merged.places[1].p99_ms is None
    with pytest.raises(EngineOutputError, match="no HTTP response"):
        merge([PlaceOutput("gen1", _counts(0, timeout=3), [10.0] * 3)])


def test_samples_that_do_not_match_the_summary_are_refused():
    with pytest.raises(EngineOutputError, match="3 pgarena_latency samples for 4 requests"):
        merge([PlaceOutput("gen1", _counts(4), [1.0, 2.0, 3.0])])


def test_dropped_iterations_are_summed_and_stay_unknown_when_no_generator_reports_them():
    parts = [PlaceOutput("a", _counts(5, dropped=3), [1.0] * 5), PlaceOutput("b", _counts(5, dropped=4), [1.0] * 5)]
    assert merge(parts).outcome.dropped == 7
    assert merge([PlaceOutput("a", _counts(5), [1.0] * 5)]).outcome.dropped is None


def _write_csv(path: Path, rows: list[list[str]]) -> None:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["metric_name", "timestamp", "metric_value", "error_code", "status", "extra_tags", "metadata"])
        writer.writerows(rows)


@pytest.mark.parametrize("name", ["samples.k6.csv", "samples.k6.csv.gz"])
def test_latency_samples_are_read_from_k6_csv(tmp_path, name):
    path = tmp_path / name
    _write_csv(path, [["http_reqs", "1", "1.000000", "", "200", "", ""],
                      ["pgarena_latency", "1", "1.500000", "", "200", "", ""],
                      ["pgarena_latency_other", "1", "9.000000", "", "", "", ""],
                      ["pgarena_latency", "2", "10000.000000", "1050", "0", "", ""]])
    assert read_latency_samples(path) == [1.5, 10000.0]


def test_a_file_that_is_not_k6_csv_is_an_error(tmp_path):
    (tmp_path / "x.csv").write_text("a,b,c\n")
    with pytest.raises(EngineOutputError, match="not k6's CSV output"):
        read_latency_samples(tmp_path / "x.csv")
    with pytest.raises(EngineOutputError, match="missing"):
        read_latency_samples(tmp_path / "absent.csv")
    _write_csv(tmp_path / "bad.csv", [["pgarena_latency", "1", "fast", "", "200", "", ""]])
    with pytest.raises(EngineOutputError, match="line 2"):
        read_latency_samples(tmp_path / "bad.csv")


def test_one_generator_merged_alone_equals_k6s_own_summary():
    """tests/fixtures/k8s/single: one real k6 1.1.0 window with its raw samples (record.py). Counts are the
    summary's; percentiles agree within k6's CSV rounding (6 decimals of a millisecond)."""
    summary = json.loads((FIXTURES / "single" / "single-gen1.k6-summary.json").read_text())
    samples = read_latency_samples(FIXTURES / "single" / "single-gen1.k6.csv.gz")
    merged = merge([PlaceOutput("gen1", summary_counts(summary), samples)]).outcome
    own = parse_k6_summary(summary)
    assert (merged.requests, merged.status_codes, merged.errors) == (own.requests, own.status_codes, own.errors)
    assert merged.requests > 100
    for field in ("avg_ms", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "max_ms"):
        assert getattr(merged.latency, field) == pytest.approx(getattr(own.latency, field), abs=1e-5), field


def test_execution_segments_are_k6_operators():
    assert execution_segments(1) == [("0:1", "0,1")]
    assert execution_segments(2) == [("0:1/2", "0,1/2,1"), ("1/2:1", "0,1/2,1")]
    assert [s for s, _ in execution_segments(3)] == ["0:1/3", "1/3:2/3", "2/3:1"]
    with pytest.raises(ValueError):
        execution_segments(0)


def test_a_place_runs_the_single_generators_command_with_its_segment_behind_its_prefix(tmp_path):
    engine = K6Engine()
    engine._binary = Path("/opt/k6")
    spec = LoadSpec(url="http://10.1.0.2:8080/api/static", method="GET", connections=50, duration_s=2, timeout_s=10)
    place = GeneratorPlace("gen2", argv_prefix=("ip", "netns", "exec", "pga-x-gen2"))
    run = place_run(engine, spec, tmp_path, "cell-rep1", place, "1/2:1", "0,1/2,1", "127.0.0.1:7000")
    single = engine.command(spec, tmp_path, "cell-rep1-gen2")
    assert run.argv[:4] == ["ip", "netns", "exec", "pga-x-gen2"]
    assert run.argv[4:4 + len(single) - 1] == single[:-1] and run.argv[-1] == single[-1]
    added = run.argv[4 + len(single) - 1:-1]
    assert added[:4] == ["--execution-segment=1/2:1", "--execution-segment-sequence=0,1/2,1", "--paused",
                         "--address=127.0.0.1:7000"]
    assert ["--out", f"csv={tmp_path / 'cell-rep1-gen2.k6.csv.gz'}"] == added[-2:]
    assert run.summary == engine.raw_output(tmp_path, "cell-rep1-gen2")


def test_several_generators_need_k6(tmp_path):
    with pytest.raises(ValueError, match="--generators 2 needs --engine k6"):
        build_config(project_dir=tmp_path, overrides={"generators": 2, "engine": "oha"})
    assert build_config(project_dir=tmp_path, overrides={"generators": 2, "engine": "k6"}).generators == 2


def _rep(places: list[tuple[str, list[int] | None, float | None]]) -> Repetition:
    figures = [GeneratorFigures(name=f"g{i}", host=host, segment="0:1", requests=1, failures=0, answered_2xx=1,
                                duration_seconds=2.0, rps=0.5, latency_p50_ms=1.0, latency_p99_ms=1.0,
                                cpu_seconds=cpu, cpus=cpus, clock_offset_seconds=0.0)
               for i, (host, cpus, cpu) in enumerate(places)]
    return Repetition(index=1, requests=2, duration_seconds=2.0, rps=1.0, latency=Latency(
        avg_ms=1, p50_ms=1, p90_ms=1, p95_ms=1, p99_ms=1, max_ms=1), errors=Errors(), status_codes={"2xx": 2},
        stack_cpu_seconds=None, db_cpu_seconds=None, stack_rss_peak_bytes=None, generator_cpu_seconds=None,
        raw_output="x", generators=DistributedLoad(places=figures, start="s", merge="m"))


def test_generators_on_one_cpu_share_it_and_other_hosts_are_judged_apart(tmp_path):
    config = build_config(project_dir=tmp_path, overrides={"engine": "k6", "generator_cpus": [0]})
    # two processes on CPU 0 at 0.9 s each over 2 s: the CPU was 90 % busy, not 45 %
    assert generator_cpu_fraction([_rep([("local", [0], 0.9), ("local", [0], 0.9)])], 2.0, config) == 0.9
    # a host whose CPU was not measured is left out, not counted as idle
    assert generator_cpu_fraction([_rep([("local", [0], 0.5), ("far", None, None)])], 2.0, config) == 0.25
    assert generator_cpu_fraction([_rep([("far", None, None)])], 2.0, config) is None
