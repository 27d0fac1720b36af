"""--pool-size 10,50 on crafted data: the option's parsing and refusals, cells per pool size with their own keys
(one pool size keeps the keys of earlier runs), the plan's order, the stack's launch values, the database's
connection limit, and the throughput-by-pool-size table (Markdown, HTML payload and charts)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from pgarena.analysis.poolsize import pool_rows
from pgarena.analysis.ranking import comparable_groups
from pgarena.cli import app
from pgarena.config.profiles import build_config
from pgarena.config.run import RunConfig
from pgarena.config.stackdef import load_stacks
from pgarena.contract.flags import POOL_EXCEEDED
from pgarena.db.connections import pools_refusal
from pgarena.pipeline.interleaved import pool_suffix
from pgarena.pipeline.plan import cells_at_pool, closed_peak, plan_cells
from pgarena.report import poolsize
from pgarena.report.families import families
from pgarena.report.markdown import render_markdown
from pgarena.results.models import PoolStart
from pgarena.stack.launch import stack_values
from tests.conftest import FIXTURE_STACKS
from tests.unit.test_compare import make_cell, make_run
from tests.unit.test_rest_graphql import ranked


def _stack():
    return next(s for s in load_stacks(FIXTURE_STACKS)[0] if s.id == "fixture-good")


# --- the option ------------------------------------------------------------------------------------------

def test_one_pool_size_is_no_dimension_and_several_are(tmp_path):
    one = build_config(project_dir=tmp_path, overrides={"pool_sizes": [20]})
    assert (one.pool_size, one.pool_sizes, one.pool_levels) == (20, [], [20])
    assert build_config(project_dir=tmp_path).pool_levels == [10]
    several = build_config(project_dir=tmp_path, overrides={"pool_sizes": [10, 50]})
    assert (several.pool_size, several.pool_sizes, several.pool_levels) == (10, [10, 50], [10, 50])
    # a resumed run validates its stored config again: the same settings come back
    assert RunConfig.model_validate(several.redacted()) == several


@pytest.mark.parametrize("sizes, message", [
    ([0], "pool sizes from 1 to 10,000 connections, got 0"),
    ([10, 0], "pool sizes from 1 to 10,000 connections, got 10,0"),
    ([20000], "got 20000"),
    ([10, 10], "each pool size once, got 10,10"),
])
def test_bad_pool_sizes_are_refused(tmp_path, sizes, message):
    with pytest.raises(ValueError, match=message):
        build_config(project_dir=tmp_path, overrides={"pool_sizes": sizes})


@pytest.mark.parametrize("value, message", [
    ("abc", "--pool-size must be comma-separated integers, got 'abc'"),
    ("0", "--pool-size: pool sizes from 1 to 10,000 connections, got 0"),
    ("10,10", "--pool-size: each pool size once, got 10,10"),
])
def test_the_cli_refuses_a_bad_pool_size_in_one_line_with_exit_code_2(tmp_path, value, message):
    result = CliRunner().invoke(app, ["run", "--pool-size", value, "--results-dir", str(tmp_path)])
    assert result.exit_code == 2 and message in result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_a_database_too_small_for_the_pools_is_refused_with_its_numbers():
    assert pools_refusal(200, 3, 50, 2) is None
    problem = pools_refusal(100, 3, 50, 2)
    assert problem is not None and "--pool-size 50" in problem and "2 stacks up together" in problem
    assert "need 107" in problem and "leaves 97" in problem
    assert "one stack" in (pools_refusal(60, 3, 60, 1) or "")


# --- the plan --------------------------------------------------------------------------------------------

def test_cells_are_planned_pool_size_by_pool_size_with_their_own_keys(tmp_path):
    config = build_config(project_dir=tmp_path, overrides={
        "pool_sizes": [10, 50], "db_rtt_ms": ["0", "2ms"], "workloads": ["users"], "users_limits": [20],
        "vus": [1, 50]})
    cells = plan_cells(config, _stack(), "oha")
    assert [(c.pool_size, c.db_rtt_ms, c.vus) for c in cells] == [
        (10, 0.0, 1), (10, 0.0, 50), (10, 2.0, 1), (10, 2.0, 50),
        (50, 0.0, 1), (50, 0.0, 50), (50, 2.0, 1), (50, 2.0, 50)]
    assert len({c.key for c in cells}) == 8 and cells[-1].key[-2:] == ("rtt=2ms", "pool=50")
    assert [c.vus for c in cells_at_pool(cells, 50)] == [1, 50, 1, 50]
    assert len(comparable_groups(cells)) == 8  # every pool size is its own table


def test_one_pool_size_keeps_the_keys_of_earlier_runs_and_records_the_pool(tmp_path):
    config = build_config(project_dir=tmp_path, overrides={"pool_sizes": [20], "workloads": ["users"],
                                                           "users_limits": [20], "vus": [1]})
    (cell,) = plan_cells(config, _stack(), "oha")
    assert cell.key == ("fixture-good", "users", 20, "closed", "1") and cell.pool_size == 20
    assert cell.pool_dimension is None and cells_at_pool([cell], None) == [cell]
    stored = cell.model_dump(mode="json", exclude={"pool_size", "pool_size_varied"})  # a cell of an older run
    assert type(cell).model_validate(stored).key == cell.key


def test_relative_rates_take_the_peak_of_their_own_pool_size():
    low = ranked(make_cell("a", [100, 101, 99], workload="users", rows=20)).model_copy(
        update={"pool_size": 10, "pool_size_varied": True})
    high = ranked(make_cell("a", [300, 301, 299], workload="users", rows=20)).model_copy(
        update={"pool_size": 50, "pool_size_varied": True})
    assert closed_peak([low, high], "a", "users", 20, pool_size=10) == 100
    assert closed_peak([low, high], "a", "users", 20, pool_size=50) == 300
    assert closed_peak([low, high], "a", "users", 20) is None


def test_the_stack_is_started_with_the_pool_size_it_is_given(tmp_path):
    from pgarena.db.postgres import Database

    config = build_config(project_dir=tmp_path, overrides={"pool_sizes": [10, 50], "workers": 4})
    db = Database(host="127.0.0.1", port=5432, user="u", password="p", name="n", admin_url="postgresql://a@h/n",
                  managed=True)
    first = stack_values(config, db, _stack(), 8000)
    assert (first["pool_size"], first["pool_sizes"]) == ("10", "3,3,2,2")
    other = stack_values(config, db, _stack(), 8000, pool_size=50)
    assert (other["pool_size"], other["pool_size_per_worker"], other["pool_sizes"]) == ("50", "12", "13,13,12,12")


def test_each_pool_size_has_its_own_interleaved_phases():
    assert pool_suffix(None) == "" and pool_suffix(50) == " · pool 50"
    assert "headline · pool 110".endswith(pool_suffix(110)) and not "headline · pool 110".endswith(pool_suffix(10))


# --- the report ------------------------------------------------------------------------------------------

def _at(stack, rps, pool, *, rtt=None, peak=None, flags=()):
    cell = ranked(make_cell(stack, rps, workload="tx", rows=None))
    return cell.model_copy(update={"pool_size": pool, "pool_size_varied": True, "db_rtt_ms": rtt,
                                   "peak_connections": pool if peak is None else peak, "flags": list(flags)})


def _run(cells, starts=None):
    run = make_run("r", cells, config={"pool_size": 10, "pool_sizes": [10, 50]})
    for stack in run.stacks:
        stack.pool_starts = (starts or {}).get(stack.id, [])
    return run


def test_the_table_gives_each_pool_size_its_figure_peak_and_the_ratio_with_its_interval():
    run = _run([_at("pgx", [1000, 1010, 990], 10), _at("pgx", [1500, 1520, 1480], 50),
                _at("libpq", [600, 610, 590], 10), _at("libpq", [590, 600, 610], 50, peak=31)])
    pools, rows = pool_rows(run)
    assert pools == [10, 50] and [r.stack for r in rows] == ["pgx", "libpq"]
    ratio, low, high = rows[0].ratio  # type: ignore[misc]
    assert round(ratio, 2) == 1.5 and 1 < low < ratio < high
    assert rows[1].ratio[1] < 1 < rows[1].ratio[2]  # type: ignore[index]
    text = poolsize.section(run)
    assert "| pgx | tx | 50 (oha) | 1,000 (990–1,010), peak 10 | 1,500 (1,480–1,520), peak 50 | 1.50× (" in text
    assert "| Stack | Workload | VUs | pool size 10 | pool size 50 | pool 50 / pool 10 |" in text
    markdown = render_markdown(run)
    assert "## Throughput by pool size" in markdown and "tx — 50 Virtual Users, pool size 50 configured" in markdown


def test_a_stack_that_held_more_than_its_pool_gets_no_figure_at_that_pool_size():
    run = _run([_at("hog", [1000, 1010, 990], 10, peak=14, flags=[POOL_EXCEEDED]),
                _at("hog", [1500, 1520, 1480], 50, peak=14)])
    (row,) = pool_rows(run)[1]
    assert row.points[10].rps is None and row.points[10].within_pool is False and row.ratio is None
    assert row.points[50].within_pool is True
    text = poolsize.section(run)
    assert "| hog | tx | 50 (oha) | – (held 14: pool-exceeded) | 1,500 (1,480–1,520), peak 14 | – |" in text
    assert "pool size 10, peak" not in text


def test_with_several_round_trips_each_has_its_own_pool_size_table():
    run = _run([_at("pgx", [1000, 1001, 999], 10, rtt=0.0), _at("pgx", [1200, 1201, 1199], 50, rtt=0.0),
                _at("pgx", [300, 301, 299], 10, rtt=2.0), _at("pgx", [900, 901, 899], 50, rtt=2.0)])
    text = poolsize.section(run)
    assert "### Throughput by pool size, database 0 ms away" in text
    assert "### Throughput by pool size, database 2 ms away" in text
    assert text.index("1.20×") < text.index("3.00×")


def test_the_html_payload_and_charts_and_each_start_of_each_stack():
    starts = {"pgx": [PoolStart(pool_size=10, startup_seconds=0.2, peak_connections=10),
                      PoolStart(pool_size=50, startup_seconds=0.3, verified={"tx": True}, peak_connections=50)]}
    run = _run([_at("pgx", [1000, 1010, 990], 10), _at("pgx", [1500, 1520, 1480], 50)], starts)
    payload = poolsize.payload(run)
    assert payload["pools"] == [10, 50] and payload["groups"][0]["title"] is None
    assert [p["rps"] for p in payload["groups"][0]["rows"][0]["points"]] == [1000.0, 1500.0]
    assert payload["starts"] == ["pgx: pool 10: started, healthy after 0.20 s, held at most 10; pool 50: restarted, "
                                 "healthy after 0.30 s, then tx ✅, held at most 50"]
    (figure,) = poolsize.figures(run, {"pgx": "#1f77b4"})
    trace = figure["data"][1]
    assert trace["x"] == [10, 50] and trace["y"] == [1000.0, 1500.0] and figure["layout"]["xaxis"]["tickvals"] == [10, 50]
    assert [f.title for f in families(run.cells)] == ["tx · pool size 10", "tx · pool size 50"]
    assert "Each start of each stack" in poolsize.section(run)


def test_a_run_with_one_pool_size_has_no_pool_size_section():
    run = make_run("r", [ranked(make_cell("a", [100, 101, 99]))])
    assert poolsize.section(run) == "" and poolsize.payload(run)["groups"] == [] and poolsize.figures(run, {}) == []
    assert "pool size 10 connections per stack" in render_markdown(run)


def test_compare_names_a_pool_size_dimension_but_not_its_absence_in_older_runs():
    from pgarena.analysis.compare import cell_label, environment_differences

    cells = [ranked(make_cell("a", [100, 101, 99]))]
    older, single = make_run("a", cells), make_run("b", cells, config={"pool_sizes": []})
    several = make_run("c", cells, config={"pool_sizes": [10, 50]})
    assert not any("pool_sizes" in d.what for d in environment_differences(older, single)[0])
    assert any(d.what == "config.pool_sizes" for d in environment_differences(single, several)[0])
    assert cell_label(_at("pgx", [1, 2, 3], 50)) == "pgx · tx · 50 VUs · pool 50"


def test_the_round_trip_and_cost_tables_keep_pool_sizes_apart():
    from pgarena.report.markdown_costs import cost_section
    from pgarena.report.network import rtt_section

    run = _run([_at("pgx", [1000, 1001, 999], 10, rtt=0.0), _at("pgx", [1200, 1201, 1199], 50, rtt=0.0),
                _at("pgx", [300, 301, 299], 10, rtt=2.0), _at("pgx", [900, 901, 899], 50, rtt=2.0)])
    text = rtt_section(run)
    assert "| pgx | tx | 50 (oha, pool size 10) | 1,000 (1.00×) | 300 (0.30×) |" in text
    assert "| pgx | tx | 50 (oha, pool size 50) | 1,200 (1.00×) | 900 (0.75×) |" in text
    cost = cost_section(run)
    labels = [line.split(" | ")[0].removeprefix("| ") for line in cost.splitlines() if line.startswith("| tx")]
    assert labels == ["tx @ 50 VUs, pool size 10, database 0 ms away", "tx @ 50 VUs, pool size 10, database 2 ms away",
                      "tx @ 50 VUs, pool size 50, database 0 ms away", "tx @ 50 VUs, pool size 50, database 2 ms away"]
