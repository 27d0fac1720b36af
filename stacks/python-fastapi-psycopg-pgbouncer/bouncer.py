"""python-fastapi-psycopg-async's app, unchanged, with psycopg's server-side prepared statements off.

pgbouncer 1.18 in transaction pooling hands each transaction to any server connection, so a
statement psycopg prepared (by name, after prepare_threshold = 5 executions) on one server
connection is missing (or already there) on the next: 'prepared statement "_pg3_0" does not
exist' / '... already exists'. psycopg's answer is prepare_threshold=None. The parent app has no
setting for it, so its pool class is swapped for one that adds that connection argument before
the app starts; everything else is the parent's code.
"""

import main  # ../python-fastapi-psycopg-async/main.py (PYTHONPATH)
from psycopg_pool import AsyncConnectionPool


class NoPreparePool(AsyncConnectionPool):
    def __init__(self, *args, kwargs=None, **options):
        super().__init__(*args, kwargs={**(kwargs or {}), "prepare_threshold": None}, **options)


main.AsyncConnectionPool = NoPreparePool
app = main.app
