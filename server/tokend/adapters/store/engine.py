"""The store's Engine (with SQLite tuned for a daemon and its editors) and its schema upgrades.

All SQLite-specific SQL lives in `_install_sqlite_hooks`; everything else is portable.
The schema's revision is read with plain SQL and compared with the newest migration's
(`HEAD_REVISIONS`); Alembic is imported only when a migration must run (adapters.store.migrate,
which builds its Config in code, no alembic.ini file, so it works from an installed package).
A daemon opening a database at head never loads it (issue 22: Alembic with Mako and Pygments,
about 9 MiB of every daemon).
"""

from __future__ import annotations

import os
import random
import sqlite3
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect, make_url, text
from sqlalchemy.exc import SQLAlchemyError

from tokend.adapters.store.codec import dumps_json, loads_json
from tokend.core.errors import StoreError

BUSY_TIMEOUT_MS = 5_000
WRITE_OPTION = "tokend_write"  # execution option: this connection's transactions will write


def create_store_engine(url: str) -> Engine:
    """An Engine for `url` (any SQLAlchemy URL); SQLite files get WAL, foreign keys, a 5 s busy
    timeout and synchronous=NORMAL on every connection, and are private (mode 0600, with their
    -wal and -shm files). The schema is not touched."""
    parsed = make_url(url)
    if parsed.drivername == "postgresql":  # SQLAlchemy's default driver would be psycopg2
        parsed = parsed.set(drivername="postgresql+psycopg")
    engine = create_engine(parsed, json_serializer=dumps_json, json_deserializer=loads_json)
    if engine.dialect.name == "sqlite":
        if engine.url.database and not engine.url.query.get("uri"):
            make_sqlite_files_private(Path(engine.url.database))
        _install_sqlite_hooks(engine)
    return engine


def make_sqlite_files_private(database: Path) -> None:
    """Mode 0600 for the SQLite file at `database` and its -wal/-shm files, whatever the umask.

    SQLite creates a database with 0644 less the umask, and its -wal and -shm files with the
    database's mode; so the database is created here first, 0600, and files an older tokend
    left readable by others are narrowed. Folders are left alone (`url.default_database_path`
    makes tokend's own 0700). An in-memory database, or a missing folder (SQLite will say so),
    is left as it is."""
    if str(database) in ("", ":memory:"):
        return
    try:
        os.close(os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    except OSError:
        return
    for path in (database, Path(f"{database}-wal"), Path(f"{database}-shm")):
        try:
            info = os.stat(path)
        except FileNotFoundError:
            continue
        if (  # a regular file only: never a device or a pipe a path (or its link) names
            stat.S_ISREG(info.st_mode)
            and info.st_uid == os.getuid()
            and stat.S_IMODE(info.st_mode) & 0o077
        ):
            os.chmod(path, 0o600)


WAL_WAIT_S = 10.0  # how long opening a SQLite file waits for the switch to WAL


def enable_wal(execute: Callable[[str], Any]) -> None:
    """`PRAGMA journal_mode = WAL`, tried again while another connection holds the file's lock.
    The switch takes an exclusive lock, and SQLite answers "database is locked" at once, without
    its busy handler, when processes opening one file together race for it (daemons started at
    once; tests/checkpoints/test_checkpoints_index_migration.py saw it)."""
    deadline = time.monotonic() + WAL_WAIT_S
    while True:
        try:
            execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() >= deadline:
                raise
            time.sleep(0.005 + random.random() * 0.02)  # apart, so the racers do not collide again


def writer(engine: Engine) -> Engine:
    """The same Engine (and pool) marked so that its transactions are write transactions."""
    return engine.execution_options(**{WRITE_OPTION: True})


def _install_sqlite_hooks(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # The driver's own implicit BEGIN is off: `_on_begin` below emits real BEGINs, so reads
        # see one snapshot and DDL is transactional.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")  # first: the next may wait
            enable_wal(cursor.execute)
            cursor.execute("PRAGMA synchronous = NORMAL")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        # A writer takes the write lock up front (waiting up to busy_timeout for it); a deferred
        # transaction that reads first could not wait and fail at once with "database is locked".
        writes = connection.get_execution_options().get(WRITE_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if writes else "BEGIN")


# The newest migration's revision (migrations/versions/): a database at it needs no Alembic.
# tests/store/test_store_migrations.py checks it against Alembic's own reading of the scripts.
HEAD_REVISIONS = frozenset({"0006"})
VERSION_TABLE = "alembic_version"  # Alembic's default, where it keeps the revision


def current_revisions(connection: Connection) -> frozenset[str]:
    """The revisions the database is at (empty for a new database), read with plain SQL."""
    if not inspect(connection).has_table(VERSION_TABLE):
        return frozenset()
    rows = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}"))
    return frozenset(str(version) for (version,) in rows)


def upgrade_to_head(engine: Engine) -> bool:
    """Bring the schema to the newest revision; True when migrations ran.

    An up-to-date database costs one read, and no Alembic. Otherwise migrations run in one
    write transaction (adapters.store.migrate.upgrade): on SQLite that holds the write lock, on
    PostgreSQL an advisory lock, so a second process opening the same new database waits, then
    finds the schema at head and does nothing.
    """
    with engine.connect() as connection:
        if current_revisions(connection) == HEAD_REVISIONS:
            return False
    from tokend.adapters.store.migrate import upgrade  # Alembic: only when the schema must change

    return upgrade(writer(engine))


def open_store_engine(resolved: str) -> Engine:
    """The engine of the database at the URL `resolved`, its schema migrated to the newest
    first when needed; StoreError (password hidden) when it cannot be used."""
    try:
        engine = create_store_engine(resolved)
    except (SQLAlchemyError, ImportError) as exc:
        raise StoreError(f"cannot use database URL {_shown(resolved)}: {exc}") from exc
    try:
        upgrade_to_head(engine)
    except SQLAlchemyError as exc:
        engine.dispose()
        raise StoreError(
            f"cannot open the database {_shown(resolved)}: {driver_reason(exc)}"
        ) from exc
    except BaseException:
        engine.dispose()
        raise
    return engine


def _shown(url: str) -> str:
    """The URL for a message, password hidden."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except SQLAlchemyError:
        return "(unparsable URL)"


def driver_reason(exc: SQLAlchemyError) -> str:
    """The driver's own words (e.g. "UNIQUE constraint failed: parts.id"), without the SQL
    statement and its parameters, which may hold whole tool outputs."""
    return str(getattr(exc, "orig", None) or exc)
