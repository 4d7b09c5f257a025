"""Where the session database lives: an explicit URL, the environment, or the user data folder."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import platformdirs

DATABASE_URL_ENV = "TOKEND_DATABASE_URL"
DEFAULT_DB_FILENAME = "tokend.sqlite3"


def default_database_path() -> Path:
    """The SQLite file in the user data folder for "tokend". The folder is created mode 0700
    whatever the umask, and made 0700 if an older tokend left it open to others: it holds
    every conversation, tool outputs included."""
    return make_folder_private(default_data_dir()) / DEFAULT_DB_FILENAME


def default_data_dir() -> Path:
    """tokend's folder in the user data dir (the store, the workspace cache, checkpoints)."""
    return Path(platformdirs.user_data_dir("tokend", appauthor=False))


def make_folder_private(folder: Path) -> Path:
    """`folder`, created mode 0700 whatever the umask (with its missing parents, as the umask
    says), or made 0700 if it is tokend's own (the user data folder for "tokend" or below it),
    ours, and open to others; returned. A folder tokend did not make and does not own by name
    (the folder of a file a caller named: a shared temporary folder, a project's folder) is
    never changed: what tokend keeps there is private by its files' own modes."""
    try:
        folder.mkdir(mode=0o700, parents=True)
        return folder
    except FileExistsError:
        pass
    info = folder.stat()
    if _is_tokends(folder) and info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(folder, 0o700)
    return folder


def _is_tokends(folder: Path) -> bool:
    return folder.resolve().is_relative_to(default_data_dir().resolve())


def sqlite_url(path: Path | str) -> str:
    """A SQLAlchemy URL for a SQLite file at `path` (made absolute)."""
    return "sqlite:///" + Path(path).resolve().as_posix()


def resolve_database_url(explicit: str | None = None) -> str:
    """The SQLAlchemy URL to open: `explicit` if given, else $TOKEND_DATABASE_URL, else the
    SQLite file `tokend.sqlite3` in platformdirs' user data dir for "tokend"."""
    if explicit:
        return explicit
    from_env = os.environ.get(DATABASE_URL_ENV, "").strip()
    if from_env:
        return from_env
    return sqlite_url(default_database_path())
