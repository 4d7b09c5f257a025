"""Is the SQLite file the daemon writes to still the store at its path?

SQLite keeps writing to a database file that was deleted (`rm tokend.sqlite3*`) or replaced
under it: every commit succeeds into a file nobody will ever open again, and a restart finds
nothing of it. `StoreFile` remembers the file's identity (st_dev, st_ino) when the store is
opened and compares it with what the path names now: one `stat` per transaction (a few µs,
beside a transaction's tens of µs at least), so no write is acknowledged that a restart could not
read back.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from tokend.core.errors import StoreError

log = logging.getLogger(__name__)


class StoreFile:
    """The identity of the SQLite file at `path`, taken now (it must exist)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        info = os.stat(path)
        self._identity = (info.st_dev, info.st_ino)
        self._told = False
        self._lock = threading.Lock()

    def check(self) -> None:
        """Raise StoreError when the file at `path` is no longer the one opened (deleted or
        replaced); logged once."""
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            what = "deleted"
        except OSError as exc:
            what = f"made unreachable ({exc.strerror})"
        else:
            if (info.st_dev, info.st_ino) == self._identity:
                return
            what = "replaced by another file"
        message = (
            f"the session store {self.path} was {what} while tokend was running; nothing more "
            "can be saved in it (a restart would not find it): restart the daemon "
            "(`tokend stop`, then reopen the editor) to start on the store now at that path"
        )
        with self._lock:
            told, self._told = self._told, True
        if not told:
            log.error("%s", message)
        raise StoreError(message)


def store_file(database: str | None) -> StoreFile | None:
    """A StoreFile for the SQLite database file `database` (None: in memory, or no file)."""
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    try:
        return StoreFile(Path(database))
    except OSError:
        return None
