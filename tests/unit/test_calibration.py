"""`pgarena calibrate`'s parts without load: the copies it writes (pipeline/calibrate.py), the A/A check
(analysis/calibration.py) and its report (report/calibration.py)."""

from __future__ import annotations

import math

import pytest

from pgarena.analysis.calibration import aa_check, resolution
from pgarena.config.stackdef import load_stacks
from pgarena.pipeline.calibrate import copy_ids, write_copies
from pgarena.report.calibration import calibration_markdown, verdict_line
from tests.conftest import FIXTURE_STACKS, PROJECT_DIR
from tests.fixtures.report_run import cell, sample_results


@pytest.fixture
def detectable_ratio():
    """The verdict's own smallest resolvable ratio."""
    from pgarena.analysis.sequential import detectable_ratio as real

    return real


def test_copies_extend_the_original_and_build_and_run_it_in_its_folder(tmp_path):
    original = next(s for s in load_stacks(PROJECT_DIR / "stacks")[0] if s.id == "go-nethttp-pgx-simple")
    ids = write_copies(original, 3, tmp_path)
    assert ids == copy_ids("go-nethttp-pgx-simple", 3) == [f"go-nethttp-pgx-simple-aa{i}" for i in (1, 2, 3)]
    stacks, errors = load_stacks(tmp_path)
    assert errors == [] and [s.id for s in stacks] == ids
    for copy in stacks:
        d = copy.definition
        assert copy.directory == tmp_path / copy.id  # the copies live in the calibration's folder ...
        assert d.workloads == original.definition.workloads and d.notes == original.definition.notes
        assert d.run.env == original.definition.run.env and d.source_globs == []
        # ... and build and run the original, where it is, so `../go-nethttp-pgx` and ${stack_dir} still mean it
        assert d.build.command.startswith(f"cd {original.directory} && go -C ../go-nethttp-pgx build")
        assert "${stack_dir}" not in d.build.command and f'"{original.directory}/bin/server"' in d.build.command
        assert d.run.command == f"cd {original.directory} && {original.definition.run.command}"
        assert d.title.endswith(f"(A/A copy {ids.index(copy.id) + 1} of 3)")
    assert not any(p.name.endswith("-aa1") for p in (PROJECT_DIR / "stacks").iterdir())


def test_a_stack_dir_in_the_environment_means_the_originals_folder(tmp_path):
    source = tmp_path / "src" / "app"
    source.mkdir(parents=True)
    (source / "stack.toml").write_text(
        'id = "app"\ntitle = "App"\nlanguage = "Python"\nframework = "x"\nframework_version = "1"\ndriver = "y"\n'
        'driver_version = "1"\nserver = "z"\npooler = "none"\nprepared_statements = false\nworkloads = ["static"]\n'
        '[run]\ncommand = "python3 ${stack_dir}/server.py"\n[run.env]\nAPP_HOME = "${stack_dir}/home"\nOTHER = "1"\n')
    original = load_stacks(tmp_path / "src")[0][0]
    write_copies(original, 2, tmp_path / "copies")
    copy = load_stacks(tmp_path / "copies")[0][0]
    assert copy.definition.build is None
    assert copy.definition.run.command == f"cd {source} && python3 {source}/server.py"
    assert copy.definition.run.env == {"APP_HOME": f"{source}/home", "OTHER": "1"}


def _aa_results(rps_by_copy: dict[str, list[float]], unit: list[float] | None = None):
    results = sample_results()
    results.cells = [cell(stack, "static", None, 50, values, 5.0, connections=5) for stack, values in rps_by_copy.items()]
    for c in results.cells:
        for rep in c.repetitions:
            if unit is not None:
                rep.reference_unit_ns, rep.reference_samples = unit[rep.index], 20
    return results


def test_identical_copies_pass_and_the_report_says_how_noisy_and_what_it_resolves():
    rounds = [1000 * math.exp(0.1 * math.sin(r)) for r in range(8)]  # the machine drifts; copies follow it
    jitter = {"a": [0.01, -0.02, 0.0, 0.015, -0.01, 0.02, -0.005, 0.0], "b": [-0.01, 0.01, 0.02, -0.02, 0.0, 0.005, 0.01, -0.01],
              "c": [0.0, 0.01, -0.02, 0.005, 0.01, -0.015, -0.005, 0.01]}
    data = {s: [v * math.exp(j[r]) for r, v in enumerate(rounds)] for s, j in jitter.items()}
    check = aa_check(_aa_results(data), ["a", "b", "c"], seconds_per_window=3.0)
    assert check.passed and len(check.tables) == 1
    table = check.tables[0]
    assert [(p.a, p.b) for p in table.pairs] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert all(p.low < 1 < p.high and p.rounds == 8 for p in table.pairs)
    assert table.budget.windows == 24 and table.budget.rounds == 8
    assert check.window_log_sd == table.budget.window_log_sd and check.window_log_sd < 0.03
    assert sorted({r.stacks for r in check.resolution}) == [3, 20]  # this table's size and the headline's
    three = {r.rounds: r for r in check.resolution if r.stacks == 3}
    assert three[40].ratio < three[10].ratio < three[5].ratio  # more rounds resolve smaller differences ...
    assert three[10].seconds == 3 * 10 * 3.0
    twenty = {r.rounds: r for r in check.resolution if r.stacks == 20}
    assert twenty[10].ratio > three[10].ratio  # ... and more claims need a larger one
    text = calibration_markdown(check, stack="go-nethttp-pgx", run_dir="results/x/run", hostname="vm")
    assert text.startswith("# pgarena calibrate — vm")
    assert "**PASSED: no order was claimed among the 3 identical copies in 1 table(s).**" in text
    assert "| static · 50 VUs · oha | 24 | 8 |" in text and "| a / b |" in text and "❌" not in text
    assert f"| 10 | {three[10].ratio:.2f}× · 2 min | {twenty[10].ratio:.2f}× · 10 min |" in text


def test_a_claimed_order_among_copies_fails_the_check():
    data = {"a": [1000, 1010, 990, 1005], "b": [1300, 1310, 1290, 1302]}  # a 30 % gap between "copies"
    check = aa_check(_aa_results(data), ["a", "b"], seconds_per_window=3.0)
    assert not check.passed
    assert [(p.a, p.b) for p in check.tables[0].claims] == [("a", "b")]
    line = verdict_line(check)
    assert line.startswith("FAILED: 1 order(s) claimed among identical copies") and "a / b = 0.77" in line
    assert "❌ order claimed" in calibration_markdown(check, stack="s", run_dir="r", hostname="h")


def test_the_probe_adjusted_noise_sets_the_resolution_when_read():
    rounds = 12
    speed = [0.15 * math.sin(1.7 * i) for i in range(rounds * 2)]
    data = {s: [1000 * math.exp(-speed[2 * r + k] + 0.005 * ((r * 7 + k) % 3 - 1)) for r in range(rounds)]
            for k, s in enumerate(("a", "b"))}
    results = _aa_results(data)
    for k, c in enumerate(results.cells):
        for rep in c.repetitions:
            rep.reference_unit_ns = 5e5 * math.exp(speed[2 * rep.index + k])
    check = aa_check(results, ["a", "b"], seconds_per_window=2.0)
    pooled = check.pooled
    assert pooled.adjusted_window_log_sd is not None and pooled.adjusted_window_log_sd < pooled.window_log_sd / 3
    assert check.window_log_sd == pooled.adjusted_window_log_sd


def test_resolution_uses_one_claim_per_pair_of_stacks(detectable_ratio):
    rows = resolution(0.2, 2.0, rounds=(10,), stacks=(4, 20))
    assert [r.ratio for r in rows] == [detectable_ratio(0.2, 10, 6), detectable_ratio(0.2, 10, 190)]
    assert [r.seconds for r in rows] == [80.0, 400.0]


def test_the_fixture_stacks_can_be_copied(tmp_path):
    original = next(s for s in load_stacks(FIXTURE_STACKS)[0] if s.id == "fixture-good")
    write_copies(original, 2, tmp_path)
    assert [s.id for s in load_stacks(tmp_path)[0]] == ["fixture-good-aa1", "fixture-good-aa2"]


def _identical(rounds: int, sd: float, copies: str = "abc", seed: int = 5) -> dict[str, list[float]]:
    import random

    scatter = random.Random(seed)
    return {s: [1000 * scatter.lognormvariate(0, sd) for _ in range(rounds)] for s in copies}


def test_the_check_is_sharp_only_when_every_interval_lies_within_the_margin():
    sharp = aa_check(_aa_results(_identical(40, 0.01)), ["a", "b", "c"], seconds_per_window=3.0)
    assert sharp.passed and sharp.sharp and sharp.wide == [] and sharp.margin == 0.1
    text = calibration_markdown(sharp, stack="s", run_dir="r", hostname="h")
    assert "Sharp: every one of the 3 copy-vs-copy intervals lies within ±10 % (0.91–1.10)." in text
    assert text.count("no order, within ±10 %") == 3

    wide = aa_check(_aa_results(_identical(6, 0.08)), ["a", "b", "c"], seconds_per_window=3.0)
    assert wide.passed and not wide.sharp and wide.wide  # no order, but not within ±10 % either
    line = next(line for line in calibration_markdown(wide, stack="s", run_dir="r", hostname="h").splitlines()
                if line.startswith("Not sharp: "))
    assert f"{len(wide.wide)} of 3 copy-vs-copy intervals reach beyond ±10 % (0.91–1.10), the widest" in line
    assert "no order, wider than ±10 %" in calibration_markdown(wide, stack="s", run_dir="r", hostname="h")


def test_copies_left_out_of_the_ranking_are_named_and_no_pair_of_theirs_is_read():
    """aa10-1's static @ 50 VUs: three copies generator-bound, so the check read no pair there; the report
    said nothing, an empty table. Now it names them, and the check is not sharp for that table."""
    results = _aa_results(_identical(20, 0.01))
    for c in results.cells[:2]:
        c.flags = ["generator-bound"]
    check = aa_check(results, ["a", "b", "c"], seconds_per_window=3.0)
    table = check.tables[0]
    assert table.left_out == ["a (generator-bound)", "b (generator-bound)"] and table.pairs == []
    assert check.passed and not check.sharp
    text = calibration_markdown(check, stack="s", run_dir="r", hostname="h")
    assert "Left out of the ranking, so of this check: a (generator-bound), b (generator-bound)." in text
    assert "Not sharp: no pair was read in static · 50 VUs · oha" in text and "| pair |" not in text


def test_the_time_per_window_is_the_runs_measured_one_when_recorded():
    from pgarena.results.models import PhaseRecord, ScheduleRecord

    data = {"a": [1000, 1010, 990, 1005, 1000], "b": [1002, 995, 1008, 1000, 997]}
    results = _aa_results(data)
    results.config = {**results.config, "duration_seconds": 1.0}
    results.schedule = ScheduleRecord(kind="interleaved", rewarm_seconds=0.5)
    configured = aa_check(results, ["a", "b"])
    assert configured.seconds_per_window == 1.5 and not configured.slot_measured
    assert "1.5 s per window (window and re-warm; what happens between windows was not measured" in \
        calibration_markdown(configured, stack="s", run_dir="r", hostname="h")
    # two phases: their measured slots weighted by their windows, not the configured 1.5 s
    results.schedule.phases = [PhaseRecord(name="headline", cells=1, windows=30, slot_seconds=2.0),
                               PhaseRecord(name="closed", cells=2, windows=10, slot_seconds=3.0)]
    measured = aa_check(results, ["a", "b"])
    assert measured.slot_measured and measured.seconds_per_window == pytest.approx(2.25)
    assert {r.rounds: r.seconds for r in measured.resolution if r.stacks == 2}[10] == pytest.approx(2 * 10 * 2.25)
    assert "2.25 s of wall time per window, measured" in calibration_markdown(measured, stack="s", run_dir="r",
                                                                              hostname="h")


def test_a_copy_left_out_for_want_of_an_interval_says_so_not_ok():
    results = _aa_results(_identical(20, 0.01))
    results.cells[0].summary.rps_interval = None  # e.g. one window only
    results.cells[1].flags = ["demonstration"]
    table = aa_check(results, ["a", "b", "c"], seconds_per_window=3.0).tables[0]
    assert table.left_out == ["a (no interval: 20 windows)", "b (demonstration)"]


def test_tables_the_budget_left_out_are_named_in_the_check():
    check = aa_check(sample_results(), ["go-fast", "py-steady"])
    assert "no check of them here" not in calibration_markdown(check, stack="s", run_dir="r", hostname="h")
    text = calibration_markdown(check, stack="s", run_dir="r", hostname="h",
                                not_measured="1 table(s) not measured: the time budget was spent before their least "
                                             "rounds (static @ 50 VUs)")
    assert ("1 table(s) not measured: the time budget was spent before their least rounds (static @ 50 VUs): no check "
            "of them here.") in text
