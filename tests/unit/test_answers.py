"""Whole-answer judging under load (answers.py) and the request variants it judges (variants.py)."""

import json
from decimal import Decimal

import pytest

from pgarena.contract import workloads as wl
from pgarena.verify.answers import STATIC_TOLERANCE_MS, judge_answer
from pgarena.verify.variants import PERF_TEST_VARIANTS, perf_test_values, requests_for, tx_aids, tx_sampler_bodies

USER = {"id": 1, "username": "user00001", "full_name": "Grace Lovelace", "email": "user00001@example.com",
        "age": 25, "created_at": "2024-01-01T00:37:11.5+00:00"}
JSON = "application/json"


def judge(workload, expected, body, *, status=200, content_type=JSON, sent_ms=1000.0, received_ms=1002.0):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return judge_answer(workload, expected, status=status, content_type=content_type, body=raw, sent_ms=sent_ms,
                        received_ms=received_ms)


def test_users_answer_equal_to_the_database_passes():
    assert judge("users", [USER], [USER]) is None


def test_users_answer_with_right_row_count_but_wrong_value_fails():
    # the row-count check of before this change would have passed it
    other = dict(USER, full_name="Ada Turing")
    assert "full_name" in judge("users", [USER], [other])


def test_equivalent_encodings_pass_like_in_verification():
    spelled = dict(USER, created_at="2024-01-01T00:37:11.500Z", age="25")
    assert judge("users", [USER], [spelled]) is None


@pytest.mark.parametrize("body, status, content_type, why", [
    ([USER], 500, JSON, "status 500"),
    ([USER], 200, "text/plain", "content type"),
    (b"not json", 200, JSON, "not JSON"),
    ({"rows": [USER]}, 200, JSON, "not a JSON array"),
    ([USER, USER], 200, JSON, "2 rows, expected 1"),
    ([{"id": 1}], 200, JSON, "column username missing"),
])
def test_users_answer_problems_are_named(body, status, content_type, why):
    assert why in judge("users", [USER], body, status=status, content_type=content_type)


def test_graphql_answer_is_compared_field_by_field():
    expected = [{"id": 1, "username": "user00001", "fullName": "Grace Lovelace"}]
    assert judge("graphql", expected, {"data": {"users": expected}}) is None
    assert "fullName" in judge("graphql", expected, {"data": {"users": [dict(expected[0], fullName="x")]}})
    assert "data.users" in judge("graphql", expected, {"errors": [{"message": "no"}]})


def test_perf_test_bigint_rounded_through_a_double_fails():
    expected = [{"row_num": 1, "bigint_val": 9223372036854769999}]
    row = {c: None for c in wl.PERF_TEST_COLUMNS} | {"row_num": 1, "bigint_val": 9223372036854770000}
    want = {c: None for c in wl.PERF_TEST_COLUMNS} | expected[0]
    assert "bigint_val" in judge("perf-test", [want], [row])


def test_static_timestamp_must_be_the_time_of_the_request():
    assert judge("static", None, {"status": "ok", "timestamp": 1001}) is None
    stale = 1000 - STATIC_TOLERANCE_MS - 1
    assert "outside" in judge("static", None, {"status": "ok", "timestamp": stale})
    assert "status: ok" in judge("static", None, {"status": "ok", "timestamp": "1001"})
    assert "status: ok" in judge("static", None, {"status": "ok", "timestamp": True})


def test_tx_answer_is_an_abalance_object_with_the_predicted_balance():
    assert judge("tx", {"abalance": -120}, {"abalance": -120}) is None
    assert judge("tx", None, {"abalance": 7}) is None  # unpredictable: shape only
    assert "expected -120" in judge("tx", {"abalance": -120}, {"abalance": 55})
    assert "abalance" in judge("tx", None, b"-120")  # a bare number is not the contract's answer
    assert "abalance" in judge("tx", None, {"abalance": 1.5})
    assert "abalance" in judge("tx", None, {"abalance": 1, "extra": 2})


def test_perf_test_variants_are_distinct_and_start_with_the_seed():
    values = [perf_test_values(i) for i in range(PERF_TEST_VARIANTS)]
    assert values[0] == wl.SEED_PERF_TEST_VALUES
    for name, _ in wl.PERF_TEST_PARAMETERS[1:]:
        assert len({v[name] for v in values}) == (2 if name == "_bool" else PERF_TEST_VARIANTS), name
    for v in values:
        assert -2**31 <= int(v["_int"]) - 1000 and int(v["_int"]) < 2**31
        assert 2**53 < int(v["_bigint"]) < 2**63
        json.loads(v["_json"]), json.loads(v["_jsonb"])
        assert Decimal(v["_real"]) == Decimal(str(float(v["_real"])))  # exact in a float4
    requests = requests_for("perf-test", 10)
    assert len({r.path for r in requests}) == PERF_TEST_VARIANTS
    assert all("_records=10&" in r.path for r in requests)  # the cell's row count is kept


def test_read_workloads_without_a_parameter_to_vary_have_one_variant():
    assert [r.path for r in requests_for("users", 50)] == ["/api/users?limit=50"]
    assert len(requests_for("static", None)) == len(requests_for("graphql", None)) == 1


def test_tx_sampler_bodies_touch_accounts_the_generator_never_does():
    generator = wl.random_tx_bodies(5000, seed=1)
    taken = tx_aids(generator)
    bodies = tx_sampler_bodies(40, seed=2, avoid_aids=taken)
    aids = tx_aids(bodies)
    assert len(aids) == 40 and not aids & taken
    for body in bodies:
        fields = json.loads(body)
        for name, (low, high) in wl.TX_RANGES.items():
            assert low <= fields[name] <= high
    assert tx_sampler_bodies(40, seed=2, avoid_aids=taken) == bodies  # reproducible


def test_columns_already_wrong_at_verification_are_not_judged_again_but_the_others_are():
    """A stack whose timestamps verification found cut to milliseconds (columns-wrong, ranked among all)
    must not turn every sampled answer into a failed check; any other wrong column still fails."""
    cut = dict(USER, created_at="2024-01-01T00:37:11+00:00")  # a lost half second: ❌ created_at
    raw = json.dumps([cut]).encode()
    args = dict(status=200, content_type=JSON, body=raw, sent_ms=1000.0, received_ms=1002.0)
    assert "created_at" in judge_answer("users", [USER], **args)
    assert judge_answer("users", [USER], **args, known_wrong={"created_at"}) is None
    both = json.dumps([dict(cut, full_name="Ada Turing")]).encode()
    assert "full_name" in judge_answer("users", [USER], **{**args, "body": both}, known_wrong={"created_at"})
