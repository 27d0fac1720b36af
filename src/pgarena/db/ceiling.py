"""The database's own ceiling beside a cell: pgbench running the statements a stack would run, under the
cell's conditions.

For every workload × parameter and every distinct condition the run's cells were measured under — the round
trip between stack and PostgreSQL (--db-rtt: pgbench goes through a Toxiproxy proxy set to the cell's round
trip) and the connections the stack could use, min(VUs, pool size) — pgbench (the C client that ships with
PostgreSQL) runs the workload's statements as prepared statements (`-M prepared`: parsed once, a generic plan,
the cheapest any driver can do), pinned to the server CPU set where the stacks run. After an uncounted warm-up
it runs `runs` short times (3 × 2 s by default); the ceiling is the mean of their rates with a Student's t
interval over them (stats/intervals.py), as a cell's figure is. It is the most any stack could get from this
database under that cell's conditions; a stack's requests/s divided by it is the share of that capacity the
stack's framework and driver use.

Each run's rate is read from pgbench's per-transaction log (`-l`, machine-readable: the fifth and sixth
fields of a line are the transaction's completion time in seconds and microseconds), never from its text
summary: transactions completed after the first one, divided by the time from the first completion to the
last, so connection set-up (slow at a long round trip) and the partial seconds at both ends are left out.
`static` does not touch the database and has no ceiling.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pgarena.config.defaults import DEFAULT_CEILING_SECONDS
from pgarena.contract import workloads as wl
from pgarena.db.data import pgbench_binary
from pgarena.db.postgres import Database, PostgresError
from pgarena.stats.intervals import confidence_interval

DEFAULT_CEILING_RUNS = 3
"""Measured pgbench runs per condition: the interval is over their rates."""
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


def read_transaction_logs(folder: Path) -> tuple[int, float]:
    """(transactions, seconds) from pgbench per-transaction logs (`-l`) in `folder`: the transactions that
    completed after the first completion and the seconds from the first completion to the last, so their
    ratio is the steady rate (per second) without connection set-up. (0, 0.0) with fewer than two."""
    done: list[float] = []
    for log in folder.glob("pgbench*"):
        for line in log.read_text().splitlines():
            fields = line.split()
            if len(fields) >= 6:
                done.append(int(fields[4]) + int(fields[5]) / 1e6)
    if len(done) < 2:
        return 0, 0.0
    return len(done) - 1, max(done) - min(done)


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
    """pgbench's throughput for one workload × parameter under one condition: each run's transactions per
    second, their mean and its t interval (None with fewer than two runs)."""

    workload: str
    parameter: int | None
    connections: int
    transactions: int
    seconds: float
    description: str
    runs_tps: tuple[float, ...] = ()
    interval: tuple[float, float] | None = None

    @property
    def tps(self) -> float:
        """Mean transactions per second over the runs (all transactions over all seconds without runs)."""
        if self.runs_tps:
            return sum(self.runs_tps) / len(self.runs_tps)
        return self.transactions / self.seconds if self.seconds else 0.0


def measure_ceiling(db: Database, workload: str, parameter: int | None, *, connections: int,
                    seconds: int = DEFAULT_CEILING_SECONDS, runs: int = DEFAULT_CEILING_RUNS,
                    cpus: Sequence[int] | None = None, log_dir: Path | None = None,
                    label: str = "", warm_up: bool = True) -> CeilingMeasurement | None:
    """An uncounted warm-up (unless `warm_up` is False: the data is warm from an earlier condition of the same
    statements — every run opens new backends anyway), then `runs` pgbench runs of `seconds` each for one
    workload × parameter over `connections` clients to `db` (a proxy's host and port for a round trip); None
    for a workload without database work. `label` names the condition in the log file's name.

    Raises PostgresError when pgbench fails (its stderr is in the message and, with `log_dir`, in a file).
    """
    script = workload_script(workload, parameter)
    if script is None:
        return None
    env = {**os.environ, "PGPASSWORD": db.password}
    rates: list[float] = []
    transactions, measured_s, outputs = 0, 0.0, []
    with tempfile.TemporaryDirectory(prefix="pgarena-ceiling-") as tmp:
        argv = [pgbench_binary(), "-n", "-M", CEILING_PROTOCOL, "-c", str(connections), "-j", "1",
                "-T", str(seconds), *script.defines]
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
        warm = list(argv)
        warm[warm.index("-T") + 1] = str(WARMUP_SECONDS)
        if warm_up:
            subprocess.run(warm, capture_output=True, text=True, env=env, cwd=tmp, timeout=WARMUP_SECONDS + 60,
                           preexec_fn=pin)
        for index in range(runs):
            folder = Path(tmp) / f"run{index}"
            folder.mkdir()
            done = subprocess.run([*argv[:1], "-l", f"--log-prefix={folder}/pgbench", *argv[1:]], capture_output=True,
                                  text=True, env=env, cwd=tmp, timeout=seconds + 60, preexec_fn=pin)
            outputs.append(done.stdout + done.stderr)
            if done.returncode != 0:
                _write_log(log_dir, workload, parameter, label, outputs)
                raise PostgresError(f"pgbench failed for {workload}: {done.stderr.strip()[-400:]}")
            count, span = read_transaction_logs(folder)
            if count <= 0 or span <= 0:
                _write_log(log_dir, workload, parameter, label, outputs)
                raise PostgresError(f"pgbench completed fewer than two transactions of {workload} in {seconds} s "
                                    f"(a busy machine? see {log_dir or 'its log'})")
            transactions, measured_s = transactions + count, measured_s + span
            rates.append(count / span)
    _write_log(log_dir, workload, parameter, label, outputs)
    interval = confidence_interval(rates) if len(rates) >= 2 else None
    return CeilingMeasurement(workload=workload, parameter=parameter, connections=connections,
                              transactions=transactions, seconds=round(measured_s, 3), description=script.description,
                              runs_tps=tuple(rates), interval=None if interval is None or not all(
                                  map(math.isfinite, interval)) else interval)


def _write_log(log_dir: Path | None, workload: str, parameter: int | None, label: str, outputs: list[str]) -> None:
    """pgbench's output of every run, in logs/ceiling/ceiling-<workload>[-<parameter>][-<label>].log."""
    if log_dir is None:
        return
    log_dir.mkdir(parents=True, exist_ok=True)
    stem = "-".join(str(p) for p in (workload, parameter, label or None) if p is not None)
    (log_dir / f"ceiling-{stem}.log").write_text("\n".join(outputs))
