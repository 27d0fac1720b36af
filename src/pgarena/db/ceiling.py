"""The database's own ceiling for each workload: pgbench running the statements a stack would run.

For every workload and parameter, pgbench (the C client that ships with PostgreSQL) runs the workload's
statements as prepared statements (`-M prepared`: parsed once, a generic plan — the cheapest any driver can
do) over the same number of connections a stack may hold (the pool size), pinned to the server CPU set
where the stacks run, for a few seconds. Its transactions per second is the most any stack could get from
this database on this CPU set; a stack's requests/s divided by it is the share of the database's capacity
the stack's framework and driver leave unused or use.

Throughput is read from pgbench's per-second aggregate log (`--aggregate-interval=1`, machine-readable:
the first field of a line is the interval's start, the second its transaction count), never from its text
summary. `static` does not touch the database and has no ceiling.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pgarena.contract import workloads as wl
from pgarena.db.data import pgbench_binary
from pgarena.db.postgres import Database, PostgresError

DEFAULT_CEILING_SECONDS = 5
"""Seconds of pgbench per workload × parameter."""
CEILING_PROTOCOL = "prepared"
WARMUP_SECONDS = 1
"""An uncounted pgbench run before each measured one."""


@dataclass(frozen=True)
class PgbenchScript:
    """A pgbench invocation for one workload: its script text (or a built-in) and variable definitions."""

    script: str | None
    builtin: str | None
    defines: tuple[str, ...]
    description: str


def read_aggregate_logs(folder: Path) -> tuple[int, int]:
    """(transactions, seconds) from pgbench `--aggregate-interval=1` logs in `folder`.

    The first and the last one-second interval are usually partial (the run starts and ends inside them);
    with three or more intervals they are left out, so the rate is that of whole seconds."""
    per_interval: dict[int, int] = {}
    for log in folder.glob("pgbench*"):
        for line in log.read_text().splitlines():
            fields = line.split()
            if len(fields) >= 2:
                start = int(fields[0])
                per_interval[start] = per_interval.get(start, 0) + int(fields[1])
    starts = sorted(per_interval)
    if len(starts) >= 3:
        starts = starts[1:-1]
    return sum(per_interval[s] for s in starts), len(starts)


def workload_script(workload: str, parameter: int | None) -> PgbenchScript | None:
    """The statements one request of `workload` runs, as a pgbench script (None: no database work).

    perf-test: the function with the seed's 16 bound parameters; users / graphql: the ordered page of the
    users table; graphql-nested / users-posts: that page and its posts, batched (a stack that issues one query
    per user is below this ceiling by its own choice); tx: pgbench's built-in TPC-B-like transaction, which is exactly the tx workload (update the
    account, read it back, update teller and branch, insert history, in one transaction).
    """
    if workload == wl.PERF_TEST:
        values = {"_records": str(parameter or 1), **wl.SEED_PERF_TEST_VALUES}
        bound = ", ".join(f":{name[1:]}::{sql_type}" for name, sql_type in wl.PERF_TEST_PARAMETERS)
        defines = tuple(arg for name, _ in wl.PERF_TEST_PARAMETERS for arg in ("-D", f"{name[1:]}={values[name]}"))
        return PgbenchScript(f"SELECT * FROM perf_test({bound});\n", None, defines,
                             "SELECT * FROM perf_test(16 bound parameters)")
    if workload in (wl.USERS, wl.GRAPHQL):
        limit = parameter if workload == wl.USERS else wl.GRAPHQL_LIMIT
        columns = "id, username, full_name" if workload == wl.GRAPHQL else "id, username, full_name, email, age, created_at"
        sql = f"SELECT {columns} FROM users ORDER BY id LIMIT :limit;\n"
        return PgbenchScript(sql, None, ("-D", f"limit={limit}"), sql.strip().rstrip(";").replace(":limit", str(limit)))
    if workload == wl.TX:
        return PgbenchScript(None, "tpcb-like", (), "pgbench's built-in TPC-B-like transaction")
    if workload in wl.NESTED_LISTS:  # the batched plan: the users page, then all their posts in one statement
        sql = ("SELECT id, username FROM users ORDER BY id LIMIT :limit;\n"
               "SELECT u.id AS user_id, p.id, p.title FROM (SELECT id FROM users ORDER BY id LIMIT :limit) u "
               "CROSS JOIN LATERAL (SELECT id, title FROM posts WHERE user_id = u.id ORDER BY id LIMIT :posts) p;\n")
        return PgbenchScript(sql, None, ("-D", f"limit={wl.NESTED_LIMIT}", "-D", f"posts={wl.NESTED_POSTS_LIMIT}"),
                             f"users LIMIT {wl.NESTED_LIMIT}, then their first {wl.NESTED_POSTS_LIMIT} posts each "
                             "in one statement (2 statements, the batched plan)")
    if workload in wl.SCENARIOS:
        return _scenario_script(workload, parameter)
    return None


def _scenario_script(workload: str, parameter: int | None) -> PgbenchScript:
    """The scenario's function with the load request's arguments bound (perf-post: the seed payload)."""
    if workload == wl.PERF_MINIMAL:
        sql = "SELECT * FROM perf_minimal();\n"
        return PgbenchScript(sql, None, (), sql.strip().rstrip(";"))
    if workload == wl.PERF_POST:
        payload = json.dumps(wl.SEED_POST_PAYLOAD, separators=(",", ":"))
        return PgbenchScript("SELECT * FROM perf_post(:records::int, :payload::jsonb);\n", None,
                             ("-D", f"records={parameter}", "-D", f"payload={payload}"),
                             f"SELECT * FROM perf_post({parameter}, <seed payload>)")
    if workload == wl.PERF_NESTED:
        return PgbenchScript("SELECT * FROM perf_nested(:records::int, :depth::int);\n", None,
                             ("-D", f"records={wl.NESTED_RECORDS}", "-D", f"depth={parameter}"),
                             f"SELECT * FROM perf_nested({wl.NESTED_RECORDS}, {parameter})")
    if workload == wl.PERF_LARGE_PAYLOAD:
        return PgbenchScript("SELECT * FROM perf_large_payload(:kb::int);\n", None, ("-D", f"kb={parameter}"),
                             f"SELECT * FROM perf_large_payload({parameter})")
    names = [f"p{i + 1}" for i in range(len(wl.MANY_PARAMS_TYPES))]
    bound = ", ".join(f":{name}::{kind}" for name, kind in zip(names, wl.MANY_PARAMS_TYPES))
    defines = tuple(arg for name in names for arg in ("-D", f"{name}={wl.SEED_MANY_PARAMS['_' + name]}"))
    return PgbenchScript(f"SELECT * FROM perf_many_params({bound});\n", None, defines,
                         "SELECT * FROM perf_many_params(20 bound parameters)")


@dataclass(frozen=True)
class CeilingMeasurement:
    """pgbench's throughput for one workload × parameter: transactions per second over `seconds`."""

    workload: str
    parameter: int | None
    connections: int
    transactions: int
    seconds: int
    description: str

    @property
    def tps(self) -> float:
        return self.transactions / self.seconds if self.seconds else 0.0


def measure_ceiling(db: Database, workload: str, parameter: int | None, *, connections: int,
                    seconds: int = DEFAULT_CEILING_SECONDS, cpus: Sequence[int] | None = None,
                    log_dir: Path | None = None) -> CeilingMeasurement | None:
    """Run pgbench for one workload × parameter (None for a workload without database work).

    Raises PostgresError when pgbench fails (its stderr is in the message and, with `log_dir`, in a file).
    """
    script = workload_script(workload, parameter)
    if script is None:
        return None
    env = {**os.environ, "PGPASSWORD": db.password}
    with tempfile.TemporaryDirectory(prefix="pgarena-ceiling-") as tmp:
        argv = [pgbench_binary(), "-n", "-M", CEILING_PROTOCOL, "-c", str(connections), "-j", "1",
                "-T", str(seconds), "-l", "--aggregate-interval=1", f"--log-prefix={tmp}/pgbench", *script.defines]
        if script.script is not None:
            path = Path(tmp) / "workload.sql"
            path.write_text(script.script)
            argv += ["-f", str(path)]
        else:
            argv += ["-b", str(script.builtin)]
        argv += ["-h", db.host, "-p", str(db.port), "-U", db.user, db.name]
        pin = (lambda: os.sched_setaffinity(0, set(cpus))) if cpus else None
        # NOTE: a short uncounted run first (caches, catalog lookups, the statements' plans), as every stack
        # gets a warm-up: the first seconds on a cold connection set ran ~35 % slower here.
        warm = [a for a in argv if not a.startswith(("--aggregate-interval", "--log-prefix")) and a != "-l"]
        warm[warm.index("-T") + 1] = str(WARMUP_SECONDS)
        subprocess.run(warm, capture_output=True, text=True, env=env, cwd=tmp, timeout=WARMUP_SECONDS + 60,
                       preexec_fn=pin)
        done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp, timeout=seconds + 60,
                              preexec_fn=pin)
        if log_dir is not None:
            log_dir.mkdir(parents=True, exist_ok=True)
            stem = workload if parameter is None else f"{workload}-{parameter}"
            (log_dir / f"ceiling-{stem}.log").write_text(done.stdout + done.stderr)
        if done.returncode != 0:
            raise PostgresError(f"pgbench failed for {workload}: {done.stderr.strip()[-400:]}")
        transactions, intervals = read_aggregate_logs(Path(tmp))
    if transactions <= 0 or intervals <= 0:
        raise PostgresError(f"pgbench completed no transaction of {workload} in {seconds} s (a busy machine? "
                            f"see {log_dir or 'its log'})")
    return CeilingMeasurement(workload=workload, parameter=parameter, connections=connections,
                              transactions=transactions, seconds=max(intervals, 1),
                              description=script.description)
