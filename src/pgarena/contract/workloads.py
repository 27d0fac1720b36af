"""The HTTP workloads: names, routes, request shapes, load parameters and the answers' columns.

docs/contract.md is the prose version of this module. It needs nothing but the standard library: the
expected answers come from the database (`db.expected`), requests are sent by `verify.http`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args
from urllib.parse import urlencode

WorkloadName = Literal["perf-test", "users", "static", "tx", "graphql", "perf-minimal", "perf-post", "perf-nested",
                       "perf-large-payload", "perf-many-params", "graphql-nested", "users-posts"]
"""Every workload pgarena knows, in the order tables list them: the one place the names are defined."""
WORKLOAD_NAMES: tuple[str, ...] = get_args(WorkloadName)

PERF_TEST = "perf-test"
USERS = "users"
STATIC = "static"
TX = "tx"
GRAPHQL = "graphql"
PERF_MINIMAL = "perf-minimal"
PERF_POST = "perf-post"
PERF_NESTED = "perf-nested"
PERF_LARGE_PAYLOAD = "perf-large-payload"
PERF_MANY_PARAMS = "perf-many-params"
GRAPHQL_NESTED = "graphql-nested"
USERS_POSTS = "users-posts"
NESTED_LISTS = (GRAPHQL_NESTED, USERS_POSTS)
"""Issue 13's nested list (users with their posts), GraphQL and its REST twin: where N+1 shows."""
SCENARIOS = (PERF_MINIMAL, PERF_POST, PERF_NESTED, PERF_LARGE_PAYLOAD, PERF_MANY_PARAMS)
"""Seed 000's newer scenarios: functions that touch no table, so what differs is the framework's own work."""

PERF_TEST_PATH = "/api/perf-test"
USERS_PATH = "/api/users"
STATIC_PATH = "/api/static"
TX_PATH = "/api/tx"
GRAPHQL_PATH = "/graphql"
PERF_MINIMAL_PATH = "/api/perf-minimal"
PERF_POST_PATH = "/api/perf-post"
PERF_NESTED_PATH = "/api/perf-nested"
PERF_LARGE_PAYLOAD_PATH = "/api/perf-large-payload"
PERF_MANY_PARAMS_PATH = "/api/perf-many-params"
USERS_POSTS_PATH = "/api/users-posts"
JSON_CONTENT_TYPE = "application/json"

TX_SCALE = 10
"""pgbench scale of the tx data: 100,000 accounts, 10 tellers and 1 branch per unit (seed 001)."""
TX_RANGES = {"aid": (1, 100_000 * TX_SCALE), "tid": (1, 10 * TX_SCALE), "bid": (1, TX_SCALE), "delta": (-5000, 5000)}
"""Valid range of every tx body field (docs/contract.md)."""
TX_BODIES_PER_FILE = 100_000
"""Pre-generated random tx bodies per load window (oha reads them line by line; k6 picks at random)."""

GRAPHQL_LIMIT = 20
GRAPHQL_QUERY = "{ users(limit: %d) { id username fullName } }"
"""Seed 002's query; compared with GET /api/users?limit=20 on the same stack."""
NESTED_LIMIT = 20
"""Users per graphql-nested / users-posts answer under load."""
NESTED_POSTS_LIMIT = 5
"""Posts per user in both (users-posts: fixed by the contract; graphql-nested: `posts(limit: 5)`)."""
POSTS_LIMIT_RANGE = (1, 100)
"""Valid `posts(limit)` of graphql-nested."""
GRAPHQL_NESTED_QUERY = "{ users(limit: %d) { id username posts(limit: %d) { id title } } }"
NESTED_PROBE_LIMITS = (5, NESTED_LIMIT)
"""Users limits of the N+1 probe: statements per request at both; a count that grows with the limit is N+1."""
REST_GRAPHQL_PAIRS: tuple[tuple[str, int | None, str], ...] = (("users", GRAPHQL_LIMIT, "graphql"),
                                                               ("users-posts", None, "graphql-nested"))
"""(REST workload, its parameter, GraphQL workload): the same data over both transports on one stack."""

PERF_TEST_PARAMETERS: tuple[tuple[str, str], ...] = (
    ("_records", "int"),
    ("_text", "text"),
    ("_int", "int"),
    ("_bigint", "bigint"),
    ("_numeric", "numeric"),
    ("_real", "real"),
    ("_double", "double precision"),
    ("_bool", "bool"),
    ("_date", "date"),
    ("_timestamp", "timestamp"),
    ("_timestamptz", "timestamptz"),
    ("_uuid", "uuid"),
    ("_json", "json"),
    ("_jsonb", "jsonb"),
    ("_int_array", "int[]"),
    ("_text_array", "text[]"),
)
"""The 16 parameters of public.perf_test, in order, with their SQL types (seed 000)."""

SEED_PERF_TEST_VALUES: dict[str, str] = {
    "_text": "ABCDEFGHIJKLMNOPRSTUVWXYZ",
    "_int": "1234567890",
    "_bigint": "9223372036854770000",
    "_numeric": "12345.6789",
    "_real": "123.45",
    "_double": "123456.789012",
    "_bool": "true",
    "_date": "2024-01-15",
    "_timestamp": "2024-01-15T10:30:00.123457",
    "_timestamptz": "2024-01-15T10:30:00.654321Z",
    "_uuid": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
    "_json": '{"key":"value"}',
    "_jsonb": '{"key":"value"}',
    "_int_array": "{1,2,3}",
    "_text_array": "{a,b,c}",
}
"""Seed 000's request values: what load sends, and the first verification case. The seed sent whole seconds;
pgarena adds microseconds to both timestamps (issue 22), so a stack that cuts time values to milliseconds
(a JavaScript Date) answers ❌ on `time_val`, `timestamp_val` and `timestamptz_val` instead of passing."""

VARIED_PERF_TEST_VALUES: dict[str, str] = {
    "_text": 'Zürich "quoted" & <tagged> ✓',
    "_int": "-42",
    "_bigint": "-9007199254740993",
    "_numeric": "-0.5",
    "_real": "-1.25",
    "_double": "0.1",
    "_bool": "false",
    "_date": "1999-12-31",
    "_timestamp": "2000-02-28T23:59:59.123456",
    "_timestamptz": "2024-06-30T22:15:00.987654+02:00",
    "_uuid": "00000000-0000-4000-8000-000000000001",
    "_json": '{"nested":{"list":[1,2.5,"x"],"null":null},"key":"v"}',
    "_jsonb": '{"a":[true,false],"key":"v"}',
    "_int_array": "{-1,0,2147483647}",
    "_text_array": '{"with space","com,ma",x}',
}
"""A second case with other values (negative numbers, unicode, an offset, nested JSON, 2^53+1), so a
stack that hard-codes the seed's answer or loses precision is caught."""

PERF_TEST_COLUMNS: dict[str, str] = {
    "row_num": "int4",
    "text_val": "text",
    "varchar_val": "varchar",
    "char_val": "bpchar",
    "smallint_val": "int2",
    "int_val": "int4",
    "bigint_val": "int8",
    "numeric_val": "numeric",
    "real_val": "float4",
    "double_val": "float8",
    "bool_val": "bool",
    "date_val": "date",
    "time_val": "time",
    "timestamp_val": "timestamp",
    "timestamptz_val": "timestamptz",
    "interval_val": "interval",
    "uuid_val": "uuid",
    "json_val": "json",
    "jsonb_val": "jsonb",
    "int_array_val": "_int4",
    "text_array_val": "_text",
    "nullable_text": "text",
    "nullable_int": "int4",
}
"""Output columns of perf_test and their PostgreSQL types (pg_type.typname)."""

GRAPHQL_FIELDS: dict[str, tuple[str, str]] = {
    "id": ("id", "int4"),
    "username": ("username", "varchar"),
    "fullName": ("full_name", "varchar"),
}
"""GraphQL field → (users column, PostgreSQL type) of seed 002's query."""

USERS_COLUMNS: dict[str, str] = {
    "id": "int4",
    "username": "varchar",
    "full_name": "varchar",
    "email": "varchar",
    "age": "int2",
    "created_at": "timestamptz",
}
"""Columns of the users answer and their PostgreSQL types."""


NESTED_RECORDS = 100
"""Rows of every perf-nested answer (seed 000's server profile: 100 records at depths 1, 2 and 3)."""
RECORDS_RANGE = (1, 1000)
"""Valid `_records` of perf-post and perf-nested (and perf-test)."""
DEPTH_RANGE = (1, 3)
SIZE_KB_RANGE = (1, 1024)

SEED_POST_PAYLOAD: dict[str, Any] = {
    "name": "pgarena", "count": 42, "ratio": 0.5, "active": True, "tags": ["alpha", "beta"],
    "meta": {"source": "load", "version": 1},
}
"""The payload every perf-post request of a load window carries."""
VARIED_POST_PAYLOADS: tuple[dict[str, Any], ...] = (
    {"s": "h\u00e9llo \u2603 \U0001d11e", "quote": "say \"hi\" \\ bye", "big": 12345678901234567890,
     "beyond_double": -9007199254740993, "deep": {"x": [1, 2, {"y": None}], "empty": {}, "list": []}},
    {"n": 0, "f": -1.25, "e": 1e-7, "t": True, "f2": False, "nul": None, "k": "tab\tnewline\nend"},
)
"""Payloads that catch a stack answering a fixed echo, or losing unicode, big integers or nesting."""

MANY_PARAMS_TYPES: tuple[str, ...] = ("text", "int", "bool", "numeric", "text") * 4
"""perf_many_params's 20 parameters `_p1` … `_p20`: the pattern text, int, bool, numeric, text, four times."""
SEED_MANY_PARAMS: dict[str, str] = {
    f"_p{i + 1}": {"text": f"value{i + 1}", "int": str(100 + i), "bool": "true" if i % 2 else "false",
                   "numeric": f"{i + 1}.25"}[kind]
    for i, kind in enumerate(MANY_PARAMS_TYPES)
}
"""The 20 query parameters of every perf-many-params load request."""
VARIED_MANY_PARAMS: tuple[dict[str, str], ...] = (
    {**{key: value for key, value in SEED_MANY_PARAMS.items()}, "_p1": "gr\u00fc\u00dfe \u2603", "_p2": "-2147483648",
     "_p4": "12345678901234567890.123456", "_p10": "x&y=z", "_p20": "100% sure"},
    {"_p1": "only the first"},
)
"""A full set with unicode, extreme and URL-hostile values, and one with only `_p1` (the rest SQL NULL)."""

NESTED_COLUMNS = {"id": "int4", "username": "varchar", "posts": "json"}
"""graphql-nested's data.users and users-posts' rows: `posts` is judged whole, as JSON ([{id, title}, ...] in
order), like a json column."""
PERF_MINIMAL_COLUMNS = {"status": "text", "ts": "timestamptz"}
PERF_POST_COLUMNS = {"row_num": "int4", "echo": "jsonb", "computed": "text"}
PERF_NESTED_COLUMNS = {"row_num": "int4", "nested": "jsonb"}
PERF_LARGE_PAYLOAD_COLUMNS = {"data": "text"}
PERF_MANY_PARAMS_COLUMNS = {"param_count": "int4", "checksum": "text"}


@dataclass(frozen=True)
class Request:
    """One HTTP request of a workload, relative to the stack's base URL."""

    method: str
    path: str
    body: bytes | None = None
    content_type: str | None = None


def is_graphql(workload: str) -> bool:
    """A workload answered by a GraphQL endpoint: `{"data": {"users": [...]}}`, GraphQL's media types allowed."""
    return workload in (GRAPHQL, GRAPHQL_NESTED)


def is_json_content_type(value: str | None, *, graphql: bool = False) -> bool:
    """application/json (GraphQL answers may also use GraphQL over HTTP's own JSON media type)."""
    allowed = ("application/json", "application/graphql-response+json") if graphql else ("application/json",)
    return bool(value) and value.split(";")[0].strip().lower() in allowed


def perf_test_request(records: int, values: dict[str, str] | None = None) -> Request:
    """`GET /api/perf-test?...` with all 16 parameters (seed values unless given)."""
    query = {"_records": str(records), **(values or SEED_PERF_TEST_VALUES)}
    return Request("GET", f"{PERF_TEST_PATH}?{urlencode(query)}")


def users_request(limit: int) -> Request:
    return Request("GET", f"{USERS_PATH}?{urlencode({'limit': limit})}")


def static_request() -> Request:
    return Request("GET", STATIC_PATH)


def tx_body(aid: int, tid: int, bid: int, delta: int) -> bytes:
    return json.dumps({"aid": aid, "tid": tid, "bid": bid, "delta": delta}, separators=(",", ":")).encode()


def random_tx_bodies(count: int, seed: int) -> list[bytes]:
    """`count` tx bodies with ids and delta uniform in their ranges (pgbench's TPC-B draws), reproducible."""
    rng = random.Random(seed)
    return [tx_body(*(rng.randint(*TX_RANGES[f]) for f in ("aid", "tid", "bid", "delta"))) for _ in range(count)]


def tx_request(body: bytes) -> Request:
    return Request("POST", TX_PATH, body, JSON_CONTENT_TYPE)


def graphql_body(limit: int = GRAPHQL_LIMIT) -> bytes:
    return json.dumps({"query": GRAPHQL_QUERY % limit}).encode()


def graphql_request(limit: int = GRAPHQL_LIMIT) -> Request:
    return Request("POST", GRAPHQL_PATH, graphql_body(limit), JSON_CONTENT_TYPE)


def graphql_nested_request(limit: int = NESTED_LIMIT, posts_limit: int = NESTED_POSTS_LIMIT) -> Request:
    body = json.dumps({"query": GRAPHQL_NESTED_QUERY % (limit, posts_limit)}).encode()
    return Request("POST", GRAPHQL_PATH, body, JSON_CONTENT_TYPE)


def users_posts_request(limit: int = NESTED_LIMIT) -> Request:
    return Request("GET", f"{USERS_POSTS_PATH}?{urlencode({'limit': limit})}")


def perf_minimal_request() -> Request:
    return Request("GET", PERF_MINIMAL_PATH)


def perf_post_body(records: int, payload: dict[str, Any] | None = None) -> bytes:
    payload = SEED_POST_PAYLOAD if payload is None else payload
    return json.dumps({"_records": records, "_payload": payload}, ensure_ascii=False,
                      separators=(",", ":")).encode()


def perf_post_request(records: int, payload: dict[str, Any] | None = None) -> Request:
    """`POST /api/perf-post` with `{"_records": records, "_payload": payload}` (the seed payload unless given)."""
    return Request("POST", PERF_POST_PATH, perf_post_body(records, payload), JSON_CONTENT_TYPE)


def perf_nested_request(depth: int, records: int = NESTED_RECORDS) -> Request:
    return Request("GET", f"{PERF_NESTED_PATH}?{urlencode({'_records': records, '_depth': depth})}")


def perf_large_payload_request(size_kb: int) -> Request:
    return Request("GET", f"{PERF_LARGE_PAYLOAD_PATH}?{urlencode({'_size_kb': size_kb})}")


def perf_many_params_request(values: dict[str, str] | None = None) -> Request:
    """`GET /api/perf-many-params?_p1=…&…&_p20=…` (the seed values unless given; absent ones are NULL)."""
    return Request("GET", f"{PERF_MANY_PARAMS_PATH}?{urlencode(values or SEED_MANY_PARAMS)}")


def load_request(workload: str, parameter: int | None) -> Request:
    """The request the load generator repeats for one cell (tx: the first body; the rest come from a
    bodies file, see random_tx_bodies)."""
    if workload == PERF_TEST:
        assert parameter is not None
        return perf_test_request(parameter)
    if workload == USERS:
        assert parameter is not None
        return users_request(parameter)
    if workload == TX:
        return tx_request(tx_body(1, 1, 1, 0))
    if workload == GRAPHQL:
        return graphql_request()
    if workload == GRAPHQL_NESTED:
        return graphql_nested_request()
    if workload == USERS_POSTS:
        return users_posts_request()
    if workload == PERF_MINIMAL:
        return perf_minimal_request()
    if workload == PERF_MANY_PARAMS:
        return perf_many_params_request()
    if workload in (PERF_POST, PERF_NESTED, PERF_LARGE_PAYLOAD):
        assert parameter is not None
        return {PERF_POST: perf_post_request, PERF_NESTED: perf_nested_request,
                PERF_LARGE_PAYLOAD: perf_large_payload_request}[workload](parameter)
    return static_request()


def expected_rows(workload: str, parameter: int | None) -> int | None:
    """How many rows one answer of the cell must hold (None: not a list of rows)."""
    if workload in (PERF_TEST, USERS):
        return parameter
    if workload == GRAPHQL:
        return GRAPHQL_LIMIT
    if workload in NESTED_LISTS:
        return NESTED_LIMIT
    return {PERF_MINIMAL: 1, PERF_POST: parameter, PERF_NESTED: NESTED_RECORDS, PERF_LARGE_PAYLOAD: 1,
            PERF_MANY_PARAMS: 1}.get(workload)


DEFAULT_PATHS = {PERF_TEST: PERF_TEST_PATH, USERS: USERS_PATH, STATIC: STATIC_PATH, TX: TX_PATH,
                 GRAPHQL: GRAPHQL_PATH, PERF_MINIMAL: PERF_MINIMAL_PATH, PERF_POST: PERF_POST_PATH,
                 PERF_NESTED: PERF_NESTED_PATH, PERF_LARGE_PAYLOAD: PERF_LARGE_PAYLOAD_PATH,
                 PERF_MANY_PARAMS: PERF_MANY_PARAMS_PATH, GRAPHQL_NESTED: GRAPHQL_PATH, USERS_POSTS: USERS_POSTS_PATH}
"""Where the contract puts each workload; a stack.toml's `routes` may move them (graphql-nested follows
graphql's route unless it has its own: both are queries to one GraphQL endpoint)."""


def routed(path: str, routes: Mapping[str, str]) -> str:
    """`path` (with its query) moved to the stack's route for its workload; query strings are merged."""
    base, _, query = path.partition("?")
    if base == GRAPHQL_PATH and GRAPHQL_NESTED in routes and GRAPHQL not in routes:
        routes = {**routes, GRAPHQL: routes[GRAPHQL_NESTED]}
    for workload, default in DEFAULT_PATHS.items():
        if base == default and workload in routes:
            target = routes[workload]
            return target + (("&" if "?" in target else "?") + query if query else "")
    return path


PARAMETER_NAMES = {PERF_TEST: "rows", USERS: "limit", STATIC: None, TX: None, GRAPHQL: None, PERF_MINIMAL: None,
                   PERF_POST: "records", PERF_NESTED: "depth", PERF_LARGE_PAYLOAD: "size_kb", PERF_MANY_PARAMS: None,
                   GRAPHQL_NESTED: None, USERS_POSTS: None}
"""Name of each workload's load parameter (None: the workload has none)."""


COLUMNS: dict[str, dict[str, str]] = {
    PERF_TEST: PERF_TEST_COLUMNS, USERS: USERS_COLUMNS, PERF_MINIMAL: PERF_MINIMAL_COLUMNS,
    PERF_POST: PERF_POST_COLUMNS, PERF_NESTED: PERF_NESTED_COLUMNS, PERF_LARGE_PAYLOAD: PERF_LARGE_PAYLOAD_COLUMNS,
    PERF_MANY_PARAMS: PERF_MANY_PARAMS_COLUMNS, GRAPHQL_NESTED: NESTED_COLUMNS, USERS_POSTS: NESTED_COLUMNS,
}
"""Every row-answer workload's columns and their PostgreSQL types (graphql: GRAPHQL_FIELDS)."""
