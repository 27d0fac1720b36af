"""scripts/headline_reach.py on a stored run: each open neighbouring pair of the headline with the rounds it would
need, in its table and alone, then the minutes of rounds for more of them; a folder without results is one line and
exit code 2."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from pgarena.analysis.ranking import headline_key
from pgarena.analysis.verdicts import run_verdicts
from pgarena.results.store import save
from tests.conftest import script_module
from tests.fixtures.report_run import sample_results

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "headline_reach.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_an_open_pair_gets_its_rounds_and_the_table_its_minutes(tmp_path):
    results = sample_results()
    # without its 50-VU cells the sample's headline is perf-test at 1 VU, the table whose pairs are all paired
    results.cells = [c for c in results.cells if not (c.workload == "perf-test" and c.vus == 50)]
    cell = next(c for c in results.cells if c.stack == "node-wrong" and c.workload == "perf-test" and c.vus == 1)
    for rep, rps in zip(cell.repetitions, (1560.0, 1390.0, 1530.0)):  # close to py-steady, and scattered: open
        rep.rps = rps
    save(results, tmp_path)
    verdict = next(v for v in run_verdicts(results).values() if v.inference is not None and v.pairs)
    pair = next(p for p in verdict.pairs if {p.upper, p.lower} == {"py-steady", "node-wrong"})
    assert pair.status == "not resolved"
    done = _run(str(tmp_path))
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith(f"  {pair.upper} / {pair.lower} | "))
    half, most, alone = re.search(r"\| (\d+) / (\d+) \| (\d+)$", line).groups()  # type: ignore[union-attr]
    assert int(half) < int(most) and int(alone) == pair.alone
    assert int(alone) <= int(most)  # one pair pays for one claim, not for every pair of the table
    still_open = sum(p.status == "not resolved" for p in verdict.pairs)
    assert done.stdout.splitlines()[-1].startswith(
        f"  {still_open} more pair(s), 2 of 2: each resolved in half of runs after ")


def test_the_headline_is_the_reports_first_table_not_the_first_in_the_document(tmp_path):
    results = sample_results()
    headline = headline_key(results.cells, results.config.get("workloads"))
    # a cell that failed verification is stored when planned, before the headline's (bench21, 2026-11-29)
    later = [c for c in results.cells if c.key[1:] != headline]
    results.cells = later + [c for c in results.cells if c.key[1:] == headline]
    save(results, tmp_path)
    verdict = next(v for v in run_verdicts(results).values() if v.cells[0].key[1:] == headline)
    first = next(v for v in run_verdicts(results).values() if v.inference is not None and v.pairs)
    assert first is not verdict, "the sample would not tell the two apart"
    done = _run(str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert f"the headline's {len(verdict.pairs)} neighbouring pairs" in done.stdout.splitlines()[0]
    assert f"after {verdict.rounds} rounds" in done.stdout.splitlines()[0]


def test_a_folder_without_results_is_one_line_and_exit_2(tmp_path):
    done = _run(str(tmp_path))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert _run().returncode == 2


@pytest.fixture(scope="module")
def script():
    yield from script_module("headline_reach")


def test_the_pairs_are_added_cheapest_first_and_a_pair_never_reached_stays_never(script):
    """Each stack is measured until the last pair it belongs to is reached, so a stack in two pairs counts once, at
    the larger need; a pair that four fifths of runs never resolve (inf) makes that column never from there on."""
    more_windows = script.more_windows
    had = {"a": 5, "b": 5, "c": 5, "d": 5}
    needs = [(30, float("inf"), "c", "d"), (10, 20, "a", "b"), (12, 25, "b", "c")]
    assert more_windows(needs, had) == [
        (5 + 5, 15 + 15),  # a and b to 10 (and 20) rounds
        (5 + 7 + 7, 15 + 20 + 20),  # b and c to 12 (25): b counted once, at its larger need
        (5 + 7 + 25 + 25, float("inf")),  # c and d to 30; the four-fifths column never from here
    ]
    assert more_windows([], had) == []
