"""Does the database's cost of perf-test depend on how a driver sends the parameters? Measure it.

pgbench calls perf_test with all 16 arguments either pasted as literals (simple protocol, what an app
that builds SQL text does) or bound as parameters of a prepared statement (what pgx, asyncpg and most
drivers do), against pgarena's function and, for contrast, the same body as an inlinable LANGUAGE sql
function (created in a scratch schema and dropped afterwards). Throughput is read from pgbench's
per-second aggregate log (machine-readable), not from its text summary.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pgarena.contract import workloads as wl
from pgarena.db.ceiling import read_aggregate_logs
from pgarena.db.data import packaged_sql, pgbench_binary
from pgarena.db.postgres import Database, PostgresError

CONTRAST_SCHEMA = "pgarena"
"""The contrast function lives beside perf_test in pgarena's own schema (it is dropped afterwards)."""
FUNCTIONS = {
    "perf_test (pgarena: PL/pgSQL, generic plan)": "pgarena.perf_test",
    "contrast: inlinable LANGUAGE sql": f"{CONTRAST_SCHEMA}.perf_test_inlined",
}
MODES = ("simple", "extended", "prepared")
"""pgbench protocols: literals in the SQL text; 16 bound parameters in an unnamed statement (parsed and
planned per call, like node-postgres); the same in a named prepared statement (like pgx, asyncpg)."""


@dataclass(frozen=True)
class ModeResult:
    """Transactions per second of one function × row count × protocol."""

    function: str
    rows: int
    mode: str
    tps: float


def inlinable_variant() -> str:
    """The packaged function's body as a LANGUAGE sql function in the contrast schema."""
    source = packaged_sql("perf_test.sql")
    head = source.split("LANGUAGE plpgsql")[0].replace("pgarena.perf_test(", f"{CONTRAST_SCHEMA}.perf_test_inlined(")
    body = source.split("RETURN QUERY", 1)[1].split("END\n$fn$", 1)[0].strip().rstrip(";")
    return f"{head}LANGUAGE sql STABLE AS $fn$ {body} $fn$;"


def _literal(value: str, sql_type: str) -> str:
    return "'" + value.replace("'", "''") + "'::" + sql_type


def scripts(function: str, rows: int) -> dict[str, tuple[str, list[str]]]:
    """mode → (pgbench script, extra pgbench arguments defining its variables)."""
    values = {"_records": str(rows), **wl.SEED_PERF_TEST_VALUES}
    literal = ", ".join(_literal(values[name], t) for name, t in wl.PERF_TEST_PARAMETERS)
    bound = ", ".join(f":{name[1:]}::{t}" for name, t in wl.PERF_TEST_PARAMETERS)
    defines = [arg for name, _ in wl.PERF_TEST_PARAMETERS for arg in ("-D", f"{name[1:]}={values[name]}")]
    return {
        "simple": (f"SELECT * FROM {function}({literal});\n", []),
        "extended": (f"SELECT * FROM {function}({bound});\n", defines),
        "prepared": (f"SELECT * FROM {function}({bound});\n", defines),
    }


def measure(
    db: Database,
    *,
    rows: Sequence[int] = (1, 100),
    clients: int = 8,
    seconds: int = 5,
    cpus: Sequence[int] | None = None,
) -> list[ModeResult]:
    """Run pgbench for every function × rows × mode; the contrast function is dropped afterwards."""
    pgbench = pgbench_binary()
    with db.connect() as conn:
        conn.execute(inlinable_variant())
    results = []
    env = {**os.environ, "PGPASSWORD": db.password}
    try:
        for count in rows:
            for label, function in FUNCTIONS.items():
                for mode, (script, defines) in scripts(function, count).items():
                    with tempfile.TemporaryDirectory(prefix="pgarena-pgbench-") as tmp:
                        script_path = Path(tmp) / "call.sql"
                        script_path.write_text(script)
                        argv = [
                            pgbench, "-n", "-M", mode, "-c", str(clients), "-j", "1", "-T", str(seconds),
                            "-l", "--aggregate-interval=1", f"--log-prefix={tmp}/pgbench", *defines,
                            "-f", str(script_path), "-h", db.host, "-p", str(db.port), "-U", db.user, db.name,
                        ]
                        done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp,
                                              timeout=seconds + 60,
                                              preexec_fn=(lambda: os.sched_setaffinity(0, set(cpus))) if cpus else None)
                        if done.returncode != 0:
                            raise PostgresError(f"pgbench failed: {done.stderr.strip()[-400:]}")
                        transactions, intervals = read_aggregate_logs(Path(tmp))
                    results.append(ModeResult(label, count, mode, transactions / max(intervals, 1)))
    finally:
        with db.connect() as conn:
            conn.execute(f"DROP FUNCTION IF EXISTS {CONTRAST_SCHEMA}.perf_test_inlined")
    return results


def markdown(results: list[ModeResult]) -> str:
    """A table: function × rows, TPS per mode and each mode's ratio to literals."""
    from pgarena.report.markup import table

    keyed = {(r.function, r.rows, r.mode): r.tps for r in results}
    rows = []
    for function, count in dict.fromkeys((r.function, r.rows) for r in results):
        tps = [keyed[(function, count, mode)] for mode in MODES]
        rows.append((function, count, *(f"{t:,.0f}" for t in tps), *(f"{t / tps[0]:.2f}" for t in tps[1:])))
    return table(["function", "rows", "literals (simple)", "bound (extended)", "bound (prepared)",
                  "extended / literals", "prepared / literals"], rows, "lrrrrrr")
