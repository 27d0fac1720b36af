"""Unit tests for pgarena.contract.values: the per-PostgreSQL-type verdict rules.

`expected` values are what PostgreSQL's `to_json` produces (parsed with `parse_json`, so numbers are
int / Decimal); `actual` values are hand-made imitations of what real drivers and JSON encoders emit.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from pgarena.contract.values import (
    RULES,
    Verdict,
    json_equal,
    judge,
    parse_interval,
    parse_json,
    worst,
)

EXACT = Verdict.EXACT
EQUIV = Verdict.EQUIVALENT
WRONG = Verdict.WRONG

UUID = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
TSTZ = "2024-01-15T10:30:00+00:00"  # to_json(timestamptz) with TimeZone=UTC
TS = "2024-01-15T10:30:00"  # to_json(timestamp)
FULL_INTERVAL = "1 year 2 mons 3 days 04:05:06.789"  # to_json(interval), IntervalStyle=postgres
DAY_INTERVAL = "3 days 04:05:06.789"  # no months: 273906.789 seconds in total
J = parse_json  # shorthand: build values the way the verifier does, from JSON text


# (pg_type, expected, actual, verdict, reason substring or None)
CASES: list[tuple[str, object, object, Verdict, str | None]] = [
    # --- text / varchar -------------------------------------------------------------------------
    ("text", "ABCDEFGHIJKLMNOPRSTUVWXYZ", "ABCDEFGHIJKLMNOPRSTUVWXYZ", EXACT, None),
    ("text", "abc", "abd", WRONG, "expected"),
    ("text", "1", 1, WRONG, None),
    ("text", "", "", EXACT, None),
    ("varchar", "hello", "hello", EXACT, None),
    ("varchar", "hello", "hello ", WRONG, None),
    # --- char(n) --------------------------------------------------------------------------------
    ("bpchar", "abc       ", "abc       ", EXACT, None),
    ("bpchar", "abc       ", "abc", EQUIV, "char(n) padding trimmed"),
    ("bpchar", "abc       ", "ab", WRONG, None),
    ("bpchar", "abc       ", "ABC", WRONG, None),
    ("bpchar", "abc       ", 5, WRONG, None),
    # --- integers -------------------------------------------------------------------------------
    ("int2", 32767, J("32767"), EXACT, None),
    ("int2", 5, 6, WRONG, None),
    ("int4", 1234567890, J("1234567890"), EXACT, None),
    ("int4", 5, "5", EQUIV, "as a string"),
    ("int4", 5, J("5.0"), EQUIV, "as a float"),
    ("int4", 5, "five", WRONG, None),
    ("int4", 1, True, WRONG, None),
    ("int4", 0, False, WRONG, None),
    ("int8", 9223372036854769999, J("9223372036854769999"), EXACT, None),
    ("int8", 9223372036854769999, J('"9223372036854769999"'), EQUIV, "as a string"),
    # a JavaScript Number / float64 prints 9223372036854769999 as 9223372036854770000
    ("int8", 9223372036854769999, J("9223372036854770000"), WRONG, "rounded through a double"),
    ("int8", 9223372036854769999, J('"9223372036854770000"'), WRONG, None),
    ("int8", 9223372036854769999, J("9.22337203685477e18"), WRONG, None),
    # --- numeric --------------------------------------------------------------------------------
    # judged by the token's digits: PostgreSQL writes numeric(12,4) with its scale (12345.6790)
    ("numeric", J("12345.6789"), J("12345.6789"), EXACT, "JSON number with PostgreSQL's digits"),
    ("numeric", J("12345.6790"), J("12345.6790"), EXACT, "12345.6790"),
    ("numeric", J("12345.6790"), J("1.23456790e4"), EXACT, None),  # same digits and scale, exponent form
    ("numeric", J("12345.6789"), J("12345.67890"), WRONG, "other digits"),
    ("numeric", J("12345.6790"), J("12345.679"), WRONG, "scale lost"),  # through a binary float
    ("numeric", J("12.5000"), J("12.5"), WRONG, "same value, other digits"),
    ("numeric", J("12.5000"), 12.5, WRONG, "other digits"),  # a Python float from a plain json.loads
    ("numeric", J("12.0000"), J("12"), WRONG, "other digits"),  # an integer token
    ("numeric", J("99999999.9990"), J("99999999.999"), WRONG, "other digits"),
    ("numeric", J("0.3000"), J("0.30000000000000004"), WRONG, "expected 0.3000"),
    ("numeric", J("12345.6789"), J('"12345.6789"'), EQUIV, "numeric as an exact decimal string"),
    ("numeric", J("12.5000"), J('"12.5000"'), EQUIV, "exact decimal string"),
    ("numeric", J("12.5000"), J('"12.5"'), WRONG, "string with other digits"),
    ("numeric", J("-0.5000"), J("-0.5"), WRONG, "other digits"),
    ("numeric", J("0.0000"), J("0"), EQUIV, "zero without its scale"),  # pgx's pgtype.Numeric
    ("numeric", J("0.0000"), J("0.0000"), EXACT, None),
    ("numeric", J("0.0000"), J("0.0001"), WRONG, "expected 0.0000"),
    ("numeric", J("12.5000"), "NaN", WRONG, None),
    ("numeric", J("12345.6789"), "12345.6790", WRONG, None),
    ("numeric", J("12345.6789"), J("12345.679"), WRONG, None),
    ("numeric", J("12345.6789"), "twelve", WRONG, None),
    ("numeric", J("1"), True, WRONG, None),
    # --- real (float4) --------------------------------------------------------------------------
    ("float4", J("123.45"), J("123.45"), EXACT, None),
    # asyncpg widens float4 to a Python float: 124.45::real prints as 124.44999694824219
    ("float4", J("124.45"), J("124.44999694824219"), EXACT, None),
    ("float4", J("124.45"), J('"124.45"'), EQUIV, "float as a string"),
    ("float4", J("124.45"), J("124.46"), WRONG, "tolerance"),
    ("float4", J("124.45"), J("124.4"), WRONG, None),
    ("float4", J("1"), True, WRONG, None),
    # --- double precision (float8) --------------------------------------------------------------
    ("float8", J("123456.789012"), J("123456.789012"), EXACT, None),
    ("float8", J("0.1"), 0.1, EXACT, None),
    ("float8", J("123456.789012"), J('"123456.789012"'), EQUIV, "float as a string"),
    ("float8", J("123456.789012"), J("123456.78901"), WRONG, None),
    # float4 noise is far outside float8's tolerance
    ("float8", J("124.45"), J("124.44999694824219"), WRONG, None),
    # --- bool -----------------------------------------------------------------------------------
    ("bool", True, True, EXACT, None),
    ("bool", False, False, EXACT, None),
    ("bool", True, False, WRONG, None),
    ("bool", True, "t", EQUIV, "bool as"),
    ("bool", True, "true", EQUIV, None),
    ("bool", True, 1, EQUIV, None),
    ("bool", False, "false", EQUIV, None),
    ("bool", False, 0, EQUIV, None),
    ("bool", False, "nope", WRONG, None),
    ("bool", True, "f", WRONG, None),
    ("bool", True, 2, WRONG, None),
    # --- date -----------------------------------------------------------------------------------
    ("date", "2024-01-15", "2024-01-15", EXACT, None),
    ("date", "2024-01-15", "2024-01-15T00:00:00.000Z", EQUIV, "date as a timestamp"),
    ("date", "2024-01-15", "2024-01-15T00:00:00", EQUIV, "date as a timestamp"),
    # node-postgres in a UTC+1 process: local midnight shifted to the previous UTC day
    ("date", "2024-01-15", "2024-01-14T23:00:00.000Z", WRONG, None),
    ("date", "2024-01-15", "2024-01-15T10:00:00", WRONG, None),
    ("date", "2024-01-15", "2024-01-16", WRONG, None),
    ("date", "2024-01-15", 20240115, WRONG, None),
    # --- time -----------------------------------------------------------------------------------
    ("time", "10:30:00", "10:30:00", EXACT, None),
    ("time", "10:30:00", "10:30:00.000000", EXACT, None),
    ("time", "12:34:56.789", "12:34:56.789000", EXACT, None),
    ("time", "12:34:56.123456", "12:34:56.123456", EXACT, None),
    ("time", "10:30:00", 37800, EQUIV, "seconds since midnight"),
    ("time", "10:30:00", 37800000, EQUIV, "milliseconds since midnight"),
    ("time", "10:30:00", 37800000000, EQUIV, "microseconds since midnight"),
    ("time", "10:30:00", "10:31:00", WRONG, None),
    ("time", "12:34:56.789", "12:34:56", WRONG, None),
    ("time", "10:30:00", "half past ten", WRONG, None),
    ("time", "10:30:00", 37801, WRONG, None),
    # --- timestamptz ----------------------------------------------------------------------------
    ("timestamptz", TSTZ, TSTZ, EXACT, None),
    ("timestamptz", TSTZ, "2024-01-15T10:30:00Z", EXACT, None),
    ("timestamptz", TSTZ, "2024-01-15T10:30:00.000Z", EXACT, None),
    ("timestamptz", TSTZ, "2024-01-15T10:30:00.000000Z", EXACT, None),
    ("timestamptz", TSTZ, "2024-01-15T11:30:00+01:00", EXACT, None),  # the same instant
    ("timestamptz", TSTZ, "2024-01-15 10:30:00+00", EQUIV, "not ISO 8601"),
    ("timestamptz", TSTZ, "2024-01-15T10:30:00", EQUIV, "offset missing"),
    ("timestamptz", TSTZ, 1705314600, EQUIV, "epoch seconds"),
    ("timestamptz", TSTZ, 1705314600000, EQUIV, "epoch milliseconds"),
    ("timestamptz", TSTZ, "2024-01-15T10:30:01Z", WRONG, "instant"),
    ("timestamptz", TSTZ, "2024-01-15T10:30:00+01:00", WRONG, None),  # another instant
    ("timestamptz", TSTZ, "2024-01-15T11:30:00", WRONG, "without offset"),
    ("timestamptz", TSTZ, 1705314601, WRONG, None),
    ("timestamptz", TSTZ, "yesterday", WRONG, "ISO 8601"),
    ("timestamptz", TSTZ, True, WRONG, None),
    # node-postgres: a JS Date keeps milliseconds only
    ("timestamptz", "2000-02-29T00:59:59.123456+00:00", "2000-02-29T00:59:59.123Z", WRONG, None),
    # --- timestamp (without time zone) ----------------------------------------------------------
    ("timestamp", TS, TS, EXACT, None),
    ("timestamp", TS, "2024-01-15T10:30:00.000000", EXACT, None),
    ("timestamp", TS, "2024-01-15T10:30:00Z", EQUIV, "offset added"),
    ("timestamp", TS, "2024-01-15T10:30:00.000Z", EQUIV, "offset added"),
    ("timestamp", TS, "2024-01-15 10:30:00", EQUIV, "not ISO 8601"),
    ("timestamp", TS, "2024-01-15T10:31:00", WRONG, None),
    ("timestamp", TS, "2024-01-15T10:31:00Z", WRONG, None),
    ("timestamp", TS, "not a timestamp", WRONG, None),
    ("timestamp", "2000-02-29T00:59:59.123456", "2000-02-29T00:59:59.123Z", WRONG, None),
    ("timestamp", "2000-02-29T00:59:59.123456", "2000-02-29T00:59:59.123", WRONG, None),
    # --- interval -------------------------------------------------------------------------------
    ("interval", FULL_INTERVAL, FULL_INTERVAL, EXACT, None),
    ("interval", FULL_INTERVAL, "P1Y2M3DT4H5M6.789S", EXACT, None),
    ("interval", FULL_INTERVAL, "P14M3DT4H5M6.789S", EXACT, None),
    ("interval", "-1 days -02:00:00", "-P1DT2H", EXACT, None),
    ("interval", "1 day", "P1D", EXACT, None),
    ("interval", "00:00:00", "PT0S", EXACT, None),
    # node-postgres' postgres-interval object
    (
        "interval",
        FULL_INTERVAL,
        {"years": 1, "months": 2, "days": 3, "hours": 4, "minutes": 5, "seconds": 6, "milliseconds": 789},
        EQUIV,
        "interval as an object",
    ),
    ("interval", "00:00:00", {}, EQUIV, "interval as an object"),
    # pgx's pgtype.Interval through encoding/json
    (
        "interval",
        FULL_INTERVAL,
        {"Microseconds": 14706789000, "Days": 3, "Months": 14, "Valid": True},
        EQUIV,
        "interval as an object",
    ),
    ("interval", DAY_INTERVAL, J("273906.789"), EQUIV, "interval as seconds"),
    ("interval", DAY_INTERVAL, 273906789, EQUIV, "interval as milliseconds"),
    ("interval", DAY_INTERVAL, 273906789000, EQUIV, "interval as microseconds"),
    # Go time.Duration through encoding/json
    ("interval", DAY_INTERVAL, 273906789000000, EQUIV, "interval as nanoseconds"),
    # pydantic writes timedelta(days=400) as P1Y35D
    ("interval", "400 days", "P1Y35D", EQUIV, "365-day years"),
    ("interval", "400 days 01:00:00", "P1Y35DT1H", EQUIV, "365-day years"),
    ("interval", DAY_INTERVAL, "P3DT4H5M7S", WRONG, None),
    ("interval", DAY_INTERVAL, "3 days 04:05:07", WRONG, None),
    ("interval", DAY_INTERVAL, 273906, WRONG, None),
    ("interval", "1 day", {"days": 2}, WRONG, None),
    ("interval", "1 day", {"days": 1, "fortnights": 0}, WRONG, None),
    ("interval", "1 year", "P365D", WRONG, None),  # a year is 12 months, not 365 days
    ("interval", "1 mon", 2592000, WRONG, None),  # months have no fixed length in seconds
    ("interval", "1 day", "one day", WRONG, None),
    # --- uuid -----------------------------------------------------------------------------------
    ("uuid", UUID, UUID, EXACT, None),
    ("uuid", UUID, UUID.upper(), EQUIV, "uuid spelled"),
    ("uuid", UUID, UUID.replace("-", ""), EQUIV, "uuid spelled"),
    ("uuid", UUID, "b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", WRONG, None),
    ("uuid", UUID, UUID[:-1], WRONG, None),
    ("uuid", UUID, 42, WRONG, None),
    # --- json / jsonb ---------------------------------------------------------------------------
    ("json", {"key": "value"}, {"key": "value"}, EXACT, None),
    ("json", J('{"a": [1, 2.5, {"b": null}]}'), J('{"a": [1, 2.50, {"b": null}]}'), EXACT, None),
    ("json", {"key": "value"}, '{"key":"value"}', WRONG, "escaped string"),
    ("json", {"key": "value"}, '{"key": "value"}', WRONG, "escaped string"),
    ("json", {"key": "value"}, {"key": "other"}, WRONG, None),
    ("json", {"key": "value"}, "not json at all", WRONG, None),
    ("json", {"a": 1}, {"type": "json", "value": '{"a":1}'}, WRONG, "driver metadata"),
    ("jsonb", {"key": "value"}, {"key": "value"}, EXACT, None),
    ("jsonb", {"a": 1, "b": 2}, {"b": 2, "a": 1}, EXACT, None),  # key order is irrelevant
    ("jsonb", {"a": 1}, {"a": J("1.0")}, EXACT, None),
    ("jsonb", {"a": 1}, {"a": True}, WRONG, None),
    ("jsonb", {"a": 1}, {"a": 1, "b": 2}, WRONG, None),
    ("jsonb", {"key": "value"}, '{"key":"value"}', WRONG, "escaped string"),
    ("jsonb", [1, 2], "[1, 2]", WRONG, "escaped string"),
    # --- int[] ----------------------------------------------------------------------------------
    ("_int4", [1, 2, 3], [1, 2, 3], EXACT, None),
    ("_int4", [], [], EXACT, None),
    ("_int4", [1, None, 3], [1, None, 3], EXACT, None),
    ("_int4", [1, 2, 3], ["1", "2", "3"], EQUIV, "element"),
    ("_int4", [1, 2, 3], "{1,2,3}", WRONG, "PostgreSQL text"),
    ("_int4", [1, 2, 3], "[1,2,3]", WRONG, None),
    ("_int4", [1, 2, 3], [1, 2], WRONG, None),
    ("_int4", [1, 2, 3], [1, 2, 3, 4], WRONG, None),
    ("_int4", [1, 2, 3], [1, 2, 4], WRONG, "element"),
    ("_int4", [1, 2, 3], ["1", "2", "4"], WRONG, "element"),  # the wrong element outranks the strings
    ("_int4", [1, None, 3], [1, 0, 3], WRONG, "expected null"),
    ("_int4", [1, 2, 3], [1, None, 3], WRONG, None),
    # --- text[] ---------------------------------------------------------------------------------
    ("_text", ["a", "b", "c"], ["a", "b", "c"], EXACT, None),
    ("_text", ["a", "b", "c"], "{a,b,c}", WRONG, "PostgreSQL text"),
    ("_text", ["a", "b", "c"], ["a", "b", "d"], WRONG, "element"),
    ("_text", ["a", "b", "c"], ["c", "b", "a"], WRONG, None),
    ("_text", ["a", "b", "c"], {"0": "a", "1": "b", "2": "c"}, WRONG, None),
]


def _case_id(case: tuple) -> str:
    pg_type, expected, actual, verdict, _ = case
    return f"{pg_type}-{verdict.value}-{actual!r}"[:90]


@pytest.mark.parametrize(("pg_type", "expected", "actual", "verdict", "reason"), CASES, ids=map(_case_id, CASES))
def test_judge_verdicts(pg_type, expected, actual, verdict, reason):
    got_verdict, got_reason = judge(pg_type, expected, actual)
    assert got_verdict is verdict, got_reason
    if verdict is EXACT and pg_type != "numeric":
        assert got_reason is None  # numeric says which encoding was exact (the matrix shows it)
    else:
        assert got_reason, "a non-exact verdict must say why"
    if reason is not None:
        assert reason in got_reason


@pytest.mark.parametrize("pg_type", sorted(RULES))
def test_every_rule_has_exact_and_wrong_cases(pg_type):
    """The table above must exercise each PostgreSQL type with a good and a bad value."""
    verdicts = {case[3] for case in CASES if case[0] == pg_type}
    assert {EXACT, WRONG} <= verdicts


# --- specific behaviours named in docs/contract.md ---------------------------------------------------


@pytest.mark.parametrize("pg_type", ["json", "jsonb"])
def test_json_as_escaped_string_is_wrong(pg_type):
    verdict, reason = judge(pg_type, J('{"key":"value"}'), J('"{\\"key\\":\\"value\\"}"'))
    assert verdict is WRONG
    assert "escaped string" in reason


@pytest.mark.parametrize(("pg_type", "expected", "text"), [("_int4", [1, 2, 3], "{1,2,3}"), ("_text", ["a", "b", "c"], "{a,b,c}")])
def test_array_as_postgres_text_is_wrong(pg_type, expected, text):
    verdict, reason = judge(pg_type, expected, text)
    assert verdict is WRONG
    assert "PostgreSQL text" in reason


def test_bigint_rounded_through_double_is_wrong_with_hint():
    expected = J("9223372036854769999")
    actual = J("9223372036854770000")
    assert isinstance(actual, int)
    verdict, reason = judge("int8", expected, actual)
    assert verdict is WRONG
    assert "rounded through a double" in reason
    assert "9223372036854769999" in reason and "9223372036854770000" in reason


def test_small_integer_mismatch_has_no_double_hint():
    verdict, reason = judge("int8", 100, 101)
    assert verdict is WRONG
    assert "double" not in reason


def test_bigint_as_exact_string_is_equivalent():
    assert judge("int8", 9223372036854769999, "9223372036854769999") == (EQUIV, 'integer as a string: "9223372036854769999"')


def test_numeric_as_string_is_equivalent():
    verdict, reason = judge("numeric", J("12345.6789"), "12345.6789")
    assert verdict is EQUIV
    assert "numeric as an exact decimal string" in reason


@pytest.mark.parametrize("token", ["12.5000", "0.30000000000000004", "99999999.9990", "-0.0001", "1E+3"])
def test_parse_json_keeps_number_tokens_digits(token):
    value = parse_json(f'{{"n": {token}}}')["n"]
    assert isinstance(value, Decimal) and str(value) == token


def test_parse_json_keeps_integers_exact_and_floats_judged_with_tolerance():
    parsed = parse_json('[9007199254740993, 123.45000001, 1.0]')
    assert parsed[0] == 2**53 + 1 and isinstance(parsed[0], int)
    assert judge("float4", J("123.45"), parsed[1]) == (EXACT, None)  # tolerance judges still work on Decimals
    assert judge("int4", 1, parsed[2])[0] is EQUIV  # an integer written as 1.0


def test_float4_widened_is_exact_but_other_value_wrong():
    assert judge("float4", J("124.45"), J("124.44999694824219")) == (EXACT, None)
    assert judge("float4", J("124.45"), J("124.55"))[0] is WRONG


@pytest.mark.parametrize("actual", ["2024-01-15T10:30:00Z", "2024-01-15T10:30:00+00:00"])
def test_timestamptz_z_and_utc_offset_are_both_exact(actual):
    assert judge("timestamptz", "2024-01-15T10:30:00Z", actual) == (EXACT, None)
    assert judge("timestamptz", "2024-01-15T10:30:00+00:00", actual) == (EXACT, None)


def test_timestamp_without_zone_with_added_z_is_equivalent():
    verdict, reason = judge("timestamp", "2024-01-15T10:30:00", "2024-01-15T10:30:00Z")
    assert verdict is EQUIV
    assert "offset added" in reason


def test_node_postgres_millisecond_truncation_is_wrong():
    verdict, _ = judge("timestamp", "2000-02-29T00:59:59.123456", "2000-02-29T00:59:59.123Z")
    assert verdict is WRONG


def test_date_as_midnight_timestamp_is_equivalent():
    assert judge("date", "2024-01-15", "2024-01-15T00:00:00.000Z")[0] is EQUIV


def test_char_trimmed_is_equivalent():
    assert judge("bpchar", "ab   ", "ab") == (EQUIV, "char(n) padding trimmed")


def test_uuid_uppercase_is_equivalent():
    assert judge("uuid", UUID, UUID.upper())[0] is EQUIV


# --- null handling ----------------------------------------------------------------------------------


@pytest.mark.parametrize("pg_type", sorted(RULES))
def test_null_expected_and_null_returned_is_exact(pg_type):
    assert judge(pg_type, None, None) == (EXACT, None)


@pytest.mark.parametrize(
    ("pg_type", "actual"),
    [("text", ""), ("text", "null"), ("int4", 0), ("bool", False), ("json", {}), ("_int4", [])],
)
def test_expected_null_but_value_returned_is_wrong(pg_type, actual):
    verdict, reason = judge(pg_type, None, actual)
    assert verdict is WRONG
    assert "expected null" in reason


@pytest.mark.parametrize(
    ("pg_type", "expected"),
    [
        ("text", "x"),
        ("int4", 0),
        ("int8", 9223372036854769999),
        ("bool", False),
        ("numeric", Decimal("0")),
        ("timestamptz", TSTZ),
        ("interval", "00:00:00"),
        ("json", {}),
        ("jsonb", "a JSON string"),
        ("_text", []),
    ],
)
def test_value_lost_is_wrong(pg_type, expected):
    verdict, reason = judge(pg_type, expected, None)
    assert verdict is WRONG
    assert "value lost" in reason


# --- json_equal -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, 1.0, True),
        (1, Decimal("1.0"), True),
        (Decimal("1.50"), Decimal("1.5"), True),
        (Decimal("0.1"), 0.1, True),
        (10**20, Decimal("1E+20"), True),
        (True, True, True),
        (True, 1, False),
        (1, True, False),
        (False, 0, False),
        (None, None, True),
        (None, 0, False),
        ("1", 1, False),
        ("a", "a", True),
        ([1, {"a": "b"}], [1.0, {"a": "b"}], True),
        ([1, 2], [2, 1], False),
        ([1, 2], [1, 2, 3], False),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ({"a": 1}, {"b": 1}, False),
        ({"a": [True]}, {"a": [1]}, False),
        ({}, [], False),
    ],
)
def test_json_equal(a, b, equal):
    assert json_equal(a, b) is equal
    assert json_equal(b, a) is equal


# --- parse_json -------------------------------------------------------------------------------------


def test_parse_json_keeps_decimals_exact():
    value = parse_json('{"n": 12345.67890, "f": 0.1, "i": 9223372036854769999, "e": 1.5e3}')
    assert isinstance(value["n"], Decimal) and str(value["n"]) == "12345.67890"
    assert value["f"] == Decimal("0.1")  # not the binary float 0.1000000000000000055...
    assert value["f"] != Decimal(0.1)
    assert type(value["i"]) is int and value["i"] == 9223372036854769999
    assert isinstance(value["e"], Decimal) and value["e"] == 1500


def test_parse_json_accepts_bytes_and_nested_values():
    assert parse_json(b'[true, null, "x", [1.25]]') == [True, None, "x", [Decimal("1.25")]]


def test_parse_json_rejects_invalid_text():
    with pytest.raises(ValueError):
        parse_json("{not json}")


# --- parse_interval ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("1 year 2 mons 3 days 04:05:06.789", (14, 3, Decimal("14706.789"))),
        ("2 years", (24, 0, Decimal(0))),
        ("1 mon", (1, 0, Decimal(0))),
        ("3 days", (0, 3, Decimal(0))),
        ("1 day", (0, 1, Decimal(0))),
        ("00:00:00", (0, 0, Decimal(0))),
        ("04:05:06", (0, 0, Decimal(14706))),
        ("100:00:00", (0, 0, Decimal(360000))),
        ("-00:00:01", (0, 0, Decimal(-1))),
        ("-1 days -02:00:00", (0, -1, Decimal(-7200))),
        ("1 day -00:00:01", (0, 1, Decimal(-1))),
        ("-1 years -2 mons +3 days", (-14, 3, Decimal(0))),
        ("P1Y2M3DT4H5M6.789S", (14, 3, Decimal("14706.789"))),
        ("P1D", (0, 1, Decimal(0))),
        ("P2W", (0, 14, Decimal(0))),
        ("PT0S", (0, 0, Decimal(0))),
        ("PT1,5S", (0, 0, Decimal("1.5"))),
        ("PT36H", (0, 0, Decimal(129600))),
        ("P1M", (1, 0, Decimal(0))),
        ("PT1M", (0, 0, Decimal(60))),
        ("-P1DT2H", (0, -1, Decimal(-7200))),
        (" P1D ", (0, 1, Decimal(0))),
        ("", None),
        ("   ", None),
        ("P", None),
        ("PT", None),
        ("garbage", None),
        ("1 fortnight", None),
        ("1:2:3", None),
    ],
)
def test_parse_interval(text, parsed):
    assert parse_interval(text) == parsed


# --- Verdict helpers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "worse"),
    [
        (EXACT, EXACT, EXACT),
        (EXACT, EQUIV, EQUIV),
        (EQUIV, EXACT, EQUIV),
        (EQUIV, WRONG, WRONG),
        (WRONG, EXACT, WRONG),
        (WRONG, WRONG, WRONG),
    ],
)
def test_worst(a, b, worse):
    assert worst(a, b) is worse


def test_verdict_symbols_are_distinct():
    symbols = {v.symbol for v in Verdict}
    assert len(symbols) == 3
    assert Verdict.EXACT.symbol == "✅" and Verdict.WRONG.symbol == "❌"


def test_verdict_is_a_string_enum():
    assert Verdict("equivalent") is EQUIV
    assert EXACT == "exact"
