"""pgarena's objects made reachable in a schema an app names: `public.perf_test(...)` for an app written
for another benchmark (stack.toml `[database] schema = "public"`).

NOTE: the objects themselves stay in schema `pgarena` (namespace.py) and every check reads them there. In the
named schema this module creates, on the managed database only, a copy of every function pgarena made (the
workload functions are pure: a copy answers exactly what the original does) and an updatable view of every
table (`SELECT * FROM pgarena.t`: an app's writes through it land in pgarena's table, so the tx consistency
check sees them). Extension members that `CREATE EXTENSION` put in schema `pgarena` are left out. A user's own
database (--database-url) is never touched this way: the run refuses such a stack there (pipeline/plan.py).
"""

from __future__ import annotations

import re

import psycopg
from psycopg import sql

from pgarena.db import namespace
from pgarena.db.postgres import Database, PostgresError

FUNCTIONS_SQL = """
SELECT p.oid, p.proname, pg_get_functiondef(p.oid), pg_get_function_identity_arguments(p.oid),
       obj_description(p.oid, 'pg_proc')
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = %(schema)s AND p.prokind = 'f'
  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                  AND d.deptype = 'e')
ORDER BY p.proname, p.oid
"""
"""pgarena's own functions (not an extension's) with their definitions, identity arguments and comments."""

TABLES_SQL = """
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'p')
  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                  AND d.deptype = 'e')
ORDER BY c.relname
"""
"""pgarena's own tables (not an extension's)."""
PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE")
"""Table privileges a view passes on when the stacks' role holds them on pgarena's table."""


def _renamed_header(definition: str, name: str, schema: str) -> str:
    """`CREATE OR REPLACE FUNCTION pgarena.name(` → the same in `schema` (the body is left as it is)."""
    header = re.compile(r"^(CREATE OR REPLACE FUNCTION )" + re.escape(f"{namespace.SCHEMA}.") + r"(\"?"
                        + re.escape(name) + r"\"?\()")
    renamed, count = header.subn(lambda m: m.group(1) + sql.Identifier(schema).as_string(None) + "." + m.group(2),
                                 definition, count=1)
    if count != 1:
        raise PostgresError(f"cannot copy function {namespace.SCHEMA}.{name} to schema {schema}: unexpected "
                            f"definition header {definition[:80]!r}")
    return renamed


def expose_in_schema(db: Database, schema: str) -> list[str]:
    """Make pgarena's functions and tables reachable as `schema.name` for the stacks' role; the objects made
    there (`schema.perf_test(...)`, `schema.users (view)`), to log. PostgresError on a user's own database."""
    if not db.managed:
        raise PostgresError(f"pgarena creates objects in schema {schema} on its managed database only")
    if schema == namespace.SCHEMA:
        return []
    made: list[str] = []
    target, role = sql.Identifier(schema), sql.Identifier(db.user)
    try:
        with db.connect() as conn, conn.transaction():
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(target))
            conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(target, role))
            for _, name, definition, arguments, comment in conn.execute(FUNCTIONS_SQL, {"schema": namespace.SCHEMA}):
                conn.execute(_renamed_header(definition, name, schema))
                if comment:
                    conn.execute(sql.SQL("COMMENT ON FUNCTION {}.{}({}) IS {}").format(
                        target, sql.Identifier(name), sql.SQL(arguments), sql.Literal(comment)))
                made.append(f"{schema}.{name}({arguments})")
            for (table,) in conn.execute(TABLES_SQL, {"schema": namespace.SCHEMA}).fetchall():
                conn.execute(sql.SQL("CREATE OR REPLACE VIEW {}.{} AS SELECT * FROM {}.{}").format(
                    target, sql.Identifier(table), sql.Identifier(namespace.SCHEMA), sql.Identifier(table)))
                original = f"{namespace.SCHEMA}.{table}"
                granted = [p for p in PRIVILEGES if conn.execute("SELECT has_table_privilege(%s, %s, %s)",
                                                                  [db.user, original, p]).fetchone()[0]]
                if granted:  # what the role may do to pgarena's table, no more (the view's owner may do all)
                    conn.execute(sql.SQL("GRANT {} ON {}.{} TO {}").format(
                        sql.SQL(", ").join(map(sql.SQL, granted)), target, sql.Identifier(table), role))
                made.append(f"{schema}.{table} (view)")
    except psycopg.Error as exc:
        raise PostgresError(f"cannot make pgarena's objects reachable in schema {schema}: {str(exc).strip()}"
                            ) from None
    return made
