import json
import re
import time

from django.core.exceptions import BadRequest
from django.db import connection, transaction
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from .models import User

PERF_TEST_SQL = "SELECT * FROM perf_test(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
# Passed as the strings the client sent; PostgreSQL parses them into the function's parameter types.
PERF_TEST_TEXT_PARAMS = (
    "_text", "_int", "_bigint", "_numeric", "_real", "_double", "_bool", "_date", "_timestamp",
    "_timestamptz", "_uuid", "_json", "_jsonb", "_int_array", "_text_array",
)
TX_FIELDS = {"aid": (1, 1_000_000), "tid": (1, 100), "bid": (1, 10), "delta": (-5000, 5000)}
# The 20 values as the client's strings (None when absent, i.e. NULL), quoted into the SQL by
# Django's client-side binding as literals of unknown type, which PostgreSQL parses into the
# function's parameter types (22P02 when a value does not parse).
PERF_MANY_PARAMS_SQL = "SELECT * FROM perf_many_params(" + ", ".join(["%s"] * 20) + ")"
PERF_MANY_PARAMS_NAMES = tuple(f"_p{i}" for i in range(1, 21))


def int_param(request, name, low, high):
    value = request.GET.get(name)
    if value is None:
        raise BadRequest(f"{name} is required")
    # plain decimal digits: int() alone would also take " 7", "+7" and "1_000"
    if not re.fullmatch(r"-?[0-9]+", value):
        raise BadRequest(f"{name} must be an integer")
    number = int(value)
    if not low <= number <= high:
        raise BadRequest(f"{name} must be between {low} and {high}")
    return number


def json_object_body(request):
    """The request's JSON object body; 400 for another Content-Type, malformed JSON or a non-object."""
    if request.content_type != "application/json":
        raise BadRequest("Content-Type must be application/json")
    try:
        body = json.loads(request.body)
    except ValueError:
        raise BadRequest("body is not valid JSON") from None
    if not isinstance(body, dict):
        raise BadRequest("body must be a JSON object")
    return body


def dictfetchall(cursor):
    columns = [col.name for col in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]


@require_GET
def static(request):
    return JsonResponse({"status": "ok", "timestamp": time.time_ns() // 1_000_000})


@require_GET
def users(request):
    limit = int_param(request, "limit", 1, 10000)
    rows = User.objects.order_by("id").values(
        "id", "username", "full_name", "email", "age", "created_at"
    )[:limit]
    return JsonResponse(list(rows), safe=False)


@require_GET
def perf_test(request):
    params = [int_param(request, "_records", 1, 1000)]
    for name in PERF_TEST_TEXT_PARAMS:
        if name not in request.GET:
            raise BadRequest(f"{name} is required")
        params.append(request.GET[name])
    with connection.cursor() as cursor:
        cursor.execute(PERF_TEST_SQL, params)
        rows = dictfetchall(cursor)
    # Django's psycopg setup loads jsonb as text (JSONField decodes it); json is already parsed.
    for row in rows:
        row["jsonb_val"] = json.loads(row["jsonb_val"])
    return JsonResponse(rows, safe=False)


@csrf_exempt
@require_POST
def tx(request):
    body = json_object_body(request)
    for field, (low, high) in TX_FIELDS.items():
        value = body.get(field)
        if type(value) is not int or not low <= value <= high:
            raise BadRequest(f"{field} must be an integer from {low} to {high}")
    aid, tid, bid, delta = body["aid"], body["tid"], body["bid"], body["delta"]
    # pgbench's TPC-B transaction; an exception rolls it back.
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE pgbench_accounts SET abalance = abalance + %s WHERE aid = %s", [delta, aid])
        cursor.execute("SELECT abalance FROM pgbench_accounts WHERE aid = %s", [aid])
        (abalance,) = cursor.fetchone()
        cursor.execute("UPDATE pgbench_tellers SET tbalance = tbalance + %s WHERE tid = %s", [delta, tid])
        cursor.execute("UPDATE pgbench_branches SET bbalance = bbalance + %s WHERE bid = %s", [delta, bid])
        cursor.execute(
            "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (%s, %s, %s, %s, CURRENT_TIMESTAMP)",
            [tid, bid, aid, delta],
        )
    return JsonResponse({"abalance": abalance})


@require_GET
def perf_minimal(request):
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM perf_minimal()")
        rows = dictfetchall(cursor)
    return JsonResponse(rows, safe=False)


@csrf_exempt
@require_POST
def perf_post(request):
    body = json_object_body(request)
    records = body.get("_records")
    if type(records) is not int or not 1 <= records <= 1000:
        raise BadRequest("_records must be an integer from 1 to 1000")
    payload = body.get("_payload")
    if not isinstance(payload, dict):
        raise BadRequest("_payload must be a JSON object")
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM perf_post(%s, %s::jsonb)", [records, json.dumps(payload)])
        rows = dictfetchall(cursor)
    for row in rows:  # jsonb arrives as text (Django's psycopg setup)
        row["echo"] = json.loads(row["echo"])
    return JsonResponse(rows, safe=False)


@require_GET
def perf_nested(request):
    records = int_param(request, "_records", 1, 1000)
    depth = int_param(request, "_depth", 1, 3)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM perf_nested(%s, %s)", [records, depth])
        rows = dictfetchall(cursor)
    for row in rows:  # jsonb arrives as text (Django's psycopg setup)
        row["nested"] = json.loads(row["nested"])
    return JsonResponse(rows, safe=False)


@require_GET
def perf_large_payload(request):
    size_kb = int_param(request, "_size_kb", 1, 1024)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM perf_large_payload(%s)", [size_kb])
        rows = dictfetchall(cursor)
    return JsonResponse(rows, safe=False)


@require_GET
def perf_many_params(request):
    params = [request.GET.get(name) for name in PERF_MANY_PARAMS_NAMES]
    with connection.cursor() as cursor:
        cursor.execute(PERF_MANY_PARAMS_SQL, params)
        rows = dictfetchall(cursor)
    return JsonResponse(rows, safe=False)


def bad_request(request, exception):
    return JsonResponse({"error": str(exception) or "bad request"}, status=400)


def not_found(request, exception):
    return JsonResponse({"error": "not found"}, status=404)


def server_error(request):
    return JsonResponse({"error": "internal server error"}, status=500)
