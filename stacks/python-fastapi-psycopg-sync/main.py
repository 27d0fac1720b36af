import os
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
from psycopg_pool import ConnectionPool
from pydantic import BaseModel, ConfigDict, Field
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


def prepare_threshold() -> int | None:
    # psycopg prepares a query after 5 executions on a connection (its default); "none" turns
    # server-side prepared statements off, as a transaction-mode pgbouncer < 1.21 requires.
    value = os.environ.get("PSYCOPG_PREPARE_THRESHOLD", "5")
    return None if value.lower() == "none" else int(value)


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
def users(request: Request, limit: Annotated[int, Query(ge=1, le=10000)]) -> list[dict[str, Any]]:
    with request.app.state.pool.connection() as conn:
        return conn.execute(USERS_SQL, (limit,)).fetchall()


@app.get("/api/perf-test")
def perf_test(
    request: Request,
    _records: Annotated[int, Query(ge=1, le=1000)],
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
