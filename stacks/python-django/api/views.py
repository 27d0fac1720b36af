import json
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


def int_param(request, name, low, high):
    value = request.GET.get(name)
    if value is None:
        raise BadRequest(f"{name} is required")
    try:
        number = int(value)
    except ValueError:
        raise BadRequest(f"{name} must be an integer") from None
    if not low <= number <= high:
        raise BadRequest(f"{name} must be between {low} and {high}")
    return number


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
    if request.content_type != "application/json":
        raise BadRequest("Content-Type must be application/json")
    try:
        body = json.loads(request.body)
    except ValueError:
        raise BadRequest("body is not valid JSON") from None
    if not isinstance(body, dict):
        raise BadRequest("body must be a JSON object")
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


def bad_request(request, exception):
    return JsonResponse({"error": str(exception) or "bad request"}, status=400)


def not_found(request, exception):
    return JsonResponse({"error": "not found"}, status=404)


def server_error(request):
    return JsonResponse({"error": "internal server error"}, status=500)
