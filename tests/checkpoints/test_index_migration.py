"""A checkpoint index written by a tokend from before modes were recorded opens as it is: its
rows read back with no mode (a restore then keeps the file's mode), new rows carry theirs.
The old index is made with the old schema's own SQL, on a real SQLite file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tokend.adapters.checkpoint_store import CheckpointStore, Seen
from tokend.core.checkpoints.turns import FileChange

OLD_SCHEMA = """
CREATE TABLE baseline (
  workspace TEXT NOT NULL, path TEXT NOT NULL, sha TEXT NOT NULL, size INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL, kept INTEGER NOT NULL, PRIMARY KEY (workspace, path));
CREATE TABLE changes (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, workspace TEXT NOT NULL, path TEXT NOT NULL,
  before TEXT, after TEXT, at REAL NOT NULL, origin TEXT NOT NULL, moved_from TEXT,
  moved_to TEXT, after_kept INTEGER NOT NULL, note TEXT);
INSERT INTO baseline VALUES ('file:///ws', 'a.txt', 'aa', 3, 1, 1);
INSERT INTO changes (workspace, path, before, after, at, origin, after_kept)
  VALUES ('file:///ws', 'a.txt', 'aa', NULL, 5.0, 'watch', 1);
"""


def test_an_index_from_before_modes_opens_and_reads_its_rows(tmp_path: Path) -> None:
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    db = sqlite3.connect(folder / "index.sqlite3")
    db.executescript(OLD_SCHEMA)
    db.close()

    store = CheckpointStore(folder)
    try:
        assert store.baseline("file:///ws") == {"a.txt": Seen("aa", 3, 1, True, None)}
        (old,) = store.changes("file:///ws")
        assert (old.path, old.before, old.before_mode) == ("a.txt", "aa", None)
        store.set_baseline("file:///ws", {"b.txt": Seen("bb", 2, 1, True, 0o600)})
        store.add_changes(
            "file:///ws", [FileChange(0, "b.txt", "bb", None, 6.0, before_mode=0o600)]
        )
        assert store.baseline("file:///ws", ["b.txt"])["b.txt"].mode == 0o600
        assert [c.before_mode for c in store.changes("file:///ws")] == [None, 0o600]
    finally:
        store.close()
    store = CheckpointStore(folder)  # opened again: the columns are there, nothing added twice
    store.close()
