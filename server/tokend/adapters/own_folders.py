"""tokend's own folders, and the one answer to "is this path tokend's own?".

tokend writes its data (the sessions' SQLite file, the workspace cache, the checkpoint store),
its logs (the state folder), its cache and its runtime files (sockets, locks, the token). When a
workspace contains one of them (an editor opened on the home folder, with the XDG folders under
it), what tokend writes must never look like a user's change: the walk, the watcher, the
checkpointer and the repo map all leave these paths out, through `OwnPaths.owns`. Without that,
every checkpoint blob written is seen, indexed and checkpointed again, in a loop.

Paths are compared as real paths (symlinks resolved on both sides), so a data folder reached
through a symlink, or a workspace opened through one, is recognised. The folders are the ones
tokend would use now: XDG_DATA_HOME, XDG_STATE_HOME, XDG_CACHE_HOME and XDG_RUNTIME_DIR as
platformdirs reads them, the SQLite file TOKEND_DATABASE_URL (or the user's config) names with
its journal files, and any folder a caller adds (a checkpoint store or a cache put elsewhere).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import platformdirs

from tokend.adapters import rendezvous
from tokend.core.workspace.own_paths import OwnPaths

APP = rendezvous.APP
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")  # beside a SQLite file while it is open


def runtime_location() -> Path:
    """The user's runtime folder for tokend (the daemon's socket, locks and token), whether
    or not it exists yet: $XDG_RUNTIME_DIR/tokend, else <tempdir>/tokend-<uid>."""
    return Path(rendezvous.runtime_location())


def tokend_folders() -> list[Path]:
    """The data, state, cache and runtime folders tokend uses now (they may not exist)."""
    return [
        Path(platformdirs.user_data_dir(APP, appauthor=False)),
        Path(platformdirs.user_state_dir(APP, appauthor=False)),
        Path(platformdirs.user_cache_dir(APP, appauthor=False)),
        runtime_location(),
    ]


def sqlite_files(database: str | os.PathLike[str] | None) -> list[Path]:
    """A SQLite database file and the journal files SQLite keeps beside it (none for an
    in-memory database or another backend: `database` None or ":memory:")."""
    if not database or os.fspath(database) in (":memory:", ""):
        return []
    path = Path(database)
    return [path, *(path.with_name(path.name + side) for side in SQLITE_SIDE_FILES)]


def sqlite_file_of(store: object) -> str | None:
    """The file of a store kept in SQLite (None for PostgreSQL, memory, or a store that does
    not say): read from its SQLAlchemy engine's URL."""
    url = getattr(getattr(store, "engine", None), "url", None)
    if url is None or not str(getattr(url, "drivername", "")).startswith("sqlite"):
        return None
    database = getattr(url, "database", None)
    return database if isinstance(database, str) else None


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def own_paths_inside(
    root: Path,
    database: str | os.PathLike[str] | None = None,
    extra: Iterable[Path] = (),
) -> OwnPaths:
    """tokend's folders (and `database`'s files, and `extra`) that lie inside `root`,
    compared as real paths. `root` should be real already (the workspace's key)."""
    real_root = _real(root)
    rels: set[str] = set()
    for own in (*tokend_folders(), *sqlite_files(database), *extra):
        real = _real(own)
        if real == real_root or real_root.is_relative_to(real):
            return OwnPaths(root, ("",))  # the workspace is inside tokend's own folder
        if real.is_relative_to(real_root):
            rels.add(real.relative_to(real_root).as_posix())
    return OwnPaths(root, tuple(sorted(rels)))
