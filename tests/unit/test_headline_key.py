"""The headline table follows the run's workload order, not whichever stack the shuffled order put first."""

from __future__ import annotations

from pgarena.analysis.ranking import headline_key
from tests.unit.test_compare import make_cell


def test_the_first_workload_of_the_run_heads_it_whatever_stack_runs_first():
    # bench1 (2026-11-27): the first stack of the shuffled order served no perf-test, and the headline became users
    cells = [make_cell("graphql-only", [100.0], workload="users", rows=20),
             make_cell("rest", [100.0], workload="perf-test", rows=1),
             make_cell("rest", [100.0], workload="perf-test", rows=10),
             make_cell("rest", [100.0], workload="users", rows=20)]
    assert headline_key(cells, ["perf-test", "users"]) == cells[1].key[1:]  # perf-test at its first parameter
    assert headline_key(cells, ["users", "perf-test"]) == cells[0].key[1:]  # --workloads users,perf-test
    assert headline_key(cells) == cells[0].key[1:], "results without the order: the first cell's, as before"
    assert headline_key(cells, ["static", "perf-test"]) == cells[1].key[1:], "a workload nobody serves is skipped"


def test_the_level_is_the_highest_up_to_fifty_vus():
    cells = [make_cell("a", [1.0], rows=1, vus=v) for v in (1, 50, 100)]
    assert headline_key(cells, ["perf-test"]) == cells[1].key[1:]
