"""Golden-file test of the Markdown report (the plain-text twin of report.html) on a crafted run.

`pytest tests/unit/test_report_markdown.py --update-golden` rewrites tests/golden/report.md after an
intended change; review the diff before committing it.
"""

from __future__ import annotations

from pathlib import Path

from pgarena.results.models import PhaseRecord
from pgarena.report.markdown import render_markdown
from tests.fixtures.report_run import sample_results

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "report.md"


def test_markdown_report_matches_golden(update_golden):
    text = render_markdown(sample_results())
    if update_golden:
        GOLDEN.write_text(text, encoding="utf-8")
    assert GOLDEN.exists(), "no golden file yet: run with --update-golden"
    assert text == GOLDEN.read_text(encoding="utf-8"), "report.md changed; if intended, rerun with --update-golden"


def test_markdown_shows_ties_noise_slo_sweep_and_cold_start():
    text = render_markdown(sample_results())
    assert "1–2" in text or "2–3" in text, "overlapping intervals must show a rank range"
    assert "| – | – | py-steady |" in text, "an invalid cell is listed without either rank"
    assert "## Max sustainable throughput under the SLO" in text and "| Offered req/s |" in text
    assert "## Cold start" in text and "Generator headroom" in text


def test_markdown_titles_relative_rates_and_prints_lower_bounds():
    """Issue 10 items 4-6: a share of each stack's own peak is titled so and not ranked; a shared rate
    is titled and ranked by p99; a p99 that counts timeouts is printed '≥'; throughput is 2xx/s."""
    text = render_markdown(sample_results())
    assert "### perf-test — open model, 50 % of each stack's own peak, ≤ 100 in flight, 1 Record" in text
    assert "2,000 req/s offered to every stack" in text and "`#` ranks p99 latency" in text
    relative = text.split("50 % of each stack's own peak")[1].split("###")[0]
    assert "| – | go-fast |" in relative and "| 1 | go-fast |" not in relative
    assert "≥ 10,000ms" in text
    assert "| 2xx/s (median) |" in text and "Requests/s (median)" not in text


def test_markdown_says_when_no_open_level_is_shared():
    results = sample_results()
    results.cells = [c for c in results.cells if c.arrival_rate_spec != "2000"]
    assert "No open-model level was shared by every stack" in render_markdown(results)
    assert "No open-model level was shared" not in render_markdown(sample_results())


def test_markdown_states_paired_verdicts_two_ranks_and_the_wrong_columns():
    """Issue 11 items 3-5: paired ratios and sentences, a noisy cell ranked, ❌ columns named."""
    text = render_markdown(sample_results())
    fifty = text.split("### perf-test — 50 Virtual Users, 1 Record")[1].split("###")[0]
    assert "| # exact | # all | Stack | 2xx/s (median) | × best (95 %) | × py-steady (95 %) | DB ceiling |" in fifty
    assert "| 1 | 1 | go-fast | 4,600.00/s | best | 1.53× (1.49–1.56) | 51 % |" in fifty
    assert "| 2 | 2 | py-steady | 3,000.00/s | 0.66× (0.64–0.67) | baseline | 33 % |" in fifty
    assert "| – | – | node-wrong | 2,110.00/s ❌ timestamp_val | – | – | 23 % |" in fifty
    assert "Rank 1: **go-fast**." in fifty and "- go-fast is 1.53× py-steady (1.49–1.56)" in fifty
    assert "node-wrong: measured on its own after the rounds (the schedule says why), so neither ranked nor compared" in fifty
    assert "Bonferroni over the 1 pair(s) of its 2 stacks" in fifty, "the rounds' stacks keep the joint inference"
    one = text.split("### perf-test — 1 Virtual User, 1 Record")[1].split("###")[0]
    assert "Tied for rank 1: **go-fast**, **py-steady**." in one
    assert "- go-fast and py-steady are equivalent within ±10 % (0.98–1.03)" in one


def test_markdown_schedule_and_ceiling_sections():
    """Issue 11 items 5 (the schedule) and 6 (the database ceiling on every cell)."""
    text = render_markdown(sample_results())
    schedule = text.split("## Schedule")[1].split("\n## ")[0]
    assert "Schedule `interleaved`, seed 20261121, 1 s re-warm before each window." in schedule
    assert ("| open | 3 | 12 | 3 | stopped at the round cap (3 rounds) with 1 pair(s) unsettled: "
            "('perf-test', 1, 'open', '2000'): go-fast and py-steady are indistinguishable (0.93–1.08) |") in schedule
    assert "- node-wrong: it listens on the fixed port 3000" in schedule
    assert "- py-steady: 8 % of a CPU" in schedule and "- go-fast: 1 %" not in schedule
    ceiling = text.split("## Database ceiling")[1].split("\n## ")[0]
    assert "| perf-test | rows=1 | direct | 10 | 9,000 | – | 1 | `SELECT * FROM perf_test(16 bound parameters)` |" in ceiling
    assert "| perf-test | rows=1 | direct | 1 | 2,400 | 2,350–2,450 | 3 | `SELECT" in ceiling
    # no ceiling: said, per cell and in the section; static has none at all
    results = sample_results().model_copy(update={"ceilings": [], "ceiling_unavailable": "pgbench not found"})
    static = results.cells[0].model_copy(update={"workload": "static", "parameter": None, "parameter_name": None})
    results.cells.append(static)
    text = render_markdown(results)
    assert "The database ceiling was not measured: pgbench not found." in text
    assert "| not measured |" in text and "| —, no database |" in text


def test_a_sequential_run_keeps_independent_intervals_and_says_so():
    results = sample_results()
    for c in results.cells:
        c.repetitions = [r.model_copy(update={"round": None}) for r in c.repetitions]
    results.schedule = None
    text = render_markdown(results)
    fifty = text.split("### perf-test — 50 Virtual Users, 1 Record")[1].split("###")[0]
    assert "Independent 95 % intervals of the mean 2xx/s (no interleaved rounds)" in fifty
    assert "| 1–2 | 1–2 | go-fast |" in fifty and "Tied for rank 1" in fifty and "| × best |" in fifty
    assert "No schedule was recorded" in text


def test_a_phase_says_whether_its_re_warm_was_the_windows_lead_in():
    from pgarena.report.conditions import _phase_window
    from pgarena.results.models import PhaseRecord

    phase = PhaseRecord(name="headline", cells=1, window_seconds=1.0, rewarm_seconds=0.5)
    assert _phase_window(phase) == "1 s after a 0.5 s re-warm"  # not recorded (older results) or a run of its own
    assert _phase_window(phase.model_copy(update={"rewarm_lead_in": True})) == \
        "1 s after a 0.5 s re-warm in the same generator process"
    assert _phase_window(phase.model_copy(update={"rewarm_lead_in": False})) == "1 s after a 0.5 s re-warm"


def test_tables_the_budget_left_unmeasured_are_named_at_the_top_and_in_the_schedule():
    results = sample_results()
    assert "not measured: the time budget" not in render_markdown(results)
    phases = results.schedule.phases
    phases[1].not_measured = ["users limit20 @ 50 VUs"]
    phases.append(PhaseRecord(name="open · pool 5", cells=1, stop_reason="budget",
                              not_measured=["perf-test rows1 @ 2000/s"]))
    text = render_markdown(results)
    top = text.split("## Results")[0]
    assert ("> 2 table(s) not measured: the time budget was spent before their least rounds (users limit20 @ 50 VUs, "
            "perf-test rows1 @ 2000/s). See Schedule.") in top
    schedule = text.split("## Schedule")[1].split("\n## ")[0]
    assert ("settled after 3 round(s): every adjacent pair ordered or equivalent; 1 table(s) not measured: the time "
            "budget was spent before their least rounds (users limit20 @ 50 VUs)") in schedule
    assert ("| open · pool 5 | 1 | 0 | 0 | not measured: the time budget was spent before its least rounds; 1 "
            "table(s) not measured") in schedule


def test_the_schedule_says_which_windows_had_a_longer_rewarm_after_an_idle_gap():
    from pgarena.report.conditions import _phase_window

    phase = PhaseRecord(name="headline", cells=1, window_seconds=1.0, rewarm_seconds=0.5, rewarm_lead_in=True,
                        idle_rewarm_windows=40, idle_rewarm_seconds=52.0)
    assert _phase_window(phase) == ("1 s after a 0.5 s re-warm in the same generator process; 40 of its windows after "
                                    "an idle gap, 1.3 s more on average")
    results = sample_results()
    results.schedule.idle_rewarm_seconds = 1.5
    results.schedule.phases[0] = results.schedule.phases[0].model_copy(update=phase.model_dump(exclude={"name"}))
    schedule = render_markdown(results).split("## Schedule")[1].split("\n## ")[0]
    assert ("1 s re-warm before each window, up to 1.5 s more after more than 15 s without load (in full after "
            "35 s).") in schedule
    assert "40 of its windows after an idle gap, 1.3 s more on average" in schedule
    assert "in a fresh random order (each stack's cells one after another)" in schedule
    results.schedule.idle_rewarm_seconds = 0.0  # turned off: the rule is not claimed
    assert "without load" not in render_markdown(results).split("## Schedule")[1].split("\n## ")[0]
    results.schedule.idle_rewarm_seconds = None  # results from before it: their rounds shuffled every window as one
    assert "one after another" not in render_markdown(results).split("## Schedule")[1].split("\n## ")[0]
