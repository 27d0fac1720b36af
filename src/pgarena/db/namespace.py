"""pgarena's own corner of a database: the schema `pgarena` and the login role the stacks use.

NOTE: every object pgarena creates lives in schema `pgarena` (tables, the perf_test function, pgbench's
tables); the stacks find them through their role's search path (`ALTER ROLE ... IN DATABASE ... SET
search_path`), which works for every driver and through pgbouncer, with no change to any stack. The
role is pgarena's own (created here), never the role of the user's `--database-url`: changing that
role's search path would change how the user's own sessions resolve names. pgarena marks what it
creates with a comment; a schema or role of that name that pgarena did not create is in the way, and
pgarena refuses to use it unless the user passes --allow-overwrite (docs/methodology.md).
"""

from __future__ import annotations

import psycopg
from psycopg import sql

SCHEMA = "pgarena"
"""The schema that holds every object pgarena creates."""
SEARCH_PATH = f"{SCHEMA}, public"
"""The search path of the stacks' role and of pgarena's own sessions: pgarena's objects first."""
MARKER = "created by pgarena: its workload data and the role its stacks use (safe to drop)"
"""The comment on the schema and the role pgarena creates; an object without it is the user's."""


class NamespaceConflict(Exception):
    """A schema or role of pgarena's name exists and was not created by pgarena."""


def _comment(conn: psycopg.Connection, kind: str, name: str) -> str | None:
    query = {
        "role": "SELECT shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = %s",
        "schema": "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = %s",
    }[kind]
    row = conn.execute(query, [name]).fetchone()
    return None if row is None else (row[0] or "")


def objects_in_the_way(conn: psycopg.Connection, role: str) -> list[str]:
    """The schema and role of pgarena's names that exist but were not created by pgarena."""
    found = []
    for kind, name in (("schema", SCHEMA), ("role", role)):
        comment = _comment(conn, kind, name)
        if comment is not None and comment != MARKER:
            found.append(f"{kind} {name}")
    return found


def prepare_role(conn: psycopg.Connection, role: str, password: str, *, allow_overwrite: bool) -> None:
    """Create (or, if pgarena made it, reuse) the stacks' login role, with `password` for this run."""
    current = conn.execute("SELECT current_user").fetchone()[0]
    if current == role:
        raise NamespaceConflict(f"the stacks' role '{role}' cannot be the role pgarena connects as; "
                                f"connect as another role (one that may create roles)")
    comment = _comment(conn, "role", role)
    if comment is not None and comment != MARKER and not allow_overwrite:
        raise NamespaceConflict(_refusal([f"role {role}"]))
    verb = "CREATE" if comment is None else "ALTER"
    try:
        conn.execute(sql.SQL(verb + " ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(role), sql.Literal(password)))
        conn.execute(sql.SQL("COMMENT ON ROLE {} IS {}").format(sql.Identifier(role), sql.Literal(MARKER)))
    except psycopg.errors.InsufficientPrivilege as exc:
        raise NamespaceConflict(
            f"role '{current}' may not create pgarena's role '{role}' ({str(exc).strip()}); connect as a role "
            "with CREATEROLE (a superuser has it)") from None


def prepare_schema(conn: psycopg.Connection, role: str, database: str, *, allow_overwrite: bool) -> None:
    """Create (or reuse) schema `pgarena` in the connected database, usable by the stacks' role,
    and make it the first entry of that role's search path in `database`."""
    in_the_way = [o for o in objects_in_the_way(conn, role) if o.startswith("schema")]
    if in_the_way and not allow_overwrite:
        raise NamespaceConflict(_refusal(in_the_way))
    schema, who = sql.Identifier(SCHEMA), sql.Identifier(role)
    try:
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(schema))
        conn.execute(sql.SQL("COMMENT ON SCHEMA {} IS {}").format(schema, sql.Literal(MARKER)))
        conn.execute(sql.SQL("GRANT USAGE, CREATE ON SCHEMA {} TO {}").format(schema, who))
        conn.execute(sql.SQL("ALTER ROLE {} IN DATABASE {} SET search_path TO {}, public").format(
            who, sql.Identifier(database), schema))
    except psycopg.errors.InsufficientPrivilege as exc:
        raise NamespaceConflict(f"cannot create schema {SCHEMA} for pgarena's data: {str(exc).strip()}") from None


def _refusal(objects: list[str]) -> str:
    return (f"{' and '.join(objects)} already exist and were not created by pgarena; pgarena would replace "
            f"what it keeps there. Drop or rename them, or pass --allow-overwrite to use them anyway")
