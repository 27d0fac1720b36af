"""pgarena's users and their posts as a FraiseQL v2 schema, authored with FraiseQL's Python SDK.

`python schema.py` (SDK: `pip install fraiseql==2.18.0`) writes schema.json, which is committed, so
building and running this stack needs no Python: `fraiseql compile fraiseql.toml` and `fraiseql run
fraiseql.toml` read schema.json through fraiseql.toml's `[includes]`.

The view User reads, v_user, is created by views.sql over pgarena's users and posts: FraiseQL reads
every entity as one JSONB `data` column, snake_case keys, and maps the camelCase GraphQL field names
(fullName, createdAt) onto them. Post has no view of its own: posts are read from their user's document.
"""

from pathlib import Path

import fraiseql
from fraiseql import DateTime


@fraiseql.type
class Post:
    """A post as its author's document embeds it."""

    id: int
    title: str


@fraiseql.type(sql_source="v_user")
class User:
    """A row of pgarena.users, with the user's first five posts by id (see views.sql)."""

    id: int
    username: str
    full_name: str
    email: str
    age: int
    created_at: DateTime
    posts: list[Post]


@fraiseql.query(sql_source="v_user", auto_params={"limit": True})
def users(limit: int) -> list[User]:
    """The first `limit` users by id (FraiseQL orders a page by the view's `id` column)."""
    ...


if __name__ == "__main__":
    fraiseql.export_schema(str(Path(__file__).parent / "schema.json"))
