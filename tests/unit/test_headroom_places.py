"""The generator headroom per generator place (issue 22 item 5): measured with the run's places together,
each place's part and CPU recorded, "not measured" where its CPU cannot be read (another machine)."""

from __future__ import annotations

import pytest

from pgarena.load.headroom import place_headroom
from pgarena.results.models import DistributedLoad, GeneratorFigures, Headroom
from tests.unit.test_compare import make_cell, make_run


def _figures(name: str, host: str, requests: int, cpu_seconds: float | None, cpus: list[int] | None):
    return GeneratorFigures(name=name, host=host, segment="0:1/3", requests=requests, failures=0,
                            answered_2xx=requests, duration_seconds=10.0, rps=requests / 10, latency_p50_ms=1.0,
                            latency_p99_ms=2.0, cpu_seconds=cpu_seconds, cpus=cpus, clock_offset_seconds=0.0)


def _headroom(**update) -> Headroom:
    base = Headroom(rps=30_000.0, latency_p99_ms=3.0, connections=50, duration_seconds=10.0,
                    generator_cpu_fraction=0.5, endpoint="Go net/http", engine="k6")
    return base.model_copy(update=update)


def _load(*figures) -> DistributedLoad:
    return DistributedLoad(places=list(figures), start="paused, resumed together", merge="summed")


def test_two_local_generators_on_one_cpu_share_it_and_a_remote_ones_cpu_is_not_measured():
    load = _load(_figures("gen1", "local", 100_000, 4.5, [0]), _figures("gen2", "local", 98_000, 4.6, [0]),
                 _figures("gen3", "ssh bench@far", 101_000, None, None))
    h = place_headroom(_headroom(), load)
    assert [(p.name, p.rps, p.cpu_fraction) for p in h.places] == [
        ("gen1", 10_000.0, pytest.approx(0.91)), ("gen2", 9_800.0, pytest.approx(0.91)), ("gen3", 10_100.0, None)]
    assert h.generator_cpu_fraction == pytest.approx(0.91), "the two local ones together: 9.1 CPU s of 10"
    assert h.cpu_not_measured == ["gen3"]


def test_only_remote_generators_leave_the_headrooms_cpu_not_measured():
    h = place_headroom(_headroom(), _load(_figures("far", "ssh bench@far", 100_000, None, None)))
    assert h.generator_cpu_fraction is None and h.cpu_not_measured == ["far"]


def test_the_pipeline_measures_the_headroom_with_the_runs_generator_places(tmp_path, monkeypatch):
    from pgarena.config.profiles import build_config
    from pgarena.load.distributed import local_places
    from pgarena.pipeline import baselines
    from pgarena.pipeline.context import RunContext

    seen = []

    def fake(engine, config, run_dir, *, server_prefix, server_host, places):
        seen.append([p.name for p in places])
        return _headroom()

    monkeypatch.setattr(baselines, "measure_headroom", fake)
    config = build_config(project_dir=tmp_path, overrides={"engine": "k6", "generators": 3})
    ctx = RunContext(config=config, engine=None, results=make_run("r", []), run_dir=tmp_path, db=None,  # type: ignore[arg-type]
                     log=lambda _: None, generator_places=local_places(3))
    baselines.generator_headroom(ctx)
    assert seen == [["gen1", "gen2", "gen3"]] and ctx.results.generator_headroom is not None


def _run_with_places(headroom: Headroom):
    cell = make_cell("a", [1000, 1000, 1000])
    for rep in cell.repetitions:
        rep.generators = _load(_figures("gen1", "local", 5000, 1.0, [0]), _figures("gen2", "local", 5000, 1.0, [0]))
    return make_run("r", [cell]).model_copy(update={"generator_headroom": headroom})


def test_the_reports_give_each_places_part_and_say_not_measured_for_another_machines_cpu():
    from pgarena.report.html import html_payload
    from pgarena.report.markdown import render_markdown

    load = _load(_figures("gen1", "local", 100_000, 9.1, [0]), _figures("gen2", "ssh bench@far", 101_000, None, None))
    run = _run_with_places(place_headroom(_headroom(), load))
    text = render_markdown(run)
    assert "measured with the run's 2 generator places together" in text
    assert "gen1 (local, CPU 0): 10,000 req/s, its CPUs 91% busy" in text
    assert "gen2 (ssh bench@far): 10,100 req/s, CPU not measured (another machine)" in text
    assert "Whether gen2 limited the window is not measured" in text
    assert "gen2 (ssh bench@far): 10,100 req/s, CPU not measured" in html_payload(run)["headroom"]["scope"]


def test_older_results_say_their_headroom_was_one_local_generators():
    text = _run_with_places(_headroom()).model_dump_json()
    from pgarena.report.markdown import render_markdown
    from pgarena.results.models import RunResults

    run = RunResults.model_validate_json(text)
    assert ("measured for one local generator only (results from before per-place headroom), while the cells were "
            "driven by 2 generator places together: it is not their headroom") in render_markdown(run)


def test_a_run_with_one_local_generator_renders_its_headroom_without_a_scope():
    from pgarena.report.html import html_payload, render_html

    run = make_run("r", [make_cell("a", [1000, 1000, 1000])]).model_copy(update={"generator_headroom": _headroom()})
    assert html_payload(run)["headroom"]["scope"] is None
    assert "Generator headroom: against a trivial endpoint" in render_html(run) and "headroom-scope" not in render_html(run)
