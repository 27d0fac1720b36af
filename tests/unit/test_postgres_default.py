"""Issue 22 item 17: the managed database is the newest PostgreSQL installed (the npm registry's 18 that setup.sh
puts into the tool cache, over Debian's 15); --postgres-bin still chooses any other."""

from __future__ import annotations

import pytest

from pgarena.db import postgres
from pgarena.db.postgres import PostgresError, find_bin_dir, server_major


def _server(folder, version: str):
    folder.mkdir(parents=True)
    for tool in ("initdb", "pg_ctl"):
        (folder / tool).write_text("#!/bin/sh\nexit 0\n")
        (folder / tool).chmod(0o755)
    (folder / "postgres").write_text(f"#!/bin/sh\necho 'postgres (PostgreSQL) {version}'\n")
    (folder / "postgres").chmod(0o755)
    return folder


@pytest.fixture
def servers(tmp_path, monkeypatch):
    debian = _server(tmp_path / "usr/lib/postgresql/15/bin", "15.18 (Debian 15.18-0+deb12u1)")
    npm = _server(tmp_path / "cache/postgres-18.4.0/bin", "18.4")
    monkeypatch.setattr(postgres.shutil, "which", lambda name: None)
    monkeypatch.setattr(postgres.glob, "glob", lambda pattern: [str(debian)])
    monkeypatch.setattr(postgres, "registry_postgres_dirs", lambda: [tmp_path / "absent", npm])
    return debian, npm


def test_the_newest_installed_postgresql_is_the_managed_default(servers):
    debian, npm = servers
    assert (server_major(debian), server_major(npm)) == (15, 18)
    assert find_bin_dir() == npm


def test_postgres_bin_still_chooses_another_version(servers, tmp_path):
    debian, _ = servers
    assert find_bin_dir(debian) == debian
    with pytest.raises(PostgresError, match="--postgres-bin .*: no initdb, pg_ctl, postgres there"):
        find_bin_dir(tmp_path / "nothing")


def test_without_the_registrys_build_debians_is_used(servers, monkeypatch, tmp_path):
    debian, _ = servers
    monkeypatch.setattr(postgres, "registry_postgres_dirs", lambda: [tmp_path / "absent"])
    assert find_bin_dir() == debian
