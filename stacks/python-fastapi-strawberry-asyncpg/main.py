import json
import os
import re
import time
from collections import defaultdict
from contextlib import asynccontextmanager
from typing import Annotated, Any

import asyncpg
import strawberry
from cross_web import HTTPException as GraphQLHTTPException  # what Strawberry's views raise
from fastapi import FastAPI, Request
from fastapi import Query as QueryParameter  # Query is the GraphQL root type below
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from graphql import GraphQLError
from pydantic import BeforeValidator
from starlette.exceptions import HTTPException
from starlette.responses import Response
from strawberry.dataloader import DataLoader
from strawberry.fastapi import BaseContext, GraphQLRouter
from strawberry.types import ExecutionContext
from strawberry.types.unset import UNSET

from pool_share import pool_share

USERS_SQL = "SELECT id, username, full_name, email, age, created_at FROM users ORDER BY id LIMIT $1"
USERS_BRIEF_SQL = "SELECT id, username FROM users ORDER BY id LIMIT $1"
# Every listed user's first $2 posts in one statement, walking the (user_id, id) index once per user.
POSTS_SQL = (
    "SELECT u.id AS user_id, p.id, p.title"
    " FROM unnest($1::int[]) AS u(id)"
    " CROSS JOIN LATERAL (SELECT id, title FROM posts WHERE user_id = u.id ORDER BY id LIMIT $2) AS p"
    " ORDER BY u.id, p.id"
)
USERS_LIMIT = (1, 10000)
POSTS_LIMIT = (1, 100)
USERS_POSTS_PER_USER = 5  # users-posts: the REST twin of posts(limit: 5)


def _plain_integer(value: Any) -> Any:
    # pydantic's lax int parsing accepts " 7", "+7", "7.0" and "1_000"; a query parameter must be
    # written as plain decimal digits.
    if isinstance(value, str) and not re.fullmatch(r"-?[0-9]+", value):
        raise ValueError("must be an integer")
    return value


QueryInt = Annotated[int, BeforeValidator(_plain_integer)]


async def fetch_posts(
    pool: asyncpg.Pool, user_ids: list[int], limit: int
) -> dict[int, list[asyncpg.Record]]:
    """The first `limit` posts (by id) of each user in `user_ids`, by user id; one statement."""
    posts: dict[int, list[asyncpg.Record]] = defaultdict(list)
    for row in await pool.fetch(POSTS_SQL, user_ids, limit):
        posts[row["user_id"]].append(row)
    return posts


class LimitOutOfRange(ValueError):
    """A GraphQL limit argument outside its range: the client's mistake, answered, not logged."""


def check_limit(limit: int, bounds: tuple[int, int]) -> int:
    low, high = bounds
    if not low <= limit <= high:
        raise LimitOutOfRange(f"limit must be an integer from {low} to {high}")
    return limit


class Context(BaseContext):
    """Per-request GraphQL context: the pool and a fresh posts DataLoader (its cache lives one request)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        super().__init__()
        self.pool = pool
        self.posts_loader = DataLoader(load_fn=self.load_posts)

    async def load_posts(self, keys: list[tuple[int, int]]) -> list[list["Post"]]:
        # Keys are (user_id, posts limit); one statement per distinct limit, so one for a whole
        # `users { posts(limit: 5) }` list, however many users it has.
        user_ids_by_limit: dict[int, list[int]] = defaultdict(list)
        for user_id, limit in keys:
            user_ids_by_limit[limit].append(user_id)
        posts: dict[tuple[int, int], list[Post]] = {}
        for limit, user_ids in user_ids_by_limit.items():
            rows = await fetch_posts(self.pool, user_ids, limit)
            for user_id in user_ids:
                posts[(user_id, limit)] = [Post(id=r["id"], title=r["title"]) for r in rows[user_id]]
        return [posts[key] for key in keys]


@strawberry.type
class Post:
    id: int
    title: str


@strawberry.type
class User:
    id: int
    username: str
    full_name: str
    email: str
    age: int
    created_at: str

    @strawberry.field
    async def posts(self, info: strawberry.Info[Context, None], limit: int) -> list[Post]:
        check_limit(limit, POSTS_LIMIT)
        return await info.context.posts_loader.load((self.id, limit))


@strawberry.type
class Query:
    @strawberry.field
    async def users(self, info: strawberry.Info[Context, None], limit: int) -> list[User]:
        check_limit(limit, USERS_LIMIT)
        rows = await info.context.pool.fetch(USERS_SQL, limit)
        return [
            User(
                id=r["id"],
                username=r["username"],
                full_name=r["full_name"],
                email=r["email"],
                age=r["age"],
                created_at=r["created_at"].isoformat(),  # RFC 3339
            )
            for r in rows
        ]


class Schema(strawberry.Schema):
    """strawberry.Schema that logs only the errors a client did not cause."""

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        # Strawberry logs every error with its traceback; a client's mistakes are answered only:
        # syntax and validation errors (no original_error), a variable that does not coerce (a
        # GraphQLError inside), a limit out of range.
        unexpected = [
            e for e in errors
            if e.original_error is not None
            and not isinstance(e.original_error, (GraphQLError, LimitOutOfRange))
        ]
        super().process_errors(unexpected, execution_context)


class JSONErrorsGraphQLRouter(GraphQLRouter):
    """Strawberry's router, whose request errors (a body that is not JSON, ...) are JSON, not text."""

    def decode_json(self, data: str | bytes) -> object:
        # Strawberry turns json.JSONDecodeError into 400 but not invalid UTF-8, and expects an
        # object (or a batch list), failing with AttributeError on a JSON scalar ("x", 1, null):
        # both would be 500.
        try:
            value = json.loads(data)
        except UnicodeDecodeError as exc:
            raise GraphQLHTTPException(400, "Unable to parse request body as JSON") from exc
        if not isinstance(value, (dict, list)):
            raise GraphQLHTTPException(400, "The GraphQL request must be a JSON object")
        return value

    async def run(self, request: Request, context: Any = UNSET, root_value: Any = UNSET) -> Response:
        try:
            return await super().run(request, context=context, root_value=root_value)
        except GraphQLHTTPException as exc:
            return JSONResponse({"error": exc.reason}, status_code=exc.status_code)


async def get_context(request: Request) -> Context:
    return Context(request.app.state.pool)


@asynccontextmanager
async def lifespan(app: FastAPI):
    size = pool_share()
    app.state.pool = await asyncpg.create_pool(
        os.environ["PGARENA_DATABASE_URL"], min_size=size, max_size=size
    )
    try:
        yield
    finally:
        await app.state.pool.close()


app = FastAPI(lifespan=lifespan, openapi_url=None, docs_url=None, redoc_url=None)
app.include_router(
    JSONErrorsGraphQLRouter(Schema(query=Query), context_getter=get_context, graphql_ide=None),
    prefix="/graphql",
)


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
    request: Request, limit: Annotated[QueryInt, QueryParameter(ge=1, le=10000)]
) -> list[dict[str, Any]]:
    rows = await request.app.state.pool.fetch(USERS_SQL, limit)
    return [dict(r) for r in rows]


@app.get("/api/users-posts")
async def users_posts(
    request: Request, limit: Annotated[QueryInt, QueryParameter(ge=1, le=10000)]
) -> list[dict[str, Any]]:
    pool = request.app.state.pool
    users = await pool.fetch(USERS_BRIEF_SQL, limit)
    posts = await fetch_posts(pool, [u["id"] for u in users], USERS_POSTS_PER_USER)
    return [
        {"id": u["id"], "username": u["username"],
         "posts": [{"id": p["id"], "title": p["title"]} for p in posts[u["id"]]]}
        for u in users
    ]
