"""A checkpoint index written by a tokend from before modes were recorded opens as it is: its
rows read back with no mode (a restore then keeps the file's mode), new rows carry theirs.
The old index is made with the old schema's own SQL, on a real SQLite file."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

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


def _open_at_once(folder: Path, barrier: Any, errors: Any) -> None:
    barrier.wait()
    try:
        CheckpointStore(folder).close()
    except Exception as exc:  # reported to the parent, which asserts there were none
        errors.put(repr(exc))


OPENERS = 10  # processes opening one index at once
ROUNDS = 16  # half on an index from before modes, half on a file not yet an index


def test_daemons_opening_one_index_at_once_all_open_it(tmp_path: Path) -> None:
    """Several tokend processes started together (one per editor, or four sharing PostgreSQL)
    each open the same checkpoint index: none fails. Two races were found by CI: two adding the
    same missing column ("duplicate column name: before_mode"), and two switching a new file to
    WAL ("database is locked": SQLite answers that switch at once, without its busy handler).
    Processes are forked past a barrier so the opens overlap."""
    ctx = multiprocessing.get_context("fork")
    for round_ in range(ROUNDS):
        folder = tmp_path / f"checkpoints-{round_}"
        folder.mkdir()
        old = round_ % 2 == 0
        if old:
            db = sqlite3.connect(folder / "index.sqlite3")
            db.executescript(OLD_SCHEMA)
            db.close()
        barrier = ctx.Barrier(OPENERS)
        errors = ctx.Queue()
        procs = [
            ctx.Process(target=_open_at_once, args=(folder, barrier, errors))
            for _ in range(OPENERS)
        ]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(60)
        failures = []
        while not errors.empty():
            failures.append(errors.get())
        assert failures == [], (round_, failures)
        assert [proc.exitcode for proc in procs] == [0] * OPENERS
        store = CheckpointStore(folder)
        try:
            assert [c.before_mode for c in store.changes("file:///ws")] == ([None] if old else [])
        finally:
            store.close()
