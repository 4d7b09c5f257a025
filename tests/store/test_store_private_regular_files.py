"""The store narrows its SQLite files to 0600 (adapters/store/engine.py), but only regular files:
a database path (or its -wal) that names a pipe, a device or a link to one is left as it is (on
main a FIFO at the database's -wal path, a 0644 node owned by the user, was narrowed to 0600; the
same check followed a link to a device such as /dev/null)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tokend.adapters.store.engine import make_sqlite_files_private


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_pipe_beside_the_database_keeps_its_mode(tmp_path: Path) -> None:
    database = tmp_path / "tokend.sqlite3"
    pipe = tmp_path / "elsewhere.fifo"
    os.mkfifo(pipe, 0o644)
    os.chmod(pipe, 0o644)
    (tmp_path / "tokend.sqlite3-wal").symlink_to(pipe)
    make_sqlite_files_private(database)
    assert _mode(database) == 0o600  # the database itself: created private
    assert _mode(pipe) == 0o644  # main: 0o600


def test_a_database_that_is_a_pipe_keeps_its_mode(tmp_path: Path) -> None:
    database = tmp_path / "tokend.sqlite3"
    os.mkfifo(database, 0o644)
    os.chmod(database, 0o644)
    make_sqlite_files_private(database)
    assert _mode(database) == 0o644  # main: 0o600


def test_a_regular_database_reached_through_a_link_is_still_narrowed(tmp_path: Path) -> None:
    real = tmp_path / "disk" / "tokend.sqlite3"
    real.parent.mkdir()
    real.write_bytes(b"")
    os.chmod(real, 0o644)
    link = tmp_path / "tokend.sqlite3"
    link.symlink_to(real)
    make_sqlite_files_private(link)
    assert _mode(real) == 0o600
