import json
import os
import re
import time
from contextlib import asynccontextmanager
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Any
from uuid import UUID

import asyncpg
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Json
from starlette.exceptions import HTTPException

from pool_share import pool_share

PERF_TEST_SQL = (
    "SELECT * FROM perf_test($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,"
    " $15::text::int[], $16::text::text[])"
)
USERS_SQL = "SELECT id, username, full_name, email, age, created_at FROM users ORDER BY id LIMIT $1"
TX_UPDATE_ACCOUNT_SQL = "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"
TX_SELECT_BALANCE_SQL = "SELECT abalance FROM pgbench_accounts WHERE aid = $1"
TX_UPDATE_TELLER_SQL = "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2"
TX_UPDATE_BRANCH_SQL = "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2"
TX_INSERT_HISTORY_SQL = (
    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)"
    " VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)"
)
PERF_MINIMAL_SQL = "SELECT * FROM perf_minimal()"
PERF_POST_SQL = "SELECT * FROM perf_post($1, $2::jsonb)"
PERF_NESTED_SQL = "SELECT * FROM perf_nested($1, $2)"
PERF_LARGE_PAYLOAD_SQL = "SELECT * FROM perf_large_payload($1)"
# All 20 bound as text (asyncpg encodes a parameter by its inferred type, so $2::int would demand a
# Python int); PostgreSQL casts them into the function's types, 22P02 when a value does not parse.
PERF_MANY_PARAMS_SQL = (
    "SELECT * FROM perf_many_params($1::text, $2::text::int, $3::text::bool, $4::text::numeric,"
    " $5::text, $6::text, $7::text::int, $8::text::bool, $9::text::numeric, $10::text, $11::text,"
    " $12::text::int, $13::text::bool, $14::text::numeric, $15::text, $16::text, $17::text::int,"
    " $18::text::bool, $19::text::numeric, $20::text)"
)


class TxBody(BaseModel):
    # strict: "5", 1.5, 5.0 and true are not integers
    model_config = ConfigDict(strict=True)

    aid: Annotated[int, Field(ge=1, le=1_000_000)]
    tid: Annotated[int, Field(ge=1, le=100)]
    bid: Annotated[int, Field(ge=1, le=10)]
    delta: Annotated[int, Field(ge=-5000, le=5000)]


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


async def init_connection(conn: asyncpg.Connection) -> None:
    # json/jsonb come back as Python objects (asyncpg's default is the raw text).
    for typename in ("json", "jsonb"):
        await conn.set_type_codec(
            typename, schema="pg_catalog", encoder=json.dumps, decoder=json.loads
        )


@asynccontextmanager
async def lifespan(app: FastAPI):
    size = pool_share()
    app.state.pool = await asyncpg.create_pool(
        os.environ["PGARENA_DATABASE_URL"], min_size=size, max_size=size, init=init_connection
    )
    try:
        yield
    finally:
        await app.state.pool.close()


app = FastAPI(lifespan=lifespan, openapi_url=None, docs_url=None, redoc_url=None)


@app.exception_handler(RequestValidationError)
async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    msg = "; ".join(
        f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
    )
    return JSONResponse({"error": msg}, status_code=400)


@app.exception_handler(asyncpg.DataError)  # SQLSTATE class 22, incl. client-side encoding errors
async def data_error(request: Request, exc: asyncpg.DataError) -> JSONResponse:
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
    request: Request, limit: Annotated[QueryInt, Query(ge=1, le=10000)]
) -> list[dict[str, Any]]:
    rows = await request.app.state.pool.fetch(USERS_SQL, limit)
    return [dict(r) for r in rows]


@app.get("/api/perf-test")
async def perf_test(
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
    _json: Json[Any],
    _jsonb: Json[Any],
    _int_array: str,
    _text_array: str,
) -> list[dict[str, Any]]:
    rows = await request.app.state.pool.fetch(
        PERF_TEST_SQL,
        _records, _text, _int, _bigint, _numeric, _real, _double, _bool, _date,
        _timestamp, _timestamptz, _uuid, _json, _jsonb, _int_array, _text_array,
    )
    return [dict(r) for r in rows]


@app.post("/api/tx")
async def tx(request: Request, body: TxBody) -> dict[str, int]:
    # pgbench's TPC-B transaction; a failure inside the block rolls it back and propagates (500).
    async with request.app.state.pool.acquire() as conn:
        async with conn.transaction():
            await conn.execute(TX_UPDATE_ACCOUNT_SQL, body.delta, body.aid)
            abalance = await conn.fetchval(TX_SELECT_BALANCE_SQL, body.aid)
            await conn.execute(TX_UPDATE_TELLER_SQL, body.delta, body.tid)
            await conn.execute(TX_UPDATE_BRANCH_SQL, body.delta, body.bid)
            await conn.execute(TX_INSERT_HISTORY_SQL, body.tid, body.bid, body.aid, body.delta)
    return {"abalance": abalance}


@app.get("/api/perf-minimal")
async def perf_minimal(request: Request) -> list[dict[str, Any]]:
    rows = await request.app.state.pool.fetch(PERF_MINIMAL_SQL)
    return [dict(r) for r in rows]


@app.post("/api/perf-post")
async def perf_post(request: Request, body: PerfPostBody) -> list[dict[str, Any]]:
    # the jsonb codec (init_connection) sends the payload as json.dumps text
    rows = await request.app.state.pool.fetch(PERF_POST_SQL, body.records, body.payload)
    return [dict(r) for r in rows]


@app.get("/api/perf-nested")
async def perf_nested(
    request: Request,
    _records: Annotated[QueryInt, Query(ge=1, le=1000)],
    _depth: Annotated[QueryInt, Query(ge=1, le=3)],
) -> list[dict[str, Any]]:
    rows = await request.app.state.pool.fetch(PERF_NESTED_SQL, _records, _depth)
    return [dict(r) for r in rows]


@app.get("/api/perf-large-payload")
async def perf_large_payload(
    request: Request, _size_kb: Annotated[QueryInt, Query(ge=1, le=1024)]
) -> list[dict[str, Any]]:
    rows = await request.app.state.pool.fetch(PERF_LARGE_PAYLOAD_SQL, _size_kb)
    return [dict(r) for r in rows]


@app.get("/api/perf-many-params")
async def perf_many_params(
    request: Request,
    _p1: str | None = None, _p2: str | None = None, _p3: str | None = None,
    _p4: str | None = None, _p5: str | None = None, _p6: str | None = None,
    _p7: str | None = None, _p8: str | None = None, _p9: str | None = None,
    _p10: str | None = None, _p11: str | None = None, _p12: str | None = None,
    _p13: str | None = None, _p14: str | None = None, _p15: str | None = None,
    _p16: str | None = None, _p17: str | None = None, _p18: str | None = None,
    _p19: str | None = None, _p20: str | None = None,
) -> list[dict[str, Any]]:
    rows = await request.app.state.pool.fetch(
        PERF_MANY_PARAMS_SQL,
        _p1, _p2, _p3, _p4, _p5, _p6, _p7, _p8, _p9, _p10,
        _p11, _p12, _p13, _p14, _p15, _p16, _p17, _p18, _p19, _p20,
    )
    return [dict(r) for r in rows]
