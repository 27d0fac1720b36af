"""The two phases of `make test` (scripts/test.sh, tests/conftest.py): a renamed module or test must not slip a
timing assertion into phase 1 unnoticed, nor split the network-namespace or real-stack modules across workers."""

from __future__ import annotations

import re

from tests.conftest import PROJECT_DIR, SERIAL, TOGETHER, scheduling_unit


def test_every_serial_entry_names_a_test_that_exists():
    for entry, reason in SERIAL.items():
        path, _, function = entry.partition("::")
        source = (PROJECT_DIR / path).read_text(encoding="utf-8")
        assert reason.strip(), entry
        if function:
            assert re.search(rf"^def {re.escape(function)}\(", source, flags=re.M), entry


def test_each_together_group_is_one_unit_and_other_modules_their_own():
    for module in TOGETHER:
        assert (PROJECT_DIR / module).is_file(), module
    units = {scheduling_unit(f"{module}::test_x[p]") for module in TOGETHER}
    assert units == {"netns", "stacks"}
    assert scheduling_unit("tests/e2e/test_real_stacks.py::test_k6_engine_on_one_stack") == "stacks"
    assert scheduling_unit("tests/integration/test_netns.py::test_a") == "netns"
    assert scheduling_unit("tests/unit/test_paired.py::test_a") == "tests/unit/test_paired.py"
    assert scheduling_unit("tests/unit/test_paired.py::test_b[1-2]") == "tests/unit/test_paired.py"


def test_the_script_runs_both_phases_with_the_callers_arguments():
    script = (PROJECT_DIR / "scripts" / "test.sh").read_text(encoding="utf-8")
    assert '-n "$workers" -m "not serial" "$@"' in script and '-m serial "$@"' in script
    assert "bash scripts/test.sh $(ARGS)" in (PROJECT_DIR / "Makefile").read_text(encoding="utf-8")
