"""The schema comes from the Alembic migrations, applied by SqlStore.open on a real SQLite file."""

from __future__ import annotations

import io
import multiprocessing
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from tokend.adapters.store import SqlStore
from tokend.adapters.store.engine import HEAD_REVISIONS, create_store_engine, upgrade_to_head
from tokend.adapters.store.migrate import MIGRATIONS_DIR, alembic_config, head_revisions
from tokend.adapters.store.models import Base
from tokend.adapters.store.url import sqlite_url
from tokend.core.errors import StoreError

from .conftest import message, session_info

TABLES = {
    "sessions",
    "messages",
    "parts",
    "token_cache",
    "calibration",
    "tool_outputs",
    "blob_chunks",
    "alembic_version",
}


def test_open_creates_the_schema_from_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)  # no alembic.ini anywhere near: the config is built in code
    path = tmp_path / "new" / "..." / "tokend.sqlite3"
    path.parent.mkdir(parents=True)
    with SqlStore.open(sqlite_url(path)) as store:
        assert set(inspect(store.engine).get_table_names()) == TABLES
    versions = sqlite3.connect(path).execute("SELECT version_num FROM alembic_version").fetchall()
    assert {v for (v,) in versions} == head_revisions()


def test_migration_scripts_ship_inside_the_package():
    import tokend

    package_dir = Path(tokend.__file__).resolve().parent
    assert MIGRATIONS_DIR.is_relative_to(package_dir)
    assert (MIGRATIONS_DIR / "env.py").is_file()


def test_reopening_runs_no_migration_and_keeps_the_data(db_url: str):
    engine = create_store_engine(db_url)
    try:
        assert upgrade_to_head(engine) is True
        assert upgrade_to_head(engine) is False  # at head: only the revision was read
    finally:
        engine.dispose()
    with SqlStore.open(db_url) as store:
        store.create_session(session_info("s1"))
    with SqlStore.open(db_url) as store:
        assert store.get_session("s1") is not None


def test_models_describe_exactly_what_the_migrations_create(store: SqlStore):
    with store.engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert differences == []


def test_sqlite_runs_in_wal_mode_with_foreign_keys_and_a_busy_timeout(tmp_path: Path):
    db_url = sqlite_url(tmp_path / "tokend.sqlite3")
    store = SqlStore.open(db_url)
    path = db_url.removeprefix("sqlite:///")
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone() == ("wal",)
    with store.engine.connect() as connection:
        pragma = connection.exec_driver_sql
        assert pragma("PRAGMA foreign_keys").scalar() == 1
        assert pragma("PRAGMA busy_timeout").scalar() == 5000
        assert pragma("PRAGMA synchronous").scalar() == 1  # NORMAL
    store.close()


def test_a_database_from_a_newer_tokend_is_refused_clearly(db_url: str):
    SqlStore.open(db_url).close()
    engine = create_store_engine(db_url)
    with engine.begin() as connection:
        connection.exec_driver_sql("UPDATE alembic_version SET version_num = '9999_future'")
    engine.dispose()
    with pytest.raises(StoreError, match="newer version"):
        SqlStore.open(db_url)


def test_an_unopenable_database_fails_with_a_store_error_naming_it(tmp_path: Path):
    missing_folder = tmp_path / "no" / "such" / "folder" / "tokend.sqlite3"
    with pytest.raises(StoreError, match="cannot open the database sqlite:///"):
        SqlStore.open(sqlite_url(missing_folder))
    with pytest.raises(StoreError, match=r"\*\*\*"):  # the password is not shown
        SqlStore.open("nosuchdialect://user:secret@host/db")


def test_the_migrations_render_for_postgresql():
    config = alembic_config(url="postgresql://tokend@localhost/tokend")
    config.output_buffer = io.StringIO()
    command.upgrade(config, "head", sql=True)  # offline: SQL text only, no server needed
    sql = config.output_buffer.getvalue()
    assert "CREATE TABLE sessions" in sql and "CREATE TABLE token_cache" in sql
    assert "TIMESTAMP WITH TIME ZONE" in sql
    assert "PRAGMA" not in sql


def _open_and_append(url: str, barrier, session_id: str) -> None:  # runs in a child process
    barrier.wait()
    with SqlStore.open(url) as store:
        store.create_session(session_info(session_id))
        store.append_message(message(session_id))


def test_processes_opening_one_new_file_at_once_all_succeed(db_url: str):
    context = multiprocessing.get_context("spawn")
    count = 4
    barrier = context.Barrier(count)
    workers = [
        context.Process(target=_open_and_append, args=(db_url, barrier, f"s{i}"))
        for i in range(count)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [w.exitcode for w in workers] == [0] * count
    with SqlStore.open(db_url) as store:
        assert sorted(s.id for s in store.listings.listed()) == [f"s{i}" for i in range(count)]
        assert all(len(store.messages.load_messages(f"s{i}")) == 1 for i in range(count))


def test_sessions_compacted_before_0002_keep_their_live_context(db_url: str):
    """Before 0002 a window started at the newest summary; the upgrade marks what came before
    it as covered by the first summary after it, so the live context does not change."""
    engine = create_store_engine(db_url)
    try:
        with engine.begin() as connection:
            config = alembic_config(connection)
            command.upgrade(config, "0001")
    finally:
        engine.dispose()
    engine = create_store_engine(db_url)
    try:
        from sqlalchemy import text

        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO sessions (id, model, extra, created_at, updated_at) "
                    "VALUES ('s1', 'gpt-4o', '{}', '2026-01-01 00:00:00', '2026-01-01 00:00:00')"
                )
            )
            for seq, summary in enumerate([0, 0, 1, 0, 1, 0, 0], start=1):
                connection.execute(
                    text(
                        "INSERT INTO messages (id, session_id, seq, role, summary, created_at) "
                        "VALUES (:id, 's1', :seq, 'user', :summary, :at)"
                    ),
                    {
                        "id": f"m{seq}",
                        "seq": seq,
                        "summary": bool(summary),
                        "at": f"2026-01-01 00:00:0{seq}",
                    },
                )
    finally:
        engine.dispose()
    with SqlStore.open(db_url) as store:
        assert [m.id for m in store.messages.load_messages("s1")] == ["m5", "m6", "m7"]
        every = {m.id: m for m in store.messages.load_all_messages("s1")}
        assert [every[f"m{i}"].compacted_by for i in range(1, 8)] == [
            "m3",
            "m3",
            "m5",
            "m5",
            None,
            None,
            None,
        ]


def test_the_head_revision_read_without_alembic_is_alembics():
    assert HEAD_REVISIONS == head_revisions()


_OPEN_TWICE = """
import sys
from tokend.adapters.store import SqlStore
SqlStore.open(sys.argv[1]).close()
print(sorted(m for m in ("alembic", "mako", "pygments") if m in sys.modules))
"""


def _modules_after_open(url: str) -> str:
    """The heavy modules a fresh interpreter holds after SqlStore.open(url)."""
    done = subprocess.run(
        [sys.executable, "-c", _OPEN_TWICE, url], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_database_at_head_is_opened_without_alembic(tmp_path: Path):
    """Issue 22: Alembic, Mako and Pygments were about 9 MiB of every daemon, loaded at every
    start to read one revision. A new database is migrated with Alembic, but not Pygments
    (Mako's HTML error pages are never shown)."""
    url = sqlite_url(tmp_path / "tokend.sqlite3")
    assert _modules_after_open(url) == "['alembic', 'mako']"  # main: with 'pygments'
    versions = sqlite3.connect(tmp_path / "tokend.sqlite3").execute(
        "SELECT version_num FROM alembic_version"
    )
    assert {v for (v,) in versions} == head_revisions()
    assert _modules_after_open(url) == "[]"  # main: ['alembic', 'mako', 'pygments']
