"""Where the checkpoint store keeps a saved state's bytes: packed in its index, or a loose file.

Like git's packed and loose objects, but the pack is the store's own SQLite file: a state whose
compressed bytes fit in PACKED_MAX_BYTES (almost every source file) is a column of its `blobs`
row, written in the same transaction as the row, so a kill -9 leaves it whole or absent, never
torn, and a tree of 100,000 small files is 100,000 rows, not 100,000 files of a 4 KiB block
each (and as many directory entries). SQLite reads a blob of this size from its own file faster
than from a file of its own ("Internal Versus External BLOBs", sqlite.org). A bigger state stays
a loose file, `blobs/ab/<sha256>`, written under `blobs/tmp/`, flushed to disk and renamed into
place; its row comes after it, so a row never names a file that is not there. A temporary file
a killed writer left behind is removed at a later open, once it is an hour old.

A packed state waits in memory (`Pending`) until the store's next write transaction, which
writes the waiting states first: a first walk of 100,000 files commits a thousand states at a
time, not one transaction (and three rewritten pages of the index) each, and nothing that
refers to a state (a baseline, a change) is ever committed before its bytes. A kill -9 loses
only states nothing refers to yet.

Stores made before packing keep their loose files: a row without packed bytes is read from its
file. Everything here is private whatever the umask: folders 0700, files 0600; the first open of
such an older store narrows the loose files it left readable, once, as it adds the column.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
import time
import zlib
from pathlib import Path

from tokend.adapters.store.url import make_folder_private

PACKED_MAX_BYTES = 64 * 1024  # compressed bytes up to this go into the index
PENDING_MAX = 1000  # packed states waiting for the next write transaction, at most
PENDING_MAX_BYTES = 8 << 20  # and their compressed bytes, at most
STALE_TMP_SECONDS = 3600.0  # a temporary file this old is no writer's any more


Row = tuple[str, int, int, float, bytes | None]  # sha, size, stored, at, packed bytes


class Pending:
    """Packed states not written yet, by sha (the store's lock guards it)."""

    def __init__(self) -> None:
        self.rows: dict[str, Row] = {}
        self._bytes = 0

    def add(self, row: Row) -> bool:
        """Keep `row` for the next write; whether enough wait that it should be now."""
        self.rows[row[0]] = row
        self._bytes += row[2]
        return len(self.rows) >= PENDING_MAX or self._bytes >= PENDING_MAX_BYTES

    def write(self, db: sqlite3.Connection) -> list[str]:
        """Insert the waiting rows in `db`'s open transaction; their shas (for `written`)."""
        db.executemany(
            "INSERT OR IGNORE INTO blobs (sha, size, stored, at, data) VALUES (?, ?, ?, ?, ?)",
            self.rows.values(),
        )
        return list(self.rows)

    def written(self, shas: list[str]) -> None:
        """The transaction that wrote `shas` is committed: they wait no more."""
        for sha in shas:
            row = self.rows.pop(sha, None)
            self._bytes -= row[2] if row else 0


def blob_path(folder: Path, sha: str) -> Path:
    """The loose file of `sha` in the store at `folder` (it may not exist)."""
    return folder / "blobs" / sha[:2] / sha


def write_loose(folder: Path, sha: str, packed: bytes) -> None:
    """Write `packed` as the loose file of `sha`: 0600, on disk before it takes its name."""
    path = blob_path(folder, sha)
    make_folder_private(path.parent)
    tmp = (
        make_folder_private(folder / "blobs" / "tmp")
        / f"{sha}.{os.getpid()}.{threading.get_ident()}"
    )
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        view = memoryview(packed)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def read(folder: Path, sha: str, packed: bytes | None) -> bytes | None:
    """The bytes of `sha`: `packed` (its index column) when it has them, else its loose file.
    None when neither holds them whole."""
    try:
        if packed is None:
            packed = blob_path(folder, sha).read_bytes()
        return zlib.decompress(packed)
    except (OSError, zlib.error):
        return None


def sweep_tmp(folder: Path) -> None:
    """Remove the temporary files of loose blobs that writers killed midway left behind."""
    tmp = folder / "blobs" / "tmp"
    old = time.time() - STALE_TMP_SECONDS
    try:
        entries = list(os.scandir(tmp))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.stat(follow_symlinks=False).st_mtime < old:
                os.unlink(entry.path)
        except OSError:
            continue


def upgrade(db: sqlite3.Connection, folder: Path) -> None:
    """Give an index made before packing its `data` column (NULL: a loose file), after narrowing
    the loose files that index's tokend left readable by others."""
    if _has_data_column(db):
        return
    _narrow_loose_files(folder / "blobs")
    try:
        db.execute("ALTER TABLE blobs ADD COLUMN data BLOB")
    except sqlite3.OperationalError:
        if not _has_data_column(db):  # else another tokend process added it meanwhile
            raise


def _has_data_column(db: sqlite3.Connection) -> bool:
    return "data" in {row[1] for row in db.execute("PRAGMA table_info(blobs)")}


def _narrow_loose_files(blobs: Path) -> None:
    uid = os.getuid()
    for sub in os.scandir(blobs):
        if sub.name == "tmp" or not sub.is_dir(follow_symlinks=False):
            continue
        make_folder_private(Path(sub.path))
        for entry in os.scandir(sub.path):
            try:
                info = entry.stat(follow_symlinks=False)
                mode = info.st_mode
                if stat.S_ISREG(mode) and info.st_uid == uid and stat.S_IMODE(mode) & 0o077:
                    os.chmod(entry.path, 0o600)
            except OSError:
                continue
