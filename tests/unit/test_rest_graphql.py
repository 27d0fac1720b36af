"""Issue 13 on crafted data: REST against GraphQL with intervals, the N+1 probe's verdicts, the nested contract."""

from __future__ import annotations

import math

from pgarena.analysis.restgraphql import change, rest_graphql_pairs
from pgarena.contract import workloads as wl
from pgarena.contract.values import Verdict
from pgarena.db.accounting import StatementCounts, judge_nested
from pgarena.report import restgraphql
from pgarena.report.markdown import render_markdown
from pgarena.results.models import DbAccounting, Interval, WorkloadVerification
from pgarena.stats.intervals import welch_log_ratio
from pgarena.verify.badinput import CASES
from pgarena.verify.windowcheck import judge_window
from tests.unit.test_compare import make_cell, make_run

USERS_Q = "SELECT id, username FROM users ORDER BY id LIMIT $1"
BATCH_Q = "SELECT u.id, p.id, p.title FROM unnest($1::int[]) AS u(id) CROSS JOIN LATERAL (SELECT id, title FROM posts)"
ONE_Q = "SELECT id, title FROM posts WHERE user_id = $1 ORDER BY id LIMIT $2"


def ranked(cell):
    """A cell as the ranking sees it (valid, with an RPS interval)."""
    s = cell.summary
    interval = Interval(mean=s.rps.median, low=s.rps.min, high=s.rps.max, rel_half_width=0.01, level=0.95, method="t")
    return cell.model_copy(update={"summary": s.model_copy(update={"rps_interval": interval})})


# --- the interval ---------------------------------------------------------------------------------------------

def test_welch_log_ratio_of_equal_samples_is_one_and_its_interval_holds_one():
    ratio, low, high = welch_log_ratio([100, 102, 98], [101, 99, 100])
    assert math.isclose(ratio, 1.0, abs_tol=0.01) and low < 1 < high


def test_welch_log_ratio_is_exactly_inverted_and_excludes_one_for_a_clear_gap():
    a, b = [115, 117, 113, 116], [100, 101, 99]
    ab, ba = welch_log_ratio(a, b), welch_log_ratio(b, a)
    assert math.isclose(ab[0], 1 / ba[0]) and math.isclose(ab[1], 1 / ba[2]) and math.isclose(ab[2], 1 / ba[1])
    assert 1.1 < ab[1] < ab[0] < ab[2] < 1.2


def test_welch_log_ratio_needs_two_values_a_side_and_noise_widens_it():
    assert welch_log_ratio([100], [90, 91]) is None
    tight = welch_log_ratio([110, 111, 109], [100, 101, 99])
    loose = welch_log_ratio([90, 130, 110], [100, 101, 99])
    assert (loose[2] - loose[1]) > 5 * (tight[2] - tight[1])


# --- the pairs and their section ------------------------------------------------------------------------------

def _pair_run():
    rest = ranked(make_cell("fq", [11500, 11600, 11400], [4.2, 4.3, 4.1], workload="users", rows=20))
    gql = ranked(make_cell("fq", [10000, 10100, 9900], [5.0, 5.1, 4.9], workload="graphql", rows=20))
    gql = gql.model_copy(update={"parameter": None, "parameter_name": None})
    lonely = ranked(make_cell("other", [9000, 9100, 8900], workload="graphql"))  # no REST side: no pair
    return make_run("r", [rest, gql, lonely])


def test_a_stack_with_both_sides_gets_a_pair_with_intervals():
    [pair] = rest_graphql_pairs(_pair_run())
    assert pair.stack == "fq" and pair.rest.workload == "users" and pair.graphql.workload == "graphql"
    assert 1.10 < pair.rps_ratio[1] < pair.rps_ratio[0] < pair.rps_ratio[2] < 1.20
    assert pair.p99_ratio[2] < 1  # REST's p99 is surely lower
    assert change(pair.rps_ratio).startswith("+15.0% (+") and change(None) == "n/a (one window)"


def test_the_report_section_shows_the_pair_and_seed_002s_projection():
    text = restgraphql.section(_pair_run())
    assert "+15% req/s and -14% p99" in text and "| fq | users ↔ graphql |" in text
    assert "not measured / not measured" in text  # no RSS: never a zero
    assert "## REST against GraphQL on the same stack" in render_markdown(_pair_run())


def test_nested_statements_are_tabled_with_n_plus_one_flagged():
    counts = {"batched": {5: 2.0, 20: 2.0}, "naive": {5: 6.0, 20: 21.0}}
    verifications = [WorkloadVerification(
        stack=stack, workload="graphql-nested", ok=True, checks=[], accounting=DbAccounting(
            requests=20, workload_statements_per_request=by[20], rows_per_request=0, other_statements_per_request=0,
            expected_statements_per_request=2, allowed_other_statements_per_request=0, verdict=Verdict.EXACT,
            statements_by_limit=by, n_plus_one=by[20] > by[5])) for stack, by in counts.items()]
    run = make_run("r", [ranked(make_cell("batched", [100, 101, 99]))]).model_copy(
        update={"verifications": verifications})
    text = restgraphql.statements_text(run)
    assert "| batched | graphql-nested | 2 | 2 | ✅ constant |" in text
    assert "| naive | graphql-nested | 6 | 21 | ⚠️ N+1: one query per user |" in text


# --- the N+1 probe --------------------------------------------------------------------------------------------

def _probe(per_user: bool, requests: int = 10, cached: bool = False):
    counts = {}
    for limit in wl.NESTED_PROBE_LIMITS:
        calls = 0 if cached else requests
        after = {USERS_Q: (calls, calls * limit)}
        after.update({ONE_Q: (calls * limit, calls * limit * 5)} if per_user else {BATCH_Q: (calls, calls * limit * 5)})
        counts[limit] = (StatementCounts({}), StatementCounts(after))
    return judge_nested("graphql-nested", counts, requests)


def test_a_batched_stack_is_exact_with_two_statements_at_every_limit():
    result = _probe(per_user=False)
    assert result.verdict is Verdict.EXACT and result.n_plus_one is False
    assert result.statements_by_limit == {5: 2.0, 20: 2.0}


def test_a_resolver_per_user_is_n_plus_one_shown_but_not_invalid():
    result = _probe(per_user=True)
    assert result.n_plus_one is True and result.verdict is Verdict.EQUIVALENT
    assert result.statements_by_limit == {5: 6.0, 20: 21.0} and "one query per user" in result.reason


def test_no_statements_at_all_is_a_cache():
    assert _probe(per_user=False, cached=True).verdict is Verdict.WRONG


def test_window_accounting_of_a_nested_list_accepts_n_plus_one_but_not_a_cache():
    before = StatementCounts({})
    n_plus_one = judge_window("users-posts", None, before, StatementCounts({USERS_Q: (100, 2000), ONE_Q: (2000, 10000)}),
                              answered_2xx=100, unknown=0, in_flight=0)
    cached = judge_window("users-posts", None, before, StatementCounts({USERS_Q: (10, 200)}),
                          answered_2xx=100, unknown=0, in_flight=0)
    assert n_plus_one.verdict is Verdict.EXACT and cached.verdict is Verdict.WRONG


# --- the contract ---------------------------------------------------------------------------------------------

def test_the_nested_requests_and_routes():
    assert wl.graphql_nested_request().body == (
        b'{"query": "{ users(limit: 20) { id username posts(limit: 5) { id title } } }"}')
    assert wl.users_posts_request().path == "/api/users-posts?limit=20"
    assert wl.load_request("graphql-nested", None).path == "/graphql"
    assert wl.routed("/graphql", {"graphql-nested": "/v1/graphql"}) == "/v1/graphql"
    assert wl.routed("/graphql", {"graphql": "/gql", "graphql-nested": "/gql"}) == "/gql"
    assert wl.expected_rows("users-posts", None) == 20


def test_both_nested_workloads_have_a_bad_input_battery():
    assert len(CASES["users-posts"]) == 10 and all(c.path.startswith("/api/users-posts") for c in CASES["users-posts"])
    nested = CASES["graphql-nested"]
    assert len(nested) == 7 and all(c.expect == "graphql-error" for c in nested)
    assert any("posts(limit: 101)" in (c.body or b"").decode() for c in nested)


def test_right_json_without_a_json_content_type_is_loaded_flagged_and_not_rejudged_under_load():
    from pgarena.contract.flags import CONTENT_TYPE
    from pgarena.results.models import Check
    from pgarena.verify.answers import judge_answer
    from pgarena.verify.verification import loadable

    checks = [Check(name="limit 20: status 200", ok=True), Check(name="limit 20: content type JSON", ok=False),
              Check(name="limit 20: 20 rows", ok=True)]
    assert loadable(checks) and not loadable([*checks, Check(name="limit 20: 20 rows", ok=False)])
    v = WorkloadVerification(stack="s", workload="users", ok=True, checks=checks)
    assert v.content_type_wrong
    body = b'[{"id": 1, "username": "u", "posts": []}]'
    expected = [{"id": 1, "username": "u", "posts": []}]
    args = dict(status=200, content_type=None, body=body, sent_ms=0, received_ms=0)
    assert judge_answer("users-posts", expected, **args) == "content type None"
    assert judge_answer("users-posts", expected, known_wrong=(CONTENT_TYPE,), **args) is None
