"""tests/pg.py starts PostgreSQL wherever the checkout lies: as root the server runs as
`nobody`, who cannot enter a 0700 folder (root's home, a `mktemp -d`) holding the checkout and
its .venv. The server's files are put in such a folder here, as a newcomer's checkout has them,
and the suite's PostgresServer must still start and answer a query."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import psycopg
import pytest

from tests.pg import PostgresServer


def test_postgres_starts_from_a_folder_nobody_else_may_enter(monkeypatch: pytest.MonkeyPatch):
    import pgserver  # type: ignore[import-untyped]

    package = Path(pgserver.__file__).parent
    private = Path(tempfile.mkdtemp(prefix="tokend-private-"))  # 0700, as mktemp -d makes it
    try:
        assert private.stat().st_mode & 0o777 == 0o700
        shutil.copytree(package / "pginstall", private / "pgserver" / "pginstall", symlinks=True)
        libs = package.parent / "pgserver.libs"
        if libs.is_dir():
            shutil.copytree(libs, private / "pgserver.libs", symlinks=True)
        monkeypatch.setenv("TOKEND_TEST_PG_BINDIR", str(private / "pgserver" / "pginstall" / "bin"))
        server = PostgresServer().start()
        try:
            with psycopg.connect(server.conninfo("postgres")) as conn:
                assert conn.execute("select 1 + 1").fetchone() == (2,)
        finally:
            server.stop()
    finally:
        shutil.rmtree(private, ignore_errors=True)
