"""Issue 22 item 9: with database accounting unavailable (`--database-url` without pg_read_all_stats) a
cell is ranked only with a flag saying the database could not be checked, never as if verified."""

from __future__ import annotations

from pgarena.analysis.ranking import UNRANKED, in_exact_field, in_field, throughput_ranks
from pgarena.contract.flags import DB_UNCHECKED
from pgarena.db.accounting import ENABLE_HINT
from tests.unit.test_summary_and_ranking import cell, config, rep  # noqa: F401 (config is a fixture)

UNAVAILABLE = f"role pgarena cannot read other roles' statements in pg_stat_statements; {ENABLE_HINT}"


def _cells(config, unchecked: bool):  # noqa: F811
    verified = cell("verified", [rep(i, 1000 + i) for i in range(1, 4)], config)
    other = cell("unchecked", [rep(i, 2000 + i) for i in range(1, 4)], config,
                 window_accounting_unavailable=UNAVAILABLE if unchecked else None)
    return verified, other


def test_a_cell_whose_database_could_not_be_checked_is_flagged(config):  # noqa: F811
    verified, unchecked = _cells(config, unchecked=True)
    assert DB_UNCHECKED in unchecked.flags and DB_UNCHECKED not in verified.flags


def test_it_is_ranked_among_all_stacks_only_never_among_the_verified(config):  # noqa: F811
    verified, unchecked = _cells(config, unchecked=True)
    assert in_field(unchecked) and not in_exact_field(unchecked)
    exact = dict((c.stack, r) for c, r in throughput_ranks([verified, unchecked], in_exact_field))
    every = dict((c.stack, r) for c, r in throughput_ranks([verified, unchecked], in_field))
    assert exact == {"unchecked": UNRANKED, "verified": "1"}  # before: "unchecked" ranked 1 as if verified
    assert every == {"unchecked": "1", "verified": "2"}


def test_the_flag_is_rederived_with_the_summary(config):  # noqa: F811
    _, checked = _cells(config, unchecked=False)
    assert DB_UNCHECKED not in checked.flags and in_exact_field(checked)
