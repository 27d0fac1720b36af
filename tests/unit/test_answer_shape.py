"""A stack's documented answer shape (stack.toml `[answer]`): the envelope and camelCase keys undone, the values
still judged exactly, the cells flagged `answer-mapped` (contract/answer.py, issue 13's FraiseQL REST path)."""

from __future__ import annotations

import json

import httpx
import pytest

from pgarena.analysis.ranking import exact
from pgarena.contract import workloads as wl
from pgarena.contract.answer import MAPPED_WORKLOADS, AnswerShape, AnswerShapeError, snake_case
from pgarena.contract.flags import ANSWER_MAPPED, INEXACT
from pgarena.contract.values import Verdict
from pgarena.pipeline.verified import verification_line
from pgarena.report import restgraphql
from pgarena.results.models import Check, WorkloadVerification
from pgarena.verify.answers import judge_answer
from pgarena.verify.badinput import CASES, INJECTION_SLEEP, _judge
from pgarena.verify.checks import AnswerSampler, Sample, answer_ok
from pgarena.verify.rows import ColumnTally, rows_case
from pgarena.verify.variants import Variant
from pgarena.verify.verification import failure_reasons
from tests.unit.test_stackdef import HEADER, config_error, write_stack

FRAISEQL = AnswerShape(envelope="data", keys="camelCase")
USER = {"id": 1, "username": "user00001", "full_name": "Grace Lovelace", "email": "user00001@example.com",
        "age": 25, "created_at": "2024-01-01T00:37:11.5+00:00"}
"""One users row as PostgreSQL's to_json writes it (the expected answer)."""
CAMEL_USER = {"id": 1, "username": "user00001", "fullName": "Grace Lovelace", "email": "user00001@example.com",
              "age": 25, "createdAt": "2024-01-01T00:37:11.5+00:00"}
"""The same row as FraiseQL's REST transport writes it."""


def enveloped(rows: list) -> dict:
    return {"data": rows, "meta": {"limit": len(rows), "offset": 0}}


# --- the mapping ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("key, name", [("fullName", "full_name"), ("createdAt", "created_at"), ("id", "id"),
                                       ("full_name", "full_name"), ("userID", "user_id"), ("rowNum", "row_num"),
                                       ("intArrayVal", "int_array_val")])
def test_camel_case_keys_map_to_the_contracts_names(key, name):
    assert snake_case(key) == name


def test_the_envelope_is_opened_and_the_keys_mapped():
    assert FRAISEQL.unwrap("users", enveloped([CAMEL_USER])) == [USER]


def test_a_missing_envelope_is_a_failure_that_names_it():
    with pytest.raises(AnswerShapeError, match=r'no member "data" in the answer \(members: "rows", "meta"'):
        FRAISEQL.unwrap("users", {"rows": [CAMEL_USER], "meta": {}})
    with pytest.raises(AnswerShapeError, match=r'not a JSON object with a member "data" but an array of 1'):
        FRAISEQL.unwrap("users", [CAMEL_USER])  # the contract's bare array is not what the stack declared


def test_two_keys_that_map_to_one_name_are_a_failure_naming_both():
    row = dict(CAMEL_USER, full_name="Ada Turing")
    with pytest.raises(AnswerShapeError, match="row 1: keys 'fullName' and 'full_name' both map to 'full_name'"):
        FRAISEQL.unwrap("users", enveloped([row]))


def test_nested_rows_of_users_posts_are_mapped_but_values_never_are():
    answer = enveloped([{"id": 1, "userName": "u1", "posts": [{"id": 7, "postTitle": "t", "createdAt": "x"}]}])
    assert FRAISEQL.unwrap("users-posts", answer) == [
        {"id": 1, "user_name": "u1", "posts": [{"id": 7, "post_title": "t", "created_at": "x"}]}]
    collide = enveloped([{"id": 1, "posts": [{"postId": 1, "post_id": 2}]}])
    with pytest.raises(AnswerShapeError, match="row 1, posts item 1: keys 'postId' and 'post_id'"):
        FRAISEQL.unwrap("users-posts", collide)
    # perf-test's json and jsonb values are data the database built: their keys stay as they are
    row = {"rowNum": 1, "jsonVal": {"someKey": 1}, "jsonbVal": {"aKey": [1]}}
    assert FRAISEQL.unwrap("perf-test", enveloped([row])) == [
        {"row_num": 1, "json_val": {"someKey": 1}, "jsonb_val": {"aKey": [1]}}]


def test_graphql_static_and_tx_answers_are_never_mapped():
    graphql = {"data": {"users": [{"id": 1, "fullName": "x"}]}}
    for workload in ("graphql", "graphql-nested", "static", "tx"):
        assert workload not in MAPPED_WORKLOADS
        assert FRAISEQL.unwrap(workload, graphql) is graphql
    assert set(MAPPED_WORKLOADS) == set(wl.COLUMNS) - {"graphql-nested"}


def test_an_envelope_alone_or_keys_alone():
    assert AnswerShape(envelope="items").unwrap("users", {"items": [CAMEL_USER]}) == [CAMEL_USER]
    assert AnswerShape(keys="camelCase").unwrap("users", [CAMEL_USER]) == [USER]
    assert AnswerShape(envelope="data").describe() == 'envelope "data"'
    assert FRAISEQL.describe() == 'envelope "data", camelCase keys'
    assert not AnswerShape().applies_to("users") and FRAISEQL.applies_to("users")


# --- the values are still judged exactly -----------------------------------------------------------------------

def judge(body, expected=(USER,), workload="users", answer=FRAISEQL, content_type="application/json"):
    return judge_answer(workload, list(expected), status=200, content_type=content_type,
                        body=json.dumps(body).encode(), sent_ms=0, received_ms=1, answer=answer)


def test_an_enveloped_answer_with_the_right_values_passes_and_a_wrong_value_still_fails():
    assert judge(enveloped([CAMEL_USER])) is None
    assert "full_name" in judge(enveloped([dict(CAMEL_USER, fullName="Ada Turing")]))
    assert judge(enveloped([CAMEL_USER, CAMEL_USER])) == "2 rows, expected 1"
    assert "age" in judge(enveloped([dict(CAMEL_USER, age=26)]))


def test_under_load_an_answer_not_in_the_declared_shape_is_wrong():
    assert 'not a JSON object with a member "data"' in judge([CAMEL_USER])
    assert "column full_name missing" in judge(enveloped([CAMEL_USER]), answer=AnswerShape(envelope="data"))
    assert judge([USER], answer=None) is None  # a stack without [answer]: exactly as before


def test_the_sampler_and_the_cold_start_check_undo_the_shape():
    sampler = AnswerSampler("http://127.0.0.1:9", "users", [], [], 1, answer=FRAISEQL)
    try:
        variant = Variant(wl.users_request(1), [USER])
        good = Sample(variant, 200, "application/json", json.dumps(enveloped([CAMEL_USER])).encode(), 0, 1)
        bare = Sample(variant, 200, "application/json", json.dumps([USER]).encode(), 0, 1)
        sampler.samples = [good, good, bare]
        checked, failed, first = sampler.judge()
    finally:
        sampler.close()
    assert (checked, failed) == (3, 1) and 'member "data"' in first and first.endswith("GET /api/users?limit=1")
    response = httpx.Response(200, json=enveloped([CAMEL_USER] * 20))
    assert answer_ok(response, "users", 20, FRAISEQL) and not answer_ok(response, "users", 20)


def test_verification_judges_the_unwrapped_rows_column_by_column():
    answers = {"/api/users?limit=1": enveloped([CAMEL_USER]), "/api/users?limit=2": {"rows": []}}

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=answers[request.url.raw_path.decode()])

    tally, checks = ColumnTally(wl.USERS_COLUMNS), []
    with httpx.Client(transport=httpx.MockTransport(handler), base_url="http://stack") as client:
        rows_case(client, "/api/users?limit=1", [USER], "limit 1", tally, checks, workload="users", answer=FRAISEQL)
        assert all(c.ok for c in checks) and all(v.verdict is Verdict.EXACT for v in tally.verdicts())
        rows_case(client, "/api/users?limit=2", [USER, USER], "limit 2", tally, checks, workload="users",
                  answer=FRAISEQL)
    failed = [c for c in checks if not c.ok]
    assert [c.name for c in failed] == ['limit 2: the declared answer shape (envelope "data", camelCase keys)']
    assert 'no member "data"' in failed[0].detail


def test_bad_input_echo_answers_are_unwrapped_and_error_answers_judged_as_sent():
    echo = next(c for c in CASES["perf-test"] if c.expect == "echo")
    row = {"rowNum": 1, "textVal": INJECTION_SLEEP}
    assert _judge(echo, httpx.Response(200, json=enveloped([row])), 0.1, "perf-test", FRAISEQL) is None
    bare = _judge(echo, httpx.Response(200, json=[row]), 0.1, "perf-test", FRAISEQL)
    assert "HTTP 200, not a JSON object with a member" in bare
    four_hundred = CASES["users"][1]
    error = httpx.Response(400, json={"error": {"code": "BAD_REQUEST", "message": "limit"}})
    assert _judge(four_hundred, error, 0.1, "users", FRAISEQL) is None


# --- the flag -------------------------------------------------------------------------------------------------

def mapped_verification() -> WorkloadVerification:
    return WorkloadVerification(stack="fq", workload="users", ok=True,
                                checks=[Check(name="limit 20: 20 rows", ok=True)], answer_mapping=FRAISEQL.describe())


def test_a_mapped_answer_is_inexact_ranked_among_all_only_and_named_in_the_verdicts():
    from tests.unit.test_compare import make_cell

    assert ANSWER_MAPPED in INEXACT
    cell = make_cell("fq", [100, 101, 99], workload="users", rows=20)
    assert exact(cell)
    cell.flags.append(ANSWER_MAPPED)
    assert not exact(cell)
    v = mapped_verification()
    line = verification_line(v)
    assert 'answer mapped from envelope "data", camelCase keys (loaded, flagged answer-mapped)' in line
    assert any("not the contract's answer shape" in r for r in failure_reasons(v))
    assert failure_reasons(v.model_copy(update={"answer_mapping": None})) == []


def test_the_rest_graphql_section_names_the_flags_of_a_pairs_side():
    from tests.unit.test_rest_graphql import _pair_run

    results = _pair_run()
    assert "flagged" not in restgraphql.section(results)
    rest = next(c for c in results.cells if c.workload == "users")
    rest.flags += ["content-type-wrong", ANSWER_MAPPED]
    text = restgraphql.section(results)
    assert "- fq users (REST): flagged `content-type-wrong`, `answer-mapped` — measured like every other cell" in text
    assert restgraphql.payload(results)["flagged"] == [text.split("\n- ")[-1]]


# --- stack.toml -----------------------------------------------------------------------------------------------

def stack_text(answer: str, workloads: str = '["users", "graphql"]') -> str:
    return f'id = "demo"\n{HEADER}workloads = {workloads}\n[run]\ncommand = "./serve"\n{answer}'


def test_stack_toml_answer_table_loads_into_the_stacks_shape(tmp_path):
    from pgarena.config.stackdef import Stack, parse_stack_toml

    path = write_stack(tmp_path, "demo", stack_text('[answer]\nenvelope = "data"\nkeys = "camelCase"\n'))
    definition = parse_stack_toml(path)
    assert Stack(definition, path.parent).answer == FRAISEQL
    plain = write_stack(tmp_path / "b", "demo", stack_text(""))
    assert Stack(parse_stack_toml(plain), plain.parent).answer is None


@pytest.mark.parametrize("answer, expected", [
    ('[answer]\nkeys = "snake"\n',
     "key 'answer.keys': Value error, 'snake' is not a key style pgarena maps; allowed: camelCase"),
    ('[answer]\nenvelop = "data"\n',
     "unknown key 'answer.envelop' (did you mean 'envelope'?); allowed keys: envelope, keys"),
    ('[answer]\nenvelope = ""\n', "key 'answer.envelope': String should have at least 1 character"),
    ('[answer]\nenvelope = 1\n', "key 'answer.envelope': Input should be a valid string"),
    ("[answer]\n", "key 'answer': Value error, declares neither 'envelope' nor 'keys'"),
])
def test_stack_toml_answer_errors_name_the_file_and_the_field(tmp_path, answer, expected):
    assert expected in config_error(write_stack(tmp_path, "demo", stack_text(answer)))


def test_an_answer_table_on_a_stack_without_row_workloads_is_an_error(tmp_path):
    path = write_stack(tmp_path, "demo", stack_text('[answer]\nenvelope = "data"\n', '["graphql", "static"]'))
    assert "[answer] applies to the row workloads" in config_error(path)


def test_rust_fraiseql_declares_its_rest_shape():
    from pathlib import Path

    from pgarena.config.stackdef import parse_stack_toml

    definition = parse_stack_toml(Path(__file__).parents[2] / "stacks" / "rust-fraiseql" / "stack.toml")
    assert definition.answer is not None and definition.answer.shape == FRAISEQL
