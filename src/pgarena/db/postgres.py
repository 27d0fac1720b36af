"""The database: a throwaway managed PostgreSQL cluster, or an existing server the user points to.

The managed cluster lives in the run's directory, listens on 127.0.0.1 on a free port (or the port a
stack or `--db-port` asks for) with a socket directory of its own, runs as the `postgres` OS user when
pgarena runs as root (the server refuses root), is pinned to the server CPU set, and is stopped on exit,
Ctrl-C or error. In both cases pgarena's objects live in schema `pgarena` and the stacks connect as a
role of pgarena's own (see namespace.py): a user's server keeps its tables, functions and roles.

This module holds what both kinds share (how to reach a database: `Database`, and a user's own server:
`external_database`) and where the server binaries are (`find_bin_dir`); db/cluster.py runs the managed
cluster and `provide_database` gives a run the one it asked for.
"""


from __future__ import annotations

import glob
import random
import re
import secrets
import shutil
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

import psycopg

from pgarena.db import namespace
from pgarena.db.namespace import NamespaceConflict
from pgarena.system.toxiproxy_install import default_cache_dir

APP_USER = "pgarena"
"""The stacks' role (managed cluster: unless --db-user or a stack's [database] names another)."""
APP_DATABASE = "pgarena"
INSTALL_HINT = "apt-get install postgresql (PostgreSQL server binaries: initdb, pg_ctl, postgres)"


class PostgresError(Exception):
    """The database could not be provided; the message says why and what to do."""



REGISTRY_POSTGRES_VERSION = "18.4.0"
"""The PostgreSQL scripts/postgres18.sh installs from the npm registry (setup.sh runs it; `make postgres18`): the
newest this machine's registries offer, and so the managed default wherever it is installed."""
SERVER_TOOLS = ("initdb", "pg_ctl", "postgres")


def registry_postgres_dirs() -> list[Path]:
    """Where scripts/postgres18.sh puts the server binaries: pgarena's tool cache, or /var/cache/pgarena/tools
    when it runs as root with a home the postgres OS user cannot enter."""
    return [base / f"postgres-{REGISTRY_POSTGRES_VERSION}" / "bin"
            for base in (default_cache_dir(), Path("/var/cache/pgarena/tools"))]


def server_major(directory: Path) -> int:
    """The major version of `directory/postgres` (`postgres -V`: "postgres (PostgreSQL) 18.4" → 18); 0 when it
    does not answer."""
    try:
        out = subprocess.run([str(directory / "postgres"), "-V"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return 0
    match = re.search(r"\(PostgreSQL\) (\d+)", out.stdout)
    return int(match.group(1)) if match else 0


def find_bin_dir(explicit: Path | None = None) -> Path:
    """Locate the server binaries: `explicit` (--postgres-bin) when given, else the newest PostgreSQL found among
    the npm registry's build (registry_postgres_dirs), PATH, `pg_config --bindir` and /usr/lib/postgresql/*/bin
    (on a tie, the earlier of those)."""
    if explicit is not None:
        if all((explicit / tool).is_file() for tool in SERVER_TOOLS):
            return explicit
        raise PostgresError(f"--postgres-bin {explicit}: no {', '.join(SERVER_TOOLS)} there")
    candidates: list[Path] = registry_postgres_dirs()
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).parent)
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10)
            candidates.append(Path(out.stdout.strip()))
        except (OSError, subprocess.SubprocessError):
            pass
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"))]
    complete = [d for d in dict.fromkeys(candidates) if all((d / tool).is_file() for tool in SERVER_TOOLS)]
    if not complete:
        raise PostgresError(f"PostgreSQL server binaries not found (initdb, pg_ctl). Install them: {INSTALL_HINT}")
    return max(complete, key=lambda d: (server_major(d), -complete.index(d)))


EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LISTEN_PORTS_FROM = 10000
"""The lowest port `free_port` hands out: above the registered services most machines run."""
MIN_LISTEN_PORTS = 1000
"""Fewer ports than this outside the ephemeral range, and `free_port` takes one the kernel picks."""
PICK_ATTEMPTS = 64


def ephemeral_range(path: Path = EPHEMERAL_RANGE) -> tuple[int, int] | None:
    """The ports the kernel gives outgoing connections (`ip_local_port_range`); None where it cannot be read."""
    try:
        low, high = (int(part) for part in path.read_text().split())
    except (OSError, ValueError):
        return None
    return low, high


def listen_ports(ephemeral: tuple[int, int] | None) -> list[range]:
    """The ports from `LISTEN_PORTS_FROM` up that lie outside the ephemeral range: none when it is unknown."""
    if ephemeral is None:
        return []
    low, high = ephemeral
    spans = [range(LISTEN_PORTS_FROM, low), range(max(high + 1, LISTEN_PORTS_FROM), 65536)]
    return [span for span in spans if len(span) > 0]


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port(ephemeral: tuple[int, int] | None = None, rng: random.Random | None = None) -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago, for a server of pgarena's to listen on.

    Not an ephemeral one where the machine leaves room: the kernel hands those to outgoing connections (the
    generator's, a driver's), and one may take the port between this check and the server's bind (a fresh-clone
    CI, 2026-11-29: "could not bind IPv4 address: Address already in use"). So a random port outside
    `ip_local_port_range` that binds now; a port the kernel picks only where fewer than `MIN_LISTEN_PORTS` lie
    outside that range or none of `PICK_ATTEMPTS` tries binds."""
    spans = listen_ports(ephemeral or ephemeral_range())
    if sum(len(span) for span in spans) >= MIN_LISTEN_PORTS:
        rng = rng or random.SystemRandom()
        weights = [len(span) for span in spans]
        for _ in range(PICK_ATTEMPTS):
            port = rng.choice(rng.choices(spans, weights)[0])
            if _bindable(port):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class Database:
    """Connection facts for one database: what stacks get as PGARENA_DB_* and what pgarena uses."""

    host: str
    port: int
    user: str
    password: str
    name: str
    admin_url: str
    """URL pgarena itself uses (a superuser on the managed cluster; the user's --database-url otherwise)."""
    managed: bool
    postmaster_pid: int | None = None
    """PID of the server's postmaster when it runs on this machine (for CPU accounting)."""
    stats_url: str | None = None
    """URL pgarena reads pg_stat_statements with (--admin-database-url; None = admin_url)."""
    data_dir: Path | None = None
    """Managed cluster: its data directory (postmaster.pid names the running server)."""
    log_path: Path | None = None
    """Managed cluster: its server log (`log_line_prefix` names each session's role: serverlog.py reads it)."""
    restart: Callable[[], int] | None = field(default=None, compare=False, repr=False)
    """Managed cluster: `pg_ctl restart -m fast`, returning the new postmaster's pid (resilience runs)."""
    preloaded: frozenset[str] = frozenset()
    """Managed cluster copied from a template (db/template.py): the data parts (db/data.py `data_parts`) it
    already holds, which load_workload_data does not load again."""

    @property
    def url(self) -> str:
        """The application URL stacks receive as PGARENA_DATABASE_URL."""
        return (
            f"postgresql://{quote(self.user, safe='')}:{quote(self.password, safe='')}"
            f"@{self.host}:{self.port}/{quote(self.name, safe='')}"
        )

    def connect(self, **kwargs) -> psycopg.Connection:
        """A psycopg connection as pgarena's admin, autocommit, UTC, seeing schema `pgarena` first
        (application_name 'pgarena-admin', so the connection poller does not count it as the stack's)."""
        return _session(self.admin_url, **kwargs)

    def connect_stats(self) -> psycopg.Connection:
        """A connection to read pg_stat_statements with (the admin URL when one was given)."""
        return _session(self.stats_url or self.admin_url)


def _session(url: str, **kwargs) -> psycopg.Connection:
    kwargs.setdefault("application_name", "pgarena-admin")  # NOTE: connections.ADMIN_APPLICATION_NAME
    conn = psycopg.connect(url, autocommit=True, **kwargs)
    conn.execute("SET TIME ZONE 'UTC'")
    conn.execute(f"SET search_path TO {namespace.SEARCH_PATH}")
    return conn



def _check_url(url: str, option: str) -> None:
    scheme = urlsplit(url).scheme
    if scheme not in ("postgresql", "postgres"):
        raise PostgresError(f"{option} must start with postgresql://, got '{scheme}://'")
    try:
        with psycopg.connect(url, connect_timeout=10) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        raise PostgresError(f"cannot connect to {option}: {str(exc).strip()}") from None


def external_database(url: str, *, admin_url: str | None = None, allow_overwrite: bool = False,
                      app_password: str | None = None) -> Database:
    """A server the user runs: pgarena's schema and its stacks' role there (namespace.py), checked to work.

    pgarena connects with `url` (its role needs CREATEROLE and CREATE on the database); the stacks
    connect as role `pgarena` with a password set for this run (`app_password`, else a random one: remote
    targets log in with the one the user gives). `admin_url` only reads pg_stat_statements.
    """
    _check_url(url, "--database-url")
    if admin_url:
        _check_url(admin_url, "--admin-database-url")
    parts = urlsplit(url)
    password = app_password or secrets.token_hex(12)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            name = conn.execute("SELECT current_database()").fetchone()[0]
            namespace.prepare_role(conn, APP_USER, password, allow_overwrite=allow_overwrite)
            namespace.prepare_schema(conn, APP_USER, name, allow_overwrite=allow_overwrite)
    except (psycopg.Error, NamespaceConflict) as exc:
        raise PostgresError(str(exc).strip()) from None
    db = Database(host=parts.hostname or "127.0.0.1", port=parts.port or 5432, user=APP_USER, password=password,
                  name=name, admin_url=url, managed=False, stats_url=admin_url)
    try:
        with psycopg.connect(db.url, connect_timeout=10):
            pass
    except psycopg.Error as exc:
        raise PostgresError(f"pgarena's role '{APP_USER}' cannot log in to {db.host}:{db.port}/{name} "
                            f"({str(exc).strip()}); allow it password logins (pg_hba.conf)") from None
    return db

