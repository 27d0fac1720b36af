"""What a stack is started with: its templated values, its environment, its health path."""

from __future__ import annotations

import os
import socket

from pgarena.config.run import RunConfig, workload_parameters
from pgarena.config.stackdef import Stack, render_template
from pgarena.contract import workloads as wl
from pgarena.db.connections import split_pool
from pgarena.db.postgres import (
    Database,
)


def stack_values(config: RunConfig, db: Database, stack: Stack, port: int,
                 pool_size: int | None = None) -> dict[str, str]:
    """pgarena's values for one stack: the template names of docs/contract.md. `pool_size`: the pool it is
    started with (a run with several pool sizes starts it once per pool size); None: `config.pool_size`."""
    pool = pool_size if pool_size is not None else config.pool_size
    return {
        "host": "127.0.0.1",
        "port": str(port),
        "database_url": db.url,
        "db_host": db.host,
        "db_port": str(db.port),
        "db_user": db.user,
        "db_password": db.password,
        "db_name": db.name,
        "pool_size": str(pool),
        "pool_size_per_worker": str(max(1, pool // config.workers)),
        "pool_sizes": ",".join(str(n) for n in split_pool(pool, config.workers)),
        "workers": str(config.workers),
        "stack_dir": str(stack.directory),
    }


def stack_environment(values: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """The process environment of a stack: ours, PGARENA_* and the stack's templated mapping."""
    env = dict(os.environ)
    env.update({f"PGARENA_{key.upper()}": value for key, value in values.items()})
    env.update({key: render_template(value, values) for key, value in extra.items()})
    return env


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def resolve_health_path(config: RunConfig, definition) -> str:
    """The path pgarena polls until a stack is healthy: `run.health_path`, or for `workload:<name>` that
    workload's verification request at its headline parameter (before the stack's own routes apply)."""
    workload = definition.run.health_workload
    if workload is None:
        return definition.run.health_path
    return wl.load_request(workload, workload_parameters(config, workload)[0]).path
