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
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from pool_share import pool_share

# Placeholders cast to perf_test's parameter types: psycopg sends Python ints as the smallest
# fitting integer type and floats as float8, and PostgreSQL's function lookup needs exact matches
# or implicit casts (float8 -> real is not one). Strings (json, arrays) are parsed by PostgreSQL.
PERF_TEST_SQL = (
    "SELECT * FROM perf_test(%s::int, %s::text, %s::int, %s::bigint, %s::numeric, %s::real,"
    " %s::float8, %s::bool, %s::date, %s::timestamp, %s::timestamptz, %s::uuid, %s::json,"
    " %s::jsonb, %s::int[], %s::text[])"
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
    # autocommit: single-statement reads need no BEGIN/COMMIT; tx opens its own transaction block
    async with AsyncConnectionPool(
        os.environ["PGARENA_DATABASE_URL"],
        min_size=size,
        max_size=size,
        kwargs={"autocommit": True, "row_factory": dict_row},
        open=False,
    ) as pool:
        await pool.open(wait=True)
        app.state.pool = pool
        yield


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


@app.get("/api/static")
async def static() -> dict[str, Any]:
    return {"status": "ok", "timestamp": time.time_ns() // 1_000_000}


@app.get("/api/users")
async def users(
    request: Request, limit: Annotated[int, Query(ge=1, le=10000)]
) -> list[dict[str, Any]]:
    async with request.app.state.pool.connection() as conn:
        cur = await conn.execute(USERS_SQL, (limit,))
        return await cur.fetchall()


@app.get("/api/perf-test")
async def perf_test(
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
    async with request.app.state.pool.connection() as conn:
        cur = await conn.execute(
            PERF_TEST_SQL,
            (_records, _text, _int, _bigint, _numeric, _real, _double, _bool, _date,
             _timestamp, _timestamptz, _uuid, _json, _jsonb, _int_array, _text_array),
        )
        return await cur.fetchall()


@app.post("/api/tx")
async def tx(request: Request, body: TxBody) -> dict[str, int]:
    # pgbench's TPC-B transaction; a failure inside the block rolls it back and propagates (500).
    async with request.app.state.pool.connection() as conn:
        async with conn.transaction():
            await conn.execute(TX_UPDATE_ACCOUNT_SQL, (body.delta, body.aid))
            cur = await conn.execute(TX_SELECT_BALANCE_SQL, (body.aid,))
            (row,) = await cur.fetchall()
            await conn.execute(TX_UPDATE_TELLER_SQL, (body.delta, body.tid))
            await conn.execute(TX_UPDATE_BRANCH_SQL, (body.delta, body.bid))
            await conn.execute(TX_INSERT_HISTORY_SQL, (body.tid, body.bid, body.aid, body.delta))
    return {"abalance": row["abalance"]}
