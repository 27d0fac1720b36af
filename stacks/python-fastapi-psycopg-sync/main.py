import os
import re
import time
from contextlib import asynccontextmanager
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Any
from uuid import UUID

import psycopg
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from starlette.exceptions import HTTPException

from pool_share import pool_share

# Casts name the function's parameter types: psycopg sends a Python int as int2/int4/int8/numeric
# depending on its value and a float as float8, which would not resolve perf_test(int, ..., real, ...).
PERF_TEST_SQL = (
    "SELECT * FROM perf_test(%s::int, %s::text, %s::int, %s::bigint, %s::numeric, %s::real,"
    " %s::double precision, %s::bool, %s::date, %s::timestamp, %s::timestamptz, %s::uuid,"
    " %s::json, %s::jsonb, %s::int[], %s::text[])"
)
USERS_SQL = "SELECT id, username, full_name, email, age, created_at FROM users ORDER BY id LIMIT %s"
TX_UPDATE_ACCOUNT_SQL = "UPDATE pgbench_accounts SET abalance = abalance + %s WHERE aid = %s"
TX_SELECT_BALANCE_SQL = "SELECT abalance FROM pgbench_accounts WHERE aid = %s"
TX_UPDATE_TELLER_SQL = "UPDATE pgbench_tellers SET tbalance = tbalance + %s WHERE tid = %s"
TX_UPDATE_BRANCH_SQL = "UPDATE pgbench_branches SET bbalance = bbalance + %s WHERE bid = %s"
TX_INSERT_HISTORY_SQL = (
    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)"
    " VALUES (%s, %s, %s, %s, CURRENT_TIMESTAMP)"
)
PERF_MINIMAL_SQL = "SELECT * FROM perf_minimal()"
PERF_POST_SQL = "SELECT * FROM perf_post(%s::int, %s::jsonb)"
PERF_NESTED_SQL = "SELECT * FROM perf_nested(%s::int, %s::int)"
PERF_LARGE_PAYLOAD_SQL = "SELECT * FROM perf_large_payload(%s::int)"
# psycopg sends a Python str as text of unknown type; the casts make PostgreSQL parse each value
# into the function's parameter type (22P02 when it does not parse). None is NULL.
PERF_MANY_PARAMS_SQL = (
    "SELECT * FROM perf_many_params(%s::text, %s::int, %s::bool, %s::numeric, %s::text,"
    " %s::text, %s::int, %s::bool, %s::numeric, %s::text, %s::text, %s::int, %s::bool,"
    " %s::numeric, %s::text, %s::text, %s::int, %s::bool, %s::numeric, %s::text)"
)


def prepare_threshold() -> int | None:
    # psycopg prepares a query after 5 executions on a connection (its default); "none" turns
    # server-side prepared statements off, as a transaction-mode pgbouncer < 1.21 requires.
    value = os.environ.get("PSYCOPG_PREPARE_THRESHOLD", "5")
    return None if value.lower() == "none" else int(value)


def _plain_integer(value: Any) -> Any:
    # pydantic's lax int parsing accepts " 7", "+7", "7.0" and "1_000"; a query parameter must be
    # written as plain decimal digits.
    if isinstance(value, str) and not re.fullmatch(r"-?[0-9]+", value):
        raise ValueError("must be an integer")
    return value


QueryInt = Annotated[int, BeforeValidator(_plain_integer)]


class PerfPostBody(BaseModel):
    # strict: "3", 3.0, true and null are not integers, and a payload must be a JSON object
    model_config = ConfigDict(strict=True)

    records: Annotated[int, Field(alias="_records", ge=1, le=1000)]
    payload: Annotated[dict[str, Any], Field(alias="_payload")]


class TxBody(BaseModel):
    # strict: "5", 1.5, 5.0 and true are not integers
    model_config = ConfigDict(strict=True)

    aid: Annotated[int, Field(ge=1, le=1_000_000)]
    tid: Annotated[int, Field(ge=1, le=100)]
    bid: Annotated[int, Field(ge=1, le=10)]
    delta: Annotated[int, Field(ge=-5000, le=5000)]


@asynccontextmanager
async def lifespan(app: FastAPI):
    size = pool_share()
    # A fixed-size pool (min_size = max_size). autocommit: a single query needs no BEGIN/COMMIT;
    # the tx endpoint opens its transaction explicitly. Rows come back as dicts.
    pool = ConnectionPool(
        os.environ["PGARENA_DATABASE_URL"],
        min_size=size,
        max_size=size,
        kwargs={"autocommit": True, "row_factory": dict_row, "prepare_threshold": prepare_threshold()},
        open=False,
    )
    pool.open(wait=True)
    app.state.pool = pool
    try:
        yield
    finally:
        pool.close()


app = FastAPI(lifespan=lifespan, openapi_url=None, docs_url=None, redoc_url=None)


@app.exception_handler(RequestValidationError)
async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    msg = "; ".join(
        f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
    )
    return JSONResponse({"error": msg}, status_code=400)


@app.exception_handler(psycopg.DataError)  # SQLSTATE class 22
async def data_error(request: Request, exc: psycopg.DataError) -> JSONResponse:
    return JSONResponse({"error": str(exc)}, status_code=400)


@app.exception_handler(HTTPException)
async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
    return JSONResponse({"error": exc.detail}, status_code=exc.status_code, headers=exc.headers)


@app.exception_handler(Exception)
async def server_error(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"error": "internal server error"}, status_code=500)


# Plain `def` endpoints: FastAPI runs them in its thread pool (anyio's default limiter, 40 threads
# per process), so the blocking psycopg calls never block the event loop.


@app.get("/api/static")
def static() -> dict[str, Any]:
    return {"status": "ok", "timestamp": time.time_ns() // 1_000_000}


@app.get("/api/users")
def users(request: Request, limit: Annotated[QueryInt, Query(ge=1, le=10000)]) -> list[dict[str, Any]]:
    with request.app.state.pool.connection() as conn:
        return conn.execute(USERS_SQL, (limit,)).fetchall()


@app.get("/api/perf-test")
def perf_test(
    request: Request,
    _records: Annotated[QueryInt, Query(ge=1, le=1000)],
    _text: str,
    _int: int,
    _bigint: int,
    _numeric: Annotated[Decimal, Query(allow_inf_nan=False)],
    _real: Annotated[float, Query(allow_inf_nan=False)],
    _double: Annotated[float, Query(allow_inf_nan=False)],
    _bool: bool,
    _date: date,
    _timestamp: datetime,
    _timestamptz: datetime,
    _uuid: UUID,
    _json: str,
    _jsonb: str,
    _int_array: str,
    _text_array: str,
) -> list[dict[str, Any]]:
    with request.app.state.pool.connection() as conn:
        return conn.execute(
            PERF_TEST_SQL,
            (_records, _text, _int, _bigint, _numeric, _real, _double, _bool, _date,
             _timestamp, _timestamptz, _uuid, _json, _jsonb, _int_array, _text_array),
        ).fetchall()


@app.post("/api/tx")
def tx(request: Request, body: TxBody) -> dict[str, int]:
    # pgbench's TPC-B transaction; an exception inside conn.transaction() rolls it back (500).
    with request.app.state.pool.connection() as conn:
        with conn.transaction():
            conn.execute(TX_UPDATE_ACCOUNT_SQL, (body.delta, body.aid))
            abalance = conn.execute(TX_SELECT_BALANCE_SQL, (body.aid,)).fetchone()["abalance"]
            conn.execute(TX_UPDATE_TELLER_SQL, (body.delta, body.tid))
            conn.execute(TX_UPDATE_BRANCH_SQL, (body.delta, body.bid))
            conn.execute(TX_INSERT_HISTORY_SQL, (body.tid, body.bid, body.aid, body.delta))
    return {"abalance": abalance}


@app.get("/api/perf-minimal")
def perf_minimal(request: Request) -> list[dict[str, Any]]:
    with request.app.state.pool.connection() as conn:
        return conn.execute(PERF_MINIMAL_SQL).fetchall()


@app.post("/api/perf-post")
def perf_post(request: Request, body: PerfPostBody) -> list[dict[str, Any]]:
    # Jsonb() sends the payload as json.dumps text with the jsonb type
    with request.app.state.pool.connection() as conn:
        return conn.execute(PERF_POST_SQL, (body.records, Jsonb(body.payload))).fetchall()


@app.get("/api/perf-nested")
def perf_nested(
    request: Request,
    _records: Annotated[QueryInt, Query(ge=1, le=1000)],
    _depth: Annotated[QueryInt, Query(ge=1, le=3)],
) -> list[dict[str, Any]]:
    with request.app.state.pool.connection() as conn:
        return conn.execute(PERF_NESTED_SQL, (_records, _depth)).fetchall()


@app.get("/api/perf-large-payload")
def perf_large_payload(
    request: Request, _size_kb: Annotated[QueryInt, Query(ge=1, le=1024)]
) -> list[dict[str, Any]]:
    with request.app.state.pool.connection() as conn:
        return conn.execute(PERF_LARGE_PAYLOAD_SQL, (_size_kb,)).fetchall()


@app.get("/api/perf-many-params")
def perf_many_params(
    request: Request,
    _p1: str | None = None, _p2: str | None = None, _p3: str | None = None,
    _p4: str | None = None, _p5: str | None = None, _p6: str | None = None,
    _p7: str | None = None, _p8: str | None = None, _p9: str | None = None,
    _p10: str | None = None, _p11: str | None = None, _p12: str | None = None,
    _p13: str | None = None, _p14: str | None = None, _p15: str | None = None,
    _p16: str | None = None, _p17: str | None = None, _p18: str | None = None,
    _p19: str | None = None, _p20: str | None = None,
) -> list[dict[str, Any]]:
    with request.app.state.pool.connection() as conn:
        return conn.execute(
            PERF_MANY_PARAMS_SQL,
            (_p1, _p2, _p3, _p4, _p5, _p6, _p7, _p8, _p9, _p10,
             _p11, _p12, _p13, _p14, _p15, _p16, _p17, _p18, _p19, _p20),
        ).fetchall()
