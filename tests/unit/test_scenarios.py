"""Seed 000's newer scenarios: requests, parameters, the judge of answers under load, the bad-input battery."""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, urlsplit

import pytest

from pgarena.contract import workloads as wl
from pgarena.db.ceiling import workload_script
from pgarena.verify import answers, badinput
from pgarena.verify.windowcheck import rows_per_request


def test_every_workload_has_a_path_a_parameter_name_and_a_bad_input_list():
    assert set(wl.DEFAULT_PATHS) == set(wl.WORKLOAD_NAMES) == set(wl.PARAMETER_NAMES) == set(badinput.CASES)
    assert set(wl.SCENARIOS) <= set(wl.COLUMNS)


@pytest.mark.parametrize("workload,parameter,method,rows", [
    ("perf-minimal", None, "GET", 1), ("perf-post", 10, "POST", 10), ("perf-nested", 2, "GET", 100),
    ("perf-large-payload", 500, "GET", 1), ("perf-many-params", None, "GET", 1)])
def test_load_requests_follow_the_seed_call(workload, parameter, method, rows):
    request = wl.load_request(workload, parameter)
    assert request.method == method and request.path.startswith(wl.DEFAULT_PATHS[workload])
    assert wl.expected_rows(workload, parameter) == rows == rows_per_request(workload, parameter)
    query = parse_qs(urlsplit(request.path).query)
    if workload == "perf-post":
        body = json.loads(request.body)
        assert body == {"_records": 10, "_payload": wl.SEED_POST_PAYLOAD}
        assert request.content_type == "application/json"
    elif workload == "perf-nested":
        assert query == {"_records": ["100"], "_depth": ["2"]}
    elif workload == "perf-large-payload":
        assert query == {"_size_kb": ["500"]}
    elif workload == "perf-many-params":
        assert sorted(query, key=lambda k: int(k[2:])) == [f"_p{i}" for i in range(1, 21)]


def test_varied_inputs_differ_from_the_load_inputs_and_keep_their_hard_parts():
    payload = json.loads(wl.perf_post_request(3, wl.VARIED_POST_PAYLOADS[0]).body)["_payload"]
    assert payload != wl.SEED_POST_PAYLOAD
    assert payload["big"] == 12345678901234567890 and payload["beyond_double"] == -(2**53) - 1
    assert "☃" in payload["s"]
    only_first = wl.perf_many_params_request(wl.VARIED_MANY_PARAMS[1])
    assert parse_qs(urlsplit(only_first.path).query) == {"_p1": ["only the first"]}
    hostile = parse_qs(urlsplit(wl.perf_many_params_request(wl.VARIED_MANY_PARAMS[0]).path).query)
    assert hostile["_p10"] == ["x&y=z"], "URL-hostile text survives the query string"


@pytest.mark.parametrize("workload,parameter", [("perf-minimal", None), ("perf-post", 10), ("perf-nested", 3),
                                                ("perf-large-payload", 100), ("perf-many-params", None)])
def test_the_database_ceiling_runs_each_scenarios_function(workload, parameter):
    script = workload_script(workload, parameter)
    assert script is not None and wl.DEFAULT_PATHS[workload].rsplit("/", 1)[1].replace("-", "_") in script.script
    defined = set(script.defines[1::2])
    for variable in set(re.findall(r":(\w+)::", script.script)):
        assert any(d.startswith(variable + "=") for d in defined), f"{variable} bound but not defined"
    if workload == "perf-many-params":
        assert len(defined) == 20 and "p20=value20" in defined


def _minimal(ts: str) -> bytes:
    return json.dumps([{"status": "ok", "ts": ts}]).encode()


def test_a_perf_minimal_answer_must_carry_this_requests_time():
    sent = 1_700_000_000_000.0
    fresh = "2023-11-14T22:13:20.500123+00:00"  # sent + 500 ms
    judge = dict(status=200, content_type="application/json", sent_ms=sent, received_ms=sent + 600)
    assert answers.judge_answer("perf-minimal", None, body=_minimal(fresh), **judge) is None
    stale = "2023-11-14T22:10:00+00:00"
    assert "outside the request's time" in answers.judge_answer("perf-minimal", None, body=_minimal(stale), **judge)
    assert answers.judge_answer("perf-minimal", None, body=_minimal(stale), known_wrong=("ts",), **judge) is None
    assert "no offset" in answers.judge_answer("perf-minimal", None, body=_minimal("2023-11-14T22:13:20.5"), **judge)
    assert "status" in answers.judge_answer("perf-minimal", None, body=b'[{"status": "cached"}]', **judge)


def test_scenario_rows_under_load_are_judged_against_the_expected_answer():
    expected = [{"row_num": 1, "echo": {"big": 12345678901234567890}, "computed": "row_1"}]
    judge = dict(status=200, content_type="application/json", sent_ms=0, received_ms=1)
    good = b'[{"row_num": 1, "echo": {"big": 12345678901234567890}, "computed": "row_1"}]'
    assert answers.judge_answer("perf-post", expected, body=good, **judge) is None
    rounded = b'[{"row_num": 1, "echo": {"big": 12345678901234567000}, "computed": "row_1"}]'
    assert "echo" in answers.judge_answer("perf-post", expected, body=rounded, **judge)


def test_injection_shaped_text_counts_as_echoed_only_when_it_came_back_as_data():
    post = next(c for c in badinput.CASES["perf-post"] if c.expect == "echo")
    many = next(c for c in badinput.CASES["perf-many-params"] if c.expect == "echo")
    assert badinput._echoed(post.path, {"echo": {"q": badinput.INJECTION_SLEEP}})
    assert not badinput._echoed(post.path, {"echo": {"q": "something else"}})
    assert badinput._echoed(many.path, {"param_count": 20, "checksum": "abc"})
    assert not badinput._echoed(many.path, {"error": "x"})


def test_a_run_raises_its_open_file_limit_to_the_hard_limit():
    """500 VUs need ~1,000 descriptors between generator and stack: the soft limit follows the hard one."""
    import resource
    import subprocess
    import sys

    code = ("import resource; from pgarena.system.process import raise_open_files_limit; "
            "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE); "
            "resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard)); "
            "print(raise_open_files_limit() == resource.getrlimit(resource.RLIMIT_NOFILE), "
            "resource.getrlimit(resource.RLIMIT_NOFILE)[0] == hard)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "True"]
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[1] > 0
