"""The checkpoint store's index tables (adapters.checkpoint_store): their schema, the columns
added to them since the first release, and `IndexTables`, the base of the store's parts that
own some of them (the journal, the marks)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS baseline (
  workspace TEXT NOT NULL, path TEXT NOT NULL, sha TEXT NOT NULL, size INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL, kept INTEGER NOT NULL, PRIMARY KEY (workspace, path));
CREATE TABLE IF NOT EXISTS changes (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, workspace TEXT NOT NULL, path TEXT NOT NULL,
  before TEXT, after TEXT, at REAL NOT NULL, origin TEXT NOT NULL, moved_from TEXT,
  moved_to TEXT, after_kept INTEGER NOT NULL, note TEXT);
CREATE INDEX IF NOT EXISTS changes_by_workspace ON changes (workspace, at);
CREATE TABLE IF NOT EXISTS marks (
  session_id TEXT NOT NULL, message_id TEXT NOT NULL, workspace TEXT NOT NULL, at REAL NOT NULL,
  starts_turn INTEGER NOT NULL, open_calls INTEGER NOT NULL,
  PRIMARY KEY (session_id, message_id));
CREATE TABLE IF NOT EXISTS restores (
  id INTEGER PRIMARY KEY AUTOINCREMENT, workspace TEXT NOT NULL, session_id TEXT NOT NULL,
  to_message_id TEXT NOT NULL, started_at REAL NOT NULL, plan TEXT NOT NULL,
  conversation TEXT, state TEXT NOT NULL, outcome TEXT, pid INTEGER);
CREATE TABLE IF NOT EXISTS blobs (
  sha TEXT PRIMARY KEY, size INTEGER NOT NULL, stored INTEGER NOT NULL, at REAL NOT NULL);
"""


def create_tables(db: sqlite3.Connection) -> None:
    """Make the tables an index lacks and add the columns an older one lacks (inside the
    caller's write transaction)."""
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)
    _add_columns(db)


_ADDED_COLUMNS = (("baseline", "mode"), ("changes", "before_mode"))


def _add_columns(db: sqlite3.Connection) -> None:
    """Columns added since the first release, NULL in older rows (an index made before them is
    read as it is)."""
    for table, column in _ADDED_COLUMNS:
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if column not in have:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} INTEGER")


class IndexTables:
    """A part of the index the store hands its write transactions (`tx`) and reads (`rows`),
    so its tables share the store's one connection and lock."""

    def __init__(
        self,
        tx: Callable[[], AbstractContextManager[sqlite3.Connection]],
        rows: Callable[[str, Iterable[Any]], list[tuple[Any, ...]]],
    ) -> None:
        self._tx, self._rows = tx, rows
