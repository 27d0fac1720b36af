"""Value-by-value judgement of a stack's JSON against PostgreSQL's own JSON of the same rows.

The expected value of every cell is what PostgreSQL's `to_json` produces (parsed with exact decimals);
each PostgreSQL type has a rule that says what is **exact** (the canonical JSON encoding), what is
**equivalent** (the same value in another encoding: a number as a string, a timestamp with a space, an
interval as seconds) and what is **wrong** (json as an escaped string, an array as `{1,2,3}` text, a
bigint rounded through a double, a lost value). docs/verification.md lists the rules in a table.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from enum import Enum
from typing import Any

FLOAT4_REL_TOLERANCE = 1e-6
"""real: a float32 carries ~7 significant digits; drivers widening it to float64 print more."""
FLOAT8_REL_TOLERANCE = 1e-12
"""double precision: shortest round-trip printing differs only in the last ulp."""


class Verdict(str, Enum):
    """How a column's values compare with PostgreSQL's own JSON, best first."""

    EXACT = "exact"
    EQUIVALENT = "equivalent"
    WRONG = "wrong"

    @property
    def symbol(self) -> str:
        return {"exact": "✅", "equivalent": "⚠️", "wrong": "❌"}[self.value]


Judgement = tuple[Verdict, str | None]
EXACT: Judgement = (Verdict.EXACT, None)


def worst(a: Verdict, b: Verdict) -> Verdict:
    order = [Verdict.EXACT, Verdict.EQUIVALENT, Verdict.WRONG]
    return max(a, b, key=order.index)


def parse_json(text: str | bytes) -> Any:
    """Parse JSON keeping every number token as it was written.

    A token with a fraction or an exponent becomes a Decimal built from the token's text, which keeps
    its digits and its exponent: `12.5000` stays `Decimal('12.5000')` (not 12.5) and `0.30000000000000004`
    keeps all 17 digits, so the numeric judge can compare a stack's token with PostgreSQL's canonical
    text. An integer token becomes an exact int (a bigint rounded through a double stays visible).
    """
    return json.loads(text, parse_float=Decimal, parse_int=int)


def json_kind(value: Any) -> str:
    """What a parsed JSON value is, in JSON's words (RFC 8259): `null`, `true`/`false`, a number, a string, an
    array, an object — for messages (Python's NoneType, dict or Decimal mean nothing to a stack's author)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, Decimal)):
        return f"a number ({_show(value, 20)})"
    if isinstance(value, str):
        return f"a string ({_show(value, 40)})"
    if isinstance(value, list):
        return f"an array of {len(value)}"
    if isinstance(value, dict):
        keys = ", ".join(f'"{k}"' for k in list(value)[:4]) + (", …" if len(value) > 4 else "")
        return f"an object ({{{keys}}})" if value else "an empty object"
    return type(value).__name__


def not_json(exc: ValueError) -> str:
    """Why a body is not JSON, in the contract's words (`not JSON: Expecting value at line 1 column 1`)."""
    return f"not JSON: {getattr(exc, 'msg', str(exc))}" + (
        f" at line {exc.lineno} column {exc.colno}" if hasattr(exc, "lineno") else "")


def _show(value: Any, limit: int = 80) -> str:
    """A value as the JSON it came from (a Decimal as its number token, not as a string)."""
    if isinstance(value, Decimal):
        text = str(value)
    else:
        text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, Decimal, float)) and not isinstance(value, bool)


def json_equal(a: Any, b: Any) -> bool:
    """Deep equality of parsed JSON; numbers compare by value (1 == 1.0), bools are not numbers."""
    if _is_number(a) and _is_number(b):
        return Decimal(str(a)) == Decimal(str(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _to_decimal(value: Any) -> Decimal | None:
    try:
        if _is_number(value):
            return Decimal(str(value))
        if isinstance(value, str) and value.strip():
            return Decimal(value.strip())
    except InvalidOperation:
        return None
    return None


def _judge_text(expected: str, actual: Any) -> Judgement:
    if isinstance(actual, str) and actual == expected:
        return EXACT
    return Verdict.WRONG, f"got {_show(actual)}, expected {_show(expected)}"


def _judge_bpchar(expected: str, actual: Any) -> Judgement:
    if isinstance(actual, str):
        if actual == expected:
            return EXACT
        if actual == expected.rstrip(" "):
            return Verdict.EQUIVALENT, "char(n) padding trimmed"
    return Verdict.WRONG, f"got {_show(actual)}, expected {_show(expected)}"


def _judge_integer(expected: int, actual: Any) -> Judgement:
    is_int = isinstance(actual, int) and not isinstance(actual, bool)
    number = actual if is_int else _to_decimal(actual)
    if number is not None and number == expected:
        if is_int:
            return EXACT
        kind = "a string" if isinstance(actual, str) else "a float"
        return Verdict.EQUIVALENT, f"integer as {kind}: {_show(actual)}"
    hint = ""
    if number is not None and abs(expected) > 2**53 and float(number) == float(expected):
        hint = " (rounded through a double)"
    return Verdict.WRONG, f"got {_show(actual)}, expected {expected}{hint}"


def _judge_numeric(expected: Any, actual: Any) -> Judgement:
    """numeric is exact decimal: judged by the digits of the JSON token, not by its value alone.

    PostgreSQL writes a numeric(12,4) with its scale (`12345.6790`). A number token with the same
    digits and scale is exact; the same digits in a string are an equivalent encoding; a token whose
    digits differ (`12345.679`: the scale lost through a binary float; `0.30000000000000004`) is wrong,
    even when it converts back to the same value. Zero is the exception: `0` for `0.0000` is equivalent
    (decimal types such as pgx's normalise it, and a float cannot be told apart on zero alone).
    """
    want = _to_decimal(expected)
    assert want is not None, f"PostgreSQL numeric not understood: {expected!r}"
    got = _to_decimal(actual)
    if got is None or got.is_nan() or got != want:
        return Verdict.WRONG, f"got {_show(actual)}, expected {want}"
    same_digits = got.as_tuple() == want.as_tuple()
    if isinstance(actual, str):
        if same_digits:
            return Verdict.EQUIVALENT, f"numeric as an exact decimal string: {_show(actual)}"
        return Verdict.WRONG, f"numeric as a string with other digits: {_show(actual)}, expected {want}"
    if same_digits:
        return Verdict.EXACT, f"numeric as a JSON number with PostgreSQL's digits: {_show(actual)}"
    if want.is_zero():  # pgx writes 0.0000 as 0: zero is the one value exact decimal types normalise
        return Verdict.EQUIVALENT, f"zero without its scale: {_show(actual)} for {want}"
    return Verdict.WRONG, (f"numeric token {_show(actual)} for {want}: same value, other digits "
                           "(the scale lost, e.g. through a binary float)")


def _float_judge(tolerance: float) -> Callable[[Any, Any], Judgement]:
    def judge(expected: Any, actual: Any) -> Judgement:
        want = float(expected)
        got = _to_decimal(actual)
        if got is not None and math.isclose(float(got), want, rel_tol=tolerance, abs_tol=tolerance):
            if isinstance(actual, str):
                return Verdict.EQUIVALENT, f"float as a string: {_show(actual)}"
            return EXACT
        return Verdict.WRONG, f"got {_show(actual)}, expected {expected} (relative tolerance {tolerance:g})"

    return judge


def _judge_bool(expected: bool, actual: Any) -> Judgement:
    if isinstance(actual, bool):
        return EXACT if actual == expected else (Verdict.WRONG, f"got {actual}, expected {expected}")
    spelled = {"t": True, "true": True, "1": True, "f": False, "false": False, "0": False}
    as_bool = spelled.get(str(actual).lower()) if isinstance(actual, (str, int)) else None
    if as_bool == expected:
        return Verdict.EQUIVALENT, f"bool as {_show(actual)}"
    return Verdict.WRONG, f"got {_show(actual)}, expected {expected}"


_ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}(:?\d{2})?)?$")


def _parse_datetime(value: str) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(value.strip())
    except ValueError:
        return None


def _judge_date(expected: str, actual: Any) -> Judgement:
    if actual == expected:
        return EXACT
    if isinstance(actual, str):
        parsed = _parse_datetime(actual)
        midnight = parsed is not None and parsed.time() == dt.time(0) and parsed.utcoffset() in (None, dt.timedelta(0))
        if parsed is not None and midnight and parsed.date().isoformat() == expected:
            return Verdict.EQUIVALENT, f"date as a timestamp: {_show(actual)}"
    return Verdict.WRONG, f"got {_show(actual)}, expected {_show(expected)}"


def _judge_time(expected: str, actual: Any) -> Judgement:
    want = dt.time.fromisoformat(expected)
    if isinstance(actual, str):
        try:
            got = dt.time.fromisoformat(actual)
        except ValueError:
            got = None
        if got == want:
            return EXACT
    if _is_number(actual):
        micros = (want.hour * 3600 + want.minute * 60 + want.second) * 10**6 + want.microsecond
        for unit, scale in (("seconds", 10**6), ("milliseconds", 10**3), ("microseconds", 1)):
            if Decimal(str(actual)) * scale == micros:
                return Verdict.EQUIVALENT, f"time as {unit} since midnight: {actual}"
    return Verdict.WRONG, f"got {_show(actual)}, expected {_show(expected)}"


def _judge_timestamp(expected: str, actual: Any, *, with_zone: bool) -> Judgement:
    want = dt.datetime.fromisoformat(expected)
    if with_zone:
        want = want.astimezone(dt.timezone.utc)
    if _is_number(actual):
        epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
        instant = want if want.tzinfo else want.replace(tzinfo=dt.timezone.utc)
        for unit, scale in (("seconds", 1), ("milliseconds", 1000)):
            if Decimal(str(actual)) == Decimal(str((instant - epoch).total_seconds())) * scale:
                return Verdict.EQUIVALENT, f"timestamp as epoch {unit}: {actual}"
        return Verdict.WRONG, f"got {actual}, expected {expected}"
    if not isinstance(actual, str) or (got := _parse_datetime(actual)) is None:
        return Verdict.WRONG, f"got {_show(actual)}, expected an ISO 8601 timestamp {expected}"
    iso = bool(_ISO_DATETIME.match(actual.strip()))
    if with_zone:
        if got.tzinfo is None:
            if got.replace(tzinfo=dt.timezone.utc) == want:
                return Verdict.EQUIVALENT, f"offset missing (equal if read as UTC): {_show(actual)}"
            return Verdict.WRONG, f"got {_show(actual)} without offset, expected {expected}"
        if got != want:
            return Verdict.WRONG, f"got {_show(actual)}, expected the instant {expected}"
        return EXACT if iso else (Verdict.EQUIVALENT, f"not ISO 8601: {_show(actual)}")
    if got.tzinfo is not None:
        if got.astimezone(dt.timezone.utc).replace(tzinfo=None) == want:
            return Verdict.EQUIVALENT, f"offset added to a timestamp without time zone: {_show(actual)}"
        return Verdict.WRONG, f"got {_show(actual)}, expected {expected}"
    if got != want:
        return Verdict.WRONG, f"got {_show(actual)}, expected {expected}"
    return EXACT if iso else (Verdict.EQUIVALENT, f"not ISO 8601: {_show(actual)}")


_PG_INTERVAL = re.compile(
    r"^\s*(?:(?P<years>[+-]?\d+) years?)?\s*(?:(?P<months>[+-]?\d+) mons?)?\s*"
    r"(?:(?P<days>[+-]?\d+) days?)?\s*"
    r"(?:(?P<sign>[+-])?(?P<h>\d+):(?P<m>\d{2}):(?P<s>\d{2}(?:\.\d+)?))?\s*$"
)
_ISO_DURATION = re.compile(
    r"^(?P<sign>-)?P(?:(?P<years>[+-]?\d+)Y)?(?:(?P<months>[+-]?\d+)M)?(?:(?P<weeks>[+-]?\d+)W)?"
    r"(?:(?P<days>[+-]?\d+)D)?(?:T(?:(?P<h>[+-]?\d+)H)?(?:(?P<m>[+-]?\d+)M)?(?:(?P<s>[+-]?\d+(?:[.,]\d+)?)S)?)?$"
)


def parse_interval(text: str) -> tuple[int, int, Decimal] | None:
    """(months, days, seconds) of a PostgreSQL-style or ISO 8601 interval string, or None."""
    if not text.strip():
        return None
    match = _PG_INTERVAL.match(text)
    if match and any(match.group(g) for g in ("years", "months", "days", "h")):
        seconds = Decimal(0)
        if match.group("h"):
            seconds = int(match.group("h")) * 3600 + int(match.group("m")) * 60 + Decimal(match.group("s"))
            if match.group("sign") == "-":
                seconds = -seconds
        months = int(match.group("years") or 0) * 12 + int(match.group("months") or 0)
        return months, int(match.group("days") or 0), seconds
    match = _ISO_DURATION.match(text.strip())
    if match and text.strip() not in ("P", "PT"):
        sign = -1 if match.group("sign") else 1
        months = int(match.group("years") or 0) * 12 + int(match.group("months") or 0)
        days = int(match.group("weeks") or 0) * 7 + int(match.group("days") or 0)
        seconds = (
            int(match.group("h") or 0) * 3600
            + int(match.group("m") or 0) * 60
            + Decimal((match.group("s") or "0").replace(",", "."))
        )
        return sign * months, sign * days, sign * seconds
    return None


_INTERVAL_FIELDS = {
    "years": (12, 0, 0), "months": (1, 0, 0), "days": (0, 1, 0), "hours": (0, 0, 3600), "minutes": (0, 0, 60),
    "seconds": (0, 0, 1), "milliseconds": (0, 0, Decimal("0.001")), "microseconds": (0, 0, Decimal("0.000001")),
}


def _interval_from_object(obj: dict) -> tuple[int, int, Decimal] | None:
    """(months, days, seconds) of an interval spelled as an object: node-postgres' {days, hours, ...},
    pgx's {Months, Days, Microseconds, Valid}; None if any key is not an interval field."""
    months, days, seconds = 0, 0, Decimal(0)
    for key, value in obj.items():
        name = str(key).lower()
        if name == "valid":
            if value is not True:
                return None
            continue
        if name not in _INTERVAL_FIELDS or not _is_number(value):
            return None
        m, d, s = _INTERVAL_FIELDS[name]
        months += int(value) * m if m else 0
        days += int(value) * d if d else 0
        seconds += Decimal(str(value)) * s if s else 0
    return months, days, seconds


def _judge_interval(expected: str, actual: Any) -> Judgement:
    want = parse_interval(expected)
    assert want is not None, f"PostgreSQL interval not understood: {expected}"
    months, days, seconds = want
    if isinstance(actual, str) and parse_interval(actual) == want:
        return EXACT
    # Other notations are equivalent only when they carry the same total (1 day = 86400 s, no months).
    total_seconds = days * 86400 + seconds if months == 0 else None
    if total_seconds is not None and _is_number(actual):
        units = (("seconds", 1), ("milliseconds", 10**3), ("microseconds", 10**6), ("nanoseconds", 10**9))
        for unit, scale in units:
            if Decimal(str(actual)) == total_seconds * scale:
                return Verdict.EQUIVALENT, f"interval as {unit}: {actual}"
    if total_seconds is not None and isinstance(actual, str) and (parsed := parse_interval(actual)):
        got_months, got_days, got_seconds = parsed
        if got_months % 12 == 0 and (got_months // 12 * 365 + got_days) * 86400 + got_seconds == total_seconds:
            how = "days folded into 365-day years" if got_months else "days spelled as 24-hour spans"
            return Verdict.EQUIVALENT, f"same total duration, {how}: {_show(actual)}"
    if isinstance(actual, dict) and _interval_from_object(actual) == want:
        return Verdict.EQUIVALENT, f"interval as an object: {_show(actual)}"
    return Verdict.WRONG, f"got {_show(actual)}, expected {_show(expected)}"


def _judge_uuid(expected: str, actual: Any) -> Judgement:
    if actual == expected:
        return EXACT
    if isinstance(actual, str) and actual.replace("-", "").lower() == expected.replace("-", ""):
        return Verdict.EQUIVALENT, f"uuid spelled {_show(actual)}"
    return Verdict.WRONG, f"got {_show(actual)}, expected {_show(expected)}"


def _judge_json(expected: Any, actual: Any) -> Judgement:
    if json_equal(expected, actual):
        return EXACT
    if isinstance(actual, str):
        try:
            decoded = parse_json(actual)
        except ValueError:
            decoded = None
        if json_equal(expected, decoded):
            return Verdict.WRONG, f"JSON returned as an escaped string: {_show(actual)}"
    if isinstance(actual, dict) and "value" in actual and "type" in actual:
        return Verdict.WRONG, f"JSON wrapped in driver metadata: {_show(actual)}"
    return Verdict.WRONG, f"got {_show(actual)}, expected {_show(expected)}"


def _array_judge(element: Callable[[Any, Any], Judgement]) -> Callable[[Any, Any], Judgement]:
    def judge(expected: Any, actual: Any) -> Judgement:
        if isinstance(actual, str) and actual.startswith("{"):
            return Verdict.WRONG, f"array returned as PostgreSQL text {_show(actual)}"
        if not isinstance(actual, list) or len(actual) != len(expected):
            return Verdict.WRONG, f"got {_show(actual)}, expected the JSON array {_show(expected)}"
        verdict, reason = EXACT
        for want, got in zip(expected, actual):
            item = element(want, got) if want is not None else _judge_null(got)
            if item[0] is not Verdict.EXACT and worst(verdict, item[0]) is not verdict:
                verdict, reason = item[0], f"element: {item[1]}"
        return verdict, reason

    return judge


def _judge_null(actual: Any) -> Judgement:
    return EXACT if actual is None else (Verdict.WRONG, f"got {_show(actual)}, expected null")


RULES: dict[str, Callable[[Any, Any], Judgement]] = {
    "text": _judge_text,
    "varchar": _judge_text,
    "bpchar": _judge_bpchar,
    "int2": _judge_integer,
    "int4": _judge_integer,
    "int8": _judge_integer,
    "numeric": _judge_numeric,
    "float4": _float_judge(FLOAT4_REL_TOLERANCE),
    "float8": _float_judge(FLOAT8_REL_TOLERANCE),
    "bool": _judge_bool,
    "date": _judge_date,
    "time": _judge_time,
    "timestamp": lambda e, a: _judge_timestamp(e, a, with_zone=False),
    "timestamptz": lambda e, a: _judge_timestamp(e, a, with_zone=True),
    "interval": _judge_interval,
    "uuid": _judge_uuid,
    "json": _judge_json,
    "jsonb": _judge_json,
    "_int4": _array_judge(_judge_integer),
    "_text": _array_judge(_judge_text),
}
"""One rule per PostgreSQL type name (pg_type.typname) used by the workloads."""


def judge(pg_type: str, expected: Any, actual: Any) -> Judgement:
    """Compare one value; `expected` comes from PostgreSQL's to_json, `actual` from the stack."""
    if expected is None:
        return _judge_null(actual)
    if actual is None:
        return Verdict.WRONG, f"value lost: got null, expected {_show(expected)}"
    return RULES[pg_type](expected, actual)
