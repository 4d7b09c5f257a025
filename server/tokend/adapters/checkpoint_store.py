"""The checkpoint store: file states by content hash, and the logs that say when each was seen.

A folder in the user data dir (`checkpoints/`, 0700, its files 0600): each saved state's bytes,
zlib-compressed, are stored once by hash (same bytes, same name: deduplicated across turns,
sessions and workspaces), packed in the index or, when big, a loose file `blobs/ab/<sha256>`
(adapters.checkpoint_blobs); `index.sqlite3` holds

- `baseline`: (workspace, path) -> the hash of the file as last seen, its size and mtime;
- `changes`: the workspace's log of file changes (core.checkpoints.turns.FileChange);
- `marks`: when each session message was appended (core.checkpoints.turns.TurnMark), read and
  written through the store's `marks` (adapters.checkpoint_marks);
- `blobs`: each saved state's size raw and stored (and its packed bytes);
- `restores`: the journal of restores (which checkpoint, the planned steps), written before a
  restore's first write and closed after its last, so a restart finds one killed midway; read
  and written through the store's `journal` (adapters.checkpoint_journal).

`mode` (baseline) and `before_mode` (changes) are a state's permission bits; rows written before
they were recorded hold NULL (the restore then keeps the file's mode, or the umask's default).

Safe from several threads: one connection behind a lock. `prune` drops what is older than the
retention and the blobs nothing refers to any more.
"""

from __future__ import annotations

import sqlite3
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tokend.adapters import checkpoint_blobs
from tokend.adapters.checkpoint_journal import CheckpointJournal
from tokend.adapters.checkpoint_marks import CheckpointMarks
from tokend.adapters.checkpoint_schema import create_tables
from tokend.adapters.store.engine import enable_wal, make_sqlite_files_private
from tokend.adapters.store.url import default_data_dir, make_folder_private
from tokend.core.checkpoints.turns import FileChange, Origin
from tokend.core.workspace.files import Seen, sha256_bytes

_IN_BATCH = 500  # paths per SELECT ... IN (...)


def default_checkpoint_dir() -> Path:
    return make_folder_private(default_data_dir()) / "checkpoints"


@dataclass(frozen=True, slots=True)
class StoreFigures:
    blobs: int
    raw_bytes: int  # the saved states' sizes
    stored_bytes: int  # what they take in the blob folder
    changes: int
    marks: int


class CheckpointStore:
    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or default_checkpoint_dir()
        make_folder_private(self.folder)
        make_folder_private(self.folder / "blobs")
        self._lock = threading.RLock()
        self._pending = checkpoint_blobs.Pending()
        make_sqlite_files_private(self.folder / "index.sqlite3")
        self._db = sqlite3.connect(
            str(self.folder / "index.sqlite3"), check_same_thread=False, isolation_level=None
        )
        enable_wal(self._db.execute)
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._prepare()
        checkpoint_blobs.sweep_tmp(self.folder)
        self.journal = CheckpointJournal(self._tx, self._rows)
        self.marks = CheckpointMarks(self._tx, self._rows)

    def _prepare(self) -> None:
        """Make the tables and add the columns an older index lacks, in one write transaction
        taken at once (BEGIN IMMEDIATE): daemons started together wait for each other here
        instead of each seeing a column missing and adding it twice."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            create_tables(self._db)
            checkpoint_blobs.upgrade(self._db, self.folder)
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """A write transaction; it writes the packed states waiting in memory first."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                flushed = self._pending.write(self._db)
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            self._pending.written(flushed)

    def _rows(self, sql: str, args: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, tuple(args)).fetchall()

    # -- blobs ------------------------------------------------------------------------------

    def put_blob(self, data: bytes, at: float, *, fast: bool = False) -> tuple[str, int]:
        """Save `data`; its hash and the compressed bytes this call added (0 when known).
        `fast`: zlib level 1 instead of 6 (about 3x less CPU, somewhat bigger), for a first
        walk that saves a whole tree. A packed state is written with the next write
        transaction (checkpoint_blobs.Pending), a loose one's row at once."""
        sha = sha256_bytes(data)
        if self.has_blob(sha):
            return sha, 0
        compressed = zlib.compress(data, 1 if fast else 6)
        packed = compressed if len(compressed) <= checkpoint_blobs.PACKED_MAX_BYTES else None
        if packed is None:
            checkpoint_blobs.write_loose(self.folder, sha, compressed)
        with self._lock:
            full = self._pending.add((sha, len(data), len(compressed), at, packed))
            if full or packed is None:  # a loose file gets its row at once
                self.flush()
        return sha, len(compressed)

    def has_blob(self, sha: str) -> bool:
        with self._lock:
            return sha in self._pending.rows or bool(
                self._rows("SELECT 1 FROM blobs WHERE sha = ?", (sha,))
            )

    def blob(self, sha: str) -> bytes | None:
        """The saved bytes of `sha`; None when they are not saved (or not whole)."""
        with self._lock:
            waiting = self._pending.rows.get(sha)
            found = (
                self._rows("SELECT data FROM blobs WHERE sha = ?", (sha,)) if not waiting else []
            )
        packed = waiting[4] if waiting else (found[0][0] if found else None)
        return checkpoint_blobs.read(self.folder, sha, packed)

    # -- baseline ---------------------------------------------------------------------------

    def baseline(self, workspace: str, paths: Sequence[str] | None = None) -> dict[str, Seen]:
        """The workspace's files as last seen (only `paths`, when given: a batch of a tree of
        78,000 files does not load them all)."""
        sql = "SELECT path, sha, size, mtime_ns, kept, mode FROM baseline WHERE workspace = ?"
        if paths is None:
            rows = self._rows(sql, (workspace,))
        else:
            rows = []
            for start in range(0, len(paths), _IN_BATCH):
                chunk = paths[start : start + _IN_BATCH]
                marks = ",".join("?" * len(chunk))
                rows += self._rows(f"{sql} AND path IN ({marks})", (workspace, *chunk))
        return {p: Seen(s, z, m, bool(k), mode) for p, s, z, m, k, mode in rows}

    def baseline_under(self, workspace: str, folder: str) -> list[str]:
        """The paths the baseline has under `folder` (at any depth), in order."""
        prefix = folder + "/"
        rows = self._rows(
            "SELECT path FROM baseline WHERE workspace = ? AND path >= ? AND path < ?"
            " ORDER BY path",
            (workspace, prefix, prefix + "\U0010ffff"),
        )
        return [p for (p,) in rows]

    def baseline_paths(self, workspace: str) -> list[str]:
        return [
            p for (p,) in self._rows("SELECT path FROM baseline WHERE workspace = ?", (workspace,))
        ]

    def set_baseline(self, workspace: str, seen: Mapping[str, Seen | None]) -> None:
        """Record each path's state (None: the file is gone)."""
        with self._tx() as db:
            for path, item in seen.items():
                if item is None:
                    db.execute(
                        "DELETE FROM baseline WHERE workspace = ? AND path = ?", (workspace, path)
                    )
                else:
                    db.execute(
                        "INSERT OR REPLACE INTO baseline (workspace, path, sha, size, mtime_ns,"
                        " kept, mode) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (
                            workspace,
                            path,
                            item.sha,
                            item.size,
                            item.mtime_ns,
                            int(item.kept),
                            item.mode,
                        ),
                    )

    # -- logs -------------------------------------------------------------------------------

    def add_changes(self, workspace: str, changes: Iterable[FileChange]) -> list[FileChange]:
        """Append to the workspace's log; the changes with the sequence numbers they got."""
        out = []
        with self._tx() as db:
            for c in changes:
                cur = db.execute(
                    "INSERT INTO changes (workspace, path, before, after, at, origin, moved_from,"
                    " moved_to, after_kept, note, before_mode)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        workspace,
                        c.path,
                        c.before,
                        c.after,
                        c.at,
                        c.origin,
                        c.moved_from,
                        c.moved_to,
                        int(c.after_kept),
                        c.note,
                        c.before_mode,
                    ),
                )
                out.append(_with_seq(c, cur.lastrowid or 0))
        return out

    def set_moved(self, seq: int, moved_from: str | None, moved_to: str | None) -> None:
        """Name a logged change's move (its other end came in a later batch)."""
        with self._tx() as db:
            db.execute(
                "UPDATE changes SET moved_from = ?, moved_to = ? WHERE seq = ?",
                (moved_from, moved_to, seq),
            )

    def changes(self, workspace: str, since: float = 0.0) -> list[FileChange]:
        rows = self._rows(
            "SELECT seq, path, before, after, at, origin, moved_from, moved_to, after_kept, note,"
            " before_mode FROM changes WHERE workspace = ? AND at >= ? ORDER BY seq",
            (workspace, since),
        )
        return [
            FileChange(s, p, b, a, at, _origin(o), mf, mt, bool(k), n, bm)
            for s, p, b, a, at, o, mf, mt, k, n, bm in rows
        ]

    # -- upkeep -----------------------------------------------------------------------------

    def prune(self, before: float) -> int:
        """Drop changes and marks seen before `before`, then every blob neither a remaining
        change nor a baseline refers to. The number of blobs removed."""
        with self._tx() as db:
            db.execute("DELETE FROM changes WHERE at < ?", (before,))
            db.execute("DELETE FROM marks WHERE at < ?", (before,))
            db.execute(
                "DELETE FROM restores WHERE state != 'running' AND started_at < ?", (before,)
            )
            dead = [
                sha
                for (sha,) in db.execute(
                    "SELECT sha FROM blobs WHERE at < ? AND sha NOT IN (SELECT sha FROM baseline)"
                    " AND sha NOT IN (SELECT before FROM changes WHERE before IS NOT NULL)"
                    " AND sha NOT IN (SELECT after FROM changes WHERE after IS NOT NULL)",
                    (before,),
                )
            ]
            db.executemany("DELETE FROM blobs WHERE sha = ?", [(s,) for s in dead])
        for sha in dead:
            checkpoint_blobs.blob_path(self.folder, sha).unlink(missing_ok=True)
        return len(dead)

    def flush(self) -> None:
        """Write the packed states waiting in memory."""
        with self._tx():
            pass

    def figures(self) -> StoreFigures:
        self.flush()
        ((blobs, raw, stored),) = self._rows(
            "SELECT count(*), coalesce(sum(size), 0), coalesce(sum(stored), 0) FROM blobs"
        )
        ((changes,),) = self._rows("SELECT count(*) FROM changes")
        ((marks,),) = self._rows("SELECT count(*) FROM marks")
        return StoreFigures(blobs, raw, stored, changes, marks)

    def close(self) -> None:
        with self._lock:
            self.flush()
            self._db.close()


def _with_seq(change: FileChange, seq: int) -> FileChange:
    return replace(change, seq=seq)


def _origin(value: str) -> Origin:
    if value in ("watch", "editor", "restore", "unwatched"):
        return value  # type: ignore[return-value]
    return "watch"
