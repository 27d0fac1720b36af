"""The verdict as a picture (issue 21 item 7): the forest plot of each paired table and `TableVerdict.groups()`."""

from __future__ import annotations

import math

from pgarena.analysis.paired import PairVerdict, RatioInterval
from pgarena.analysis.verdicts import TableVerdict, table_verdict
from pgarena.report.forest import FOREST_ROW_HEIGHT_PX, LABEL_CHAR_PX, forest_figure
from pgarena.report.html import html_payload
from tests.fixtures.report_run import cell, sample_results

ROUND_FACTORS = (1.0, 0.9, 1.1, 0.95)
"""The machine's speed in each round: shared by every stack of the round, so pairing removes it."""


def _pair(upper: str, lower: str, low: float, high: float) -> PairVerdict:
    return PairVerdict(upper, lower, RatioInterval((low * high) ** 0.5, low, high, rounds=4, level=0.95))


def test_groups_join_neighbours_whose_pair_is_not_ordered():
    v = TableVerdict(cells=[], basis="rps", paired=True, rounds=4, pairs=[
        _pair("a", "b", 1.10, 1.30), _pair("b", "c", 0.95, 1.08), _pair("c", "d", 0.97, 1.02),
        _pair("d", "e", 1.20, 1.40), _pair("e", "f", 1.01, 1.05)])
    assert v.groups() == [["a"], ["b", "c", "d"], ["e"], ["f"]]
    assert TableVerdict(cells=[], basis="rps", paired=False, rounds=0).groups() == []
    not_enough = TableVerdict(cells=[], basis="rps", paired=True, rounds=1, pairs=[PairVerdict("a", "b", None)])
    assert not_enough.groups() == [["a", "b"]], "a pair without an interval is not ordered"


def twenty_stacks() -> TableVerdict:
    """20 stacks at 50 VUs in 4 interleaved rounds: every second pair of neighbours equal (not separable), the
    others 8 % apart; one stack with ❌ columns, long names to test the labels."""
    cells = []
    for k in range(20):
        base = 20_000 * 0.92 ** (k // 2)
        jitter = [1 + 0.005 * math.sin(k * 1.7 + r * 2.3) for r in range(4)]
        stack = f"stack-{k:02d}" + "-framework-with-a-long-name" * (k == 13)
        flags = ("columns-wrong",) if k == 7 else ()
        cells.append(cell(stack, "perf-test", 1, 50, [base * f * j for f, j in zip(ROUND_FACTORS, jitter)], 5.0,
                          flags=flags))
    cells.reverse()  # the figure sorts them, not the input order
    wrong = {c.stack: ["json_val"] for c in cells if c.flags and "columns-wrong" in c.flags}
    return table_verdict(cells, wrong_columns=wrong)


def test_forest_rows_are_sorted_by_the_paired_estimate_and_groups_bracketed():
    verdict = twenty_stacks()
    fig = forest_figure(verdict, "perf-test · 1 row · 50 VUs", "t")
    assert fig is not None and fig["kind"] == "forest"
    trace = fig["data"][0]
    assert trace["x"] == sorted(trace["x"], reverse=True) and len(trace["x"]) == 20
    assert trace["x"][0] == 1.0 and trace["customdata"][0] == verdict.best
    minus, plus = trace["error_x"]["arrayminus"], trace["error_x"]["array"]
    assert all(m >= 0 and p >= 0 for m, p in zip(minus, plus)) and sum(m > 0 for m in minus) == 19, \
        "every stack but the best has its interval around its point"
    bands = [s for s in fig["layout"]["shapes"] if s["name"].startswith("group-")]
    brackets = [s for s in fig["layout"]["shapes"] if s["name"].startswith("bracket-")]
    groups = [g for g in verdict.groups() if len(g) > 1]
    assert groups and len(bands) == len(brackets) == len(groups)
    rows = trace["customdata"]
    for band, group in zip(bands, groups):
        inside = {rows[i] for i in range(20) if band["y0"] < i < band["y1"]}
        assert inside == set(group), "a band spans exactly its group's rows"
    labels = fig["layout"]["yaxis"]["ticktext"]
    assert any("❌ json_val" in label for label in labels)


def test_forest_stays_readable_for_20_stacks():
    fig = forest_figure(twenty_stacks(), "perf-test · 1 row · 50 VUs", "t")
    layout = fig["layout"]
    assert layout["height"] >= 20 * FOREST_ROW_HEIGHT_PX, "one row per stack, none squeezed"
    longest = max(len(s) for s in fig["data"][0]["customdata"])
    assert layout["margin"]["l"] >= LABEL_CHAR_PX * longest, "the longest stack name is not cut"
    low, high = (10 ** v for v in layout["xaxis"]["range"])
    assert layout["xaxis"]["type"] == "log" and low < min(fig["data"][0]["x"]) and high > 1


def test_an_interval_past_a_floats_range_runs_to_the_axis_edge():
    from dataclasses import replace

    from pgarena.analysis.verdicts import Ratio

    verdict = twenty_stacks()
    worst = min(verdict.to_best, key=lambda s: verdict.to_best[s].ratio)
    found = verdict.to_best[worst]
    verdict.to_best[worst] = Ratio(found.ratio, replace(found.interval, low=0.0, high=math.inf))
    fig = forest_figure(verdict, "perf-test · 1 row · 50 VUs", "t")
    low, high = fig["layout"]["xaxis"]["range"]
    assert math.isfinite(low) and math.isfinite(high) and low < high
    trace = fig["data"][0]
    row = trace["customdata"].index(worst)
    x = trace["x"][row]
    assert math.isclose(trace["error_x"]["arrayminus"][row], x - 10 ** low, abs_tol=1e-3)
    assert math.isclose(trace["error_x"]["array"][row], 10 ** high - x, abs_tol=1e-3)


def test_the_report_draws_every_paired_table_headline_first():
    payload = html_payload(sample_results())
    entries = payload["forest"]
    assert entries and entries[0]["headline"] and entries[0]["title"] == "perf-test · 1 row · 50 VUs"
    assert [e["headline"] for e in entries].count(True) == 1
    assert {f["id"] for f in payload["sections"]["forest"]} == {e["figure"] for e in entries}
    one_vu = next(e for e in entries if e["title"] == "perf-test · 1 row · 1 VU")
    assert one_vu["groups"] == [["go-fast", "py-steady"], ["node-wrong"]] and "equivalent within ±10 %" in one_vu["sentences"][0]
    assert all(e["title"] != "tx · 50 VUs" for e in entries), "tx: one stack in the field, nothing to compare"
