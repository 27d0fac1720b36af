"""The managed PostgreSQL cluster: a throwaway cluster in the run's directory (`ManagedCluster`: initdb, the
settings profile, start, restart, stop and removal), and `provide_database`, which gives a run either that
cluster or the user's own server (db/postgres.py has what both share)."""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import quote

import psutil
import psycopg
from psycopg import sql as pgsql

from pgarena.db import namespace, template
from pgarena.db.data import data_parts, load_workload_data
from pgarena.db.namespace import NamespaceConflict
from pgarena.db.postgres import (
    APP_DATABASE,
    APP_USER,
    INSTALL_HINT,
    Database,
    PostgresError,
    external_database,
    find_bin_dir,
    free_port,
)
from pgarena.system.pidregistry import PidRegistry
from pgarena.system.reaper import postmaster_of

ADMIN_USER = "postgres"
ALTERNATE_ADMIN_USER = "pgarena_admin"
"""The managed cluster's superuser when the stacks' role is asked to be called `postgres`."""

SETTINGS_PROFILE_NAME = "pgarena-default"
SETTINGS_MARKER = "\n# pgarena settings profile: "
"""Where pgarena's settings begin in a managed cluster's postgresql.conf (appended after initdb's)."""
SETTINGS_PROFILE: dict[str, str] = {
    "max_connections": "200",
    "shared_buffers": "256MB",
    "shared_preload_libraries": "pg_stat_statements",
    "pg_stat_statements.track": "top",
    "timezone": "UTC",
    "log_timezone": "UTC",
    "log_min_messages": "warning",
    "log_checkpoints": "off",
    "log_line_prefix": "%m [%p] %q%u@%d ",
}
"""Settings applied to the managed cluster on top of PostgreSQL's defaults (docs/methodology.md).

Everything else is the server's default; the effective non-default settings are read back from
`pg_settings` and stored in every result.
"""


PORT_ATTEMPTS = 3
"""Starts of the managed server on a port pgarena chose, each on a fresh one
(`ManagedCluster._start_on_a_free_port`)."""
PORT_IN_USE = "Address already in use"
"""What the server's log says when its port was taken."""


@dataclass(frozen=True)
class ClusterSettings:
    """What the managed cluster offers the stacks; None = pgarena's choice (a free port, role and
    database `pgarena`, a random password). Set by --db-* options or a stack's `[database]` table."""

    port: int | None = None
    user: str | None = None
    password: str | None = None
    name: str | None = None

    def described(self) -> str:
        """`port 5432, user bench, password ***, database hello` (the password never shown)."""
        parts = [("port", self.port), ("user", self.user), ("password", self.password and "***"),
                 ("database", self.name)]
        return ", ".join(f"{k} {v}" for k, v in parts if v is not None) or "pgarena's defaults"


def merge_cluster_settings(given: ClusterSettings, wanted: dict[str, ClusterSettings]) -> ClusterSettings:
    """One managed cluster for every selected stack: the --db-* options plus each stack's `[database]`.

    NOTE: a run has one cluster, so two sources that fix the same setting differently cannot both be
    served: PostgresError names them (run those stacks in separate runs). Documented in docs/contract.md.
    """
    merged = dict(vars(given))
    source = {key: "the command line" for key, value in merged.items() if value is not None}
    for stack_id, settings in wanted.items():
        for key, value in vars(settings).items():
            if value is None:
                continue
            if merged[key] is not None and merged[key] != value:
                shown = "***" if key == "password" else f"{merged[key]} vs {value}"
                raise PostgresError(f"stack {stack_id} wants the managed database's {key} different from "
                                    f"{source[key]} ({shown}); run them in separate runs")
            merged[key], source[key] = value, f"stack {stack_id}"
    return ClusterSettings(**merged)


def _run_as(user: str | None, argv: Sequence[str], prefix: Sequence[str] = (), **kwargs) -> subprocess.CompletedProcess:
    if user:
        argv = ["runuser", "-u", user, "--", *argv]
    return subprocess.run([*prefix, *argv], capture_output=True, text=True, **kwargs)


@dataclass(frozen=True)
class Place:
    """Where the managed cluster runs: this machine's loopback (the default), or elsewhere (`--netns`,
    `--topology`): started with `argv_prefix` (a namespace's `ip netns exec`), listening on `address`, with
    `remote_clients` accepting password logins from the networks its host is directly on (pg_hba `samenet`:
    the roles' bridge, pgarena's host link included)."""

    argv_prefix: tuple[str, ...] = ()
    address: str = "127.0.0.1"
    remote_clients: bool = False


class ManagedCluster:
    """A throwaway cluster in `workdir`: initdb → start → (use) → stop → remove its data."""

    def __init__(self, workdir: Path, *, bin_dir: Path, cpus: Sequence[int] | None = None,
                 settings: ClusterSettings | None = None, max_connections: int | None = None,
                 registry: PidRegistry | None = None, place: Place | None = None) -> None:
        settings = settings or ClusterSettings()
        self.place = place or Place()
        self.workdir = workdir
        self.registry = registry
        self.bin_dir = bin_dir
        self.cpus = list(cpus or [])
        self.max_connections = max_connections
        self.home = workdir / "postgres"
        self.fixed_port = settings.port is not None
        self.port = settings.port or free_port()
        self.app_user = settings.user or APP_USER
        self.app_database = settings.name or APP_DATABASE
        self.admin_user = ALTERNATE_ADMIN_USER if self.app_user == ADMIN_USER else ADMIN_USER
        self.admin_password = secrets.token_hex(12)
        self.app_password = settings.password or secrets.token_hex(12)
        self.os_user = ADMIN_USER if os.geteuid() == 0 else None
        self._socket_dir: str | None = None
        self._started = False

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    @property
    def log_path(self) -> Path:
        return self.home / "postgres.log"

    def _chown(self, path: Path) -> None:
        if self.os_user:
            entry = pwd.getpwnam(self.os_user)
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def _ctl(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """pg_ctl as the cluster's OS user, inside the cluster's network namespace (a restarted postmaster
        must come up there again)."""
        return _run_as(self.os_user, [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), *args], timeout=timeout,
                       prefix=self.place.argv_prefix)

    def _start_on_a_free_port(self) -> tuple[subprocess.CompletedProcess, str]:
        """pg_ctl start; and the log it wrote. A port pgarena chose (not one the user gave) is one that was free a
        moment before (`free_port`), which another process may still take before the server binds it (a fresh-clone
        CI, 2026-11-29 13:10, three test workers under load: "could not bind IPv4 address: Address already in
        use"; the port was an ephemeral one then). Then the server starts again on another, up to `PORT_ATTEMPTS`
        times in all (a later `port` line of postgresql.conf overrides the earlier)."""
        attempt = 1
        while True:
            before = self.log_path.stat().st_size if self.log_path.exists() else 0
            started = self._ctl("-l", str(self.log_path), "-w", "-t", "60", "start")
            with open(self.log_path, "rb") as log:
                log.seek(before)
                log_tail = log.read().decode(errors="replace")
            if (started.returncode == 0 or self.fixed_port or attempt == PORT_ATTEMPTS
                    or PORT_IN_USE not in log_tail):
                return started, log_tail
            attempt += 1
            self.port = free_port()
            with open(self.data_dir / "postgresql.conf", "a", encoding="utf-8") as conf:
                conf.write(f"port = {self.port}  # pgarena: the first port was taken before the server bound it\n")

    def start(self, template: Path | None = None) -> Database:
        """Create, configure and start the cluster; return how to reach it. `template`: the data directory of a
        stopped cluster made like this one (db/template.py) to copy instead of running initdb."""
        if self.fixed_port and port_taken(self.port):
            raise PostgresError(f"the managed database's port {self.port} is already in use on 127.0.0.1")
        if self.os_user:
            try:
                pwd.getpwnam(self.os_user)
            except KeyError:
                raise PostgresError(
                    f"running as root needs the '{self.os_user}' OS user to own the cluster: {INSTALL_HINT}"
                ) from None
        self._clear_stale_home()
        self.home.mkdir(parents=True)
        self._chown(self.home)
        if self.os_user and _run_as(self.os_user, ["test", "-w", str(self.home)]).returncode != 0:
            # NOTE: a parent folder the postgres user cannot traverse (e.g. a 0700 home): the cluster
            # lives in a private temporary folder instead (its log is copied back either way).
            self.home.rmdir()
            self.home = Path(tempfile.mkdtemp(prefix="pgarena-pg-"))
            self._chown(self.home)
        self._socket_dir = tempfile.mkdtemp(prefix="pgarena-sock-")
        self._chown(Path(self._socket_dir))
        if self.registry is not None:  # before the server exists: a kill from here on leaves it findable
            self.registry.track_postgres(self.data_dir, self._socket_dir)
        if template is None:
            self._initdb()
        else:
            self._copy(template)
        settings = {
            **SETTINGS_PROFILE,
            "port": str(self.port),
            "listen_addresses": f"'{self.place.address}'",
            "unix_socket_directories": f"'{self._socket_dir}'",
        }
        if self.max_connections and self.max_connections > int(SETTINGS_PROFILE["max_connections"]):
            settings["max_connections"] = str(self.max_connections)  # stacks running together (interleaved)
        with open(self.data_dir / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write(SETTINGS_MARKER + SETTINGS_PROFILE_NAME + "\n")
            for key, value in settings.items():
                if key in ("shared_preload_libraries", "pg_stat_statements.track", "timezone", "log_timezone",
                           "log_line_prefix"):
                    value = f"'{value}'"
                conf.write(f"{key} = {value}\n")
        if self.place.remote_clients:  # initdb allows host logins from the loopback only
            with open(self.data_dir / "pg_hba.conf", "a", encoding="utf-8") as hba:
                hba.write("\n# pgarena: the roles' networks\nhost all all samenet scram-sha-256\n")
        started, log_tail = self._start_on_a_free_port()
        if started.returncode != 0:
            raise PostgresError(f"PostgreSQL did not start: {started.stderr.strip()} {log_tail[-800:]}")
        self._started = True
        pid = int((self.data_dir / "postmaster.pid").read_text().splitlines()[0])
        self._pin(pid)
        base = f"postgresql://{quote(self.admin_user, safe='')}:{self.admin_password}@{self.place.address}:{self.port}/"
        admin_url = base + quote(self.app_database, safe="")
        try:
            with psycopg.connect(base + "postgres", autocommit=True) as conn:
                namespace.prepare_role(conn, self.app_user, self.app_password, allow_overwrite=False)
                if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [self.app_database]).fetchone():
                    conn.execute(pgsql.SQL("CREATE DATABASE {} OWNER {}").format(
                        pgsql.Identifier(self.app_database), pgsql.Identifier(self.app_user)))
            with psycopg.connect(admin_url, autocommit=True) as conn:
                namespace.prepare_schema(conn, self.app_user, self.app_database, allow_overwrite=False)
        except (psycopg.Error, NamespaceConflict) as exc:
            raise PostgresError(f"cannot set up the managed database (user {self.app_user}, database "
                                f"{self.app_database}): {str(exc).strip()}") from None
        return Database(
            host=self.place.address,
            port=self.port,
            user=self.app_user,
            password=self.app_password,
            name=self.app_database,
            admin_url=admin_url,
            managed=True,
            postmaster_pid=pid,
            data_dir=self.data_dir,
            log_path=self.log_path,
            restart=self.restart,
        )

    def _initdb(self) -> None:
        """A new data directory by initdb: the admin role with `admin_password`, peer/trust on the socket."""
        pwfile = Path(tempfile.mkstemp(prefix="pgarena-pw-")[1])
        try:
            pwfile.write_text(self.admin_password + "\n")
            self._chown(pwfile)
            init = _run_as(
                self.os_user,
                [
                    str(self.bin_dir / "initdb"), "-D", str(self.data_dir), "-U", self.admin_user,
                    "--auth-local=peer" if self.os_user else "--auth-local=trust",
                    "--auth-host=scram-sha-256", f"--pwfile={pwfile}", "-E", "UTF8", "--locale=C.UTF-8",
                    "--no-sync",  # a throwaway cluster: skip fsync of the template files (~5 s here)
                ],
                timeout=300,
            )
        finally:
            pwfile.unlink(missing_ok=True)
        if init.returncode != 0:
            raise PostgresError(f"initdb failed: {(init.stderr or init.stdout).strip()[-500:]}")

    def _copy(self, template: Path) -> None:
        """The data directory as a copy of `template` (owner and modes kept), its admin role given this cluster's
        own password in single-user mode (the template's was another's); the stacks' role gets its password in
        start(), as on a new cluster."""
        copied = subprocess.run(["cp", "-a", str(template), str(self.data_dir)], capture_output=True, text=True)
        if copied.returncode != 0:
            raise PostgresError(f"cannot copy the template data directory {template}: {copied.stderr.strip()}")
        statement = f"ALTER ROLE \"{self.admin_user}\" PASSWORD '{self.admin_password}'\n"
        done = _run_as(self.os_user, [str(self.bin_dir / "postgres"), "--single", "-D", str(self.data_dir), "postgres"],
                       input=statement, timeout=120)
        if done.returncode != 0:
            raise PostgresError(f"cannot set the admin password on the copied template: "
                                f"{(done.stderr or done.stdout).strip()[-500:]}")

    def restart(self) -> int:
        """`pg_ctl restart -m fast` (the server's own options, its log kept), the new postmaster pinned like the
        first; its pid."""
        done = self._ctl("-l", str(self.log_path), "-m", "fast", "-w", "-t", "60", "restart")
        if done.returncode != 0:
            raise PostgresError(f"pg_ctl restart failed: {done.stderr.strip()}")
        pid = int((self.data_dir / "postmaster.pid").read_text().splitlines()[0])
        self._pin(pid)
        return pid

    def _clear_stale_home(self) -> None:
        """Remove the cluster folder a killed run left in `workdir` (a resumed run), unless a server uses it."""
        if not self.home.exists():
            return
        server = postmaster_of(self.data_dir)
        if server is not None:
            raise PostgresError(f"{self.data_dir} is in use by a running PostgreSQL (pid {server.pid}); "
                                f"not deleting it. Stop that server first: pg_ctl -D {self.data_dir} stop")
        shutil.rmtree(self.home)

    def _pin(self, pid: int) -> None:
        if not self.cpus:
            return
        root = psutil.Process(pid)
        for proc in [root, *root.children(recursive=True)]:
            try:
                proc.cpu_affinity(self.cpus)
            except psutil.Error:
                pass

    def stop(self, *, keep_data: bool = False) -> None:
        """Stop the server (fast shutdown), keep its log as `workdir/postgres.log`, remove the rest."""
        if self._started:
            result = self._ctl("-m", "fast", "-w", "-t", "60", "stop")
            if result.returncode != 0:
                self._ctl("-m", "immediate", "-w", "stop")
            self._started = False
        if self.log_path.exists():
            shutil.copyfile(self.log_path, self.workdir / "postgres.log")
        running = postmaster_of(self.data_dir)
        if self.registry is not None and running is None:
            self.registry.untrack_postgres(self.data_dir)
        if not keep_data and running is None:  # never delete a data directory a live server uses
            shutil.rmtree(self.home, ignore_errors=True)
        if self._socket_dir:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None


def port_taken(port: int) -> bool:
    """Something listens on 127.0.0.1:`port`."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def template_for(root: Path, like: ManagedCluster, workloads: Sequence[str]) -> Path:
    """The data directory of a template (db/template.py) for clusters like `like` holding `workloads`' data in
    `root`: the one there, or one built now (a managed cluster made and loaded as always, stopped cleanly)."""
    parts = data_parts(workloads)
    described = template.facts(bin_dir=like.bin_dir, os_user=like.os_user, admin_user=like.admin_user,
                               app_user=like.app_user, app_database=like.app_database, parts=parts)
    key = template.key_of(described)
    found = template.ready(root, key)
    if found is not None:
        return found
    with template.building(root, key):
        found = template.ready(root, key)
        if found is not None:
            return found
        workdir = Path(tempfile.mkdtemp(prefix=f"{key}-", dir=root))
        builder = ManagedCluster(workdir, bin_dir=like.bin_dir,
                                 settings=ClusterSettings(user=like.app_user, name=like.app_database))
        try:
            try:
                load_workload_data(builder.start(), workloads)
            finally:
                builder.stop(keep_data=True)
            return template.publish(root, key, builder.data_dir, described, SETTINGS_MARKER)
        finally:
            shutil.rmtree(builder.home, ignore_errors=True)
            shutil.rmtree(workdir, ignore_errors=True)


@contextmanager
def provide_database(
    workdir: Path, *, database_url: str | None, cpus: Sequence[int] | None, bin_dir: Path | None = None,
    admin_url: str | None = None, allow_overwrite: bool = False, settings: ClusterSettings | None = None,
    max_connections: int | None = None, registry: PidRegistry | None = None, place: Place | None = None,
    app_password: str | None = None, workloads: Sequence[str] = (), templates: Path | None = None,
) -> Iterator[Database]:
    """Yield a Database; a managed cluster is stopped and removed on the way out, whatever happened.

    `max_connections` raises the managed cluster's limit above the settings profile's (never lowers it);
    `registry` records the managed cluster so that a killed run's server is found and stopped (reaper.py).
    `app_password`: with `database_url`, the password pgarena's role gets there (None: a random one).
    `workloads` with `templates` (default: the folder PGARENA_TEMPLATE_PGDATA names, a test/dev aid): the managed
    cluster is a copy of a template holding their data (`Database.preloaded`), built there first if missing.
    """
    if database_url:
        yield external_database(database_url, admin_url=admin_url, allow_overwrite=allow_overwrite,
                                app_password=app_password)
        return
    cluster = ManagedCluster(workdir, bin_dir=find_bin_dir(bin_dir), cpus=cpus, settings=settings,
                             max_connections=max_connections, registry=registry, place=place)
    root = templates or template.templates_from_environment()
    try:
        if root is not None and workloads:
            source = template_for(root, cluster, workloads)
            yield replace(cluster.start(source), preloaded=frozenset(data_parts(workloads)))
        else:
            yield cluster.start()
    finally:
        cluster.stop()


