"""The workspace caches that survive a restart, in their own SQLite file in the data dir
(`workspace-cache.sqlite3`), apart from the sessions' store:

- `file_counts`: "<tokenizer>:<sha256 of the file's bytes>" -> tokens (exact counts only);
- `file_tags`: "<tags version>:<language>:<sha256>" -> the file's tags as JSON;
- `file_words`: the same key -> the words of the file's text, for tags kept without them (the
  first build counts them after its first map; tags written with their words have none here);
  words counted without their whole tokens (a tree of more than 10,000 files) under the key
  with `bare:` before it (service.workspace.tree_ports.words_key);
- `file_hashes`: (root, path) -> (size, mtime_ns, sha256), so an unchanged file is not even
  read again to learn its hash.

The file and its -wal/-shm are 0600 in a 0700 folder whatever the umask (file hashes name the
user's files); an older tokend's readable ones are narrowed on open. A cache that fails (a
locked or corrupt file) is logged and bypassed: figures are computed again, never wrong. Safe
from several threads (one connection behind a lock).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tokend.adapters.store.engine import enable_wal, make_sqlite_files_private
from tokend.adapters.store.url import default_data_dir, make_folder_private

log = logging.getLogger(__name__)

CACHE_FILENAME = "workspace-cache.sqlite3"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS file_counts (key TEXT PRIMARY KEY, tokens INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS file_tags (key TEXT PRIMARY KEY, tags TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS file_words (key TEXT PRIMARY KEY, words TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS file_hashes (
  root TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
  sha256 TEXT NOT NULL, PRIMARY KEY (root, path));
"""
_BATCH = 500  # keys per SELECT ... IN (...)
# before the tags' key in `file_tags` and `file_words`: what a file says holds its whole tokens
# too since issue 24's sixteenth pass (core.repomap.text.count_words), so the rows an older
# tokend wrote (no prefix) are not read: their files are tagged and counted again
SAID = "s1:"


def default_cache_path() -> Path:
    return default_data_dir() / CACHE_FILENAME


class WorkspaceCache:
    def __init__(self, path: Path | None) -> None:
        """`path` None keeps everything in memory (tests of what does not need a restart)."""
        self._lock = threading.Lock()
        target = ":memory:"
        if path is not None:
            make_folder_private(path.parent)
            make_sqlite_files_private(path)
            target = str(path)
        self._db = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
        try:
            enable_wal(self._db.execute)
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            log.warning("workspace cache %s unusable, caching in memory: %s", target, exc)
            self._db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            self._db.executescript(_SCHEMA)

    def _select(
        self, sql: str, keys: Sequence[str], prefix: tuple[Any, ...] = ()
    ) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = []
        try:
            with self._lock:
                for start in range(0, len(keys), _BATCH):
                    chunk = keys[start : start + _BATCH]
                    marks = ",".join("?" * len(chunk))
                    rows.extend(self._db.execute(sql.format(marks), (*prefix, *chunk)).fetchall())
        except sqlite3.Error as exc:
            log.warning("workspace cache read failed: %s", exc)
        return rows

    def _write(self, sql: str, rows: Iterable[tuple[Any, ...]]) -> None:
        try:
            with self._lock:
                self._db.execute("BEGIN")
                self._db.executemany(sql, rows)
                self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            log.warning("workspace cache write failed: %s", exc)
            try:
                with self._lock:
                    self._db.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def counts(self, keys: Sequence[str]) -> dict[str, int]:
        rows = self._select("SELECT key, tokens FROM file_counts WHERE key IN ({})", keys)
        return {k: int(t) for k, t in rows}

    def put_counts(self, counts: Mapping[str, int]) -> None:
        self._write("INSERT OR REPLACE INTO file_counts VALUES (?, ?)", counts.items())

    def tags(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        return self._json_rows("SELECT key, tags FROM file_tags WHERE key IN ({})", keys)

    def put_tag_texts(self, tags: Mapping[str, str]) -> None:
        """Tags already written as JSON text (by the tag workers): kept as they are."""
        rows = ((SAID + key, text) for key, text in tags.items())
        self._write("INSERT OR REPLACE INTO file_tags VALUES (?, ?)", rows)

    def words(self, keys: Sequence[str]) -> dict[str, Any]:
        """Tags' key -> the words kept apart for those tags (FileTags JSON's "w" value)."""
        return self._json_rows("SELECT key, words FROM file_words WHERE key IN ({})", keys)

    def _json_rows(self, sql: str, keys: Sequence[str]) -> dict[str, Any]:
        """key -> its JSON value decoded, of the rows `sql` selects by SAID + key (a damaged
        value: left out, as if not cached)."""
        found = {}
        for key, raw in self._select(sql, [SAID + key for key in keys]):
            try:
                found[key.removeprefix(SAID)] = json.loads(raw)
            except ValueError:
                continue
        return found

    def put_word_texts(self, words: Mapping[str, str]) -> None:
        """Words written as JSON text (FileTags JSON's "w" value), by their tags' key."""
        rows = ((SAID + key, text) for key, text in words.items())
        self._write("INSERT OR REPLACE INTO file_words VALUES (?, ?)", rows)

    def hashes(
        self, root: str, paths: Sequence[str] | None = None
    ) -> dict[str, tuple[int, int, str]]:
        """path -> (size, mtime_ns, sha256) as last seen under `root` (of `paths` only, when
        given: a watcher batch on the kernel asks for a few rows, not 78,000)."""
        if paths is not None:
            rows = self._select(
                "SELECT path, size, mtime_ns, sha256 FROM file_hashes WHERE root = ? "
                "AND path IN ({})",
                list(paths),
                prefix=(root,),
            )
            return {p: (int(s), int(m), str(h)) for p, s, m, h in rows}
        try:
            with self._lock:
                rows = self._db.execute(
                    "SELECT path, size, mtime_ns, sha256 FROM file_hashes WHERE root = ?", (root,)
                ).fetchall()
        except sqlite3.Error as exc:
            log.warning("workspace cache read failed: %s", exc)
            return {}
        return {p: (int(s), int(m), str(h)) for p, s, m, h in rows}

    def put_hashes(self, root: str, hashes: Mapping[str, tuple[int, int, str]]) -> None:
        rows = ((root, p, s, m, h) for p, (s, m, h) in hashes.items())
        self._write("INSERT OR REPLACE INTO file_hashes VALUES (?, ?, ?, ?, ?)", rows)

    def close(self) -> None:
        with self._lock:
            self._db.close()
