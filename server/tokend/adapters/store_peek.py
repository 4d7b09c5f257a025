"""One look at a SQLite store without SQLAlchemy: which session `tokend status` would show, at
which version, with its workspace and gauge state (commands/status_row.py prints the line from
it), for a command that must answer within milliseconds with no daemon running.

Importing SQLAlchemy and opening the store cost a cold `tokend status` hundreds of milliseconds;
the standard library's sqlite3 reads the columns it needs in about one. It only reads (one
SELECT on the sessions table, whose `version` every change of a session moves in the change's
own transaction: store/sql_store.py), and anything unexpected (a store that is not a SQLite
file, no file, a schema it does not know, a locked file) answers None: the caller then opens
the store the usual way. Not under adapters/store/, whose package imports SQLAlchemy.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DATABASE_URL_ENV = "TOKEND_DATABASE_URL"  # as adapters/store/url.py and the settings read it
DEFAULT_DB_FILENAME = "tokend.sqlite3"
SQLITE_PREFIX = "sqlite:///"
COLUMNS = "id, version, workspace_uri, gauge_state"
NEWEST = (  # SqlStore.listings.newest's order: the folder's active session
    f"SELECT {COLUMNS} FROM sessions WHERE deleted_at IS NULL AND workspace_uri = ? "
    "ORDER BY updated_at DESC, id DESC LIMIT 1"
)
ONE = f"SELECT {COLUMNS} FROM sessions WHERE deleted_at IS NULL AND id = ?"


def store_file() -> str | None:
    """The SQLite file the store is opened at, resolved as service/app.py resolves it
    ($TOKEND_DATABASE_URL, else the user config's `database_url`, else tokend.sqlite3 in the
    user data folder); None when that is not a plain `sqlite:///PATH` URL."""
    url = os.environ.get(DATABASE_URL_ENV, "").strip() or _configured_url()
    if url is None:
        import platformdirs

        return os.path.join(
            platformdirs.user_data_dir("tokend", appauthor=False), DEFAULT_DB_FILENAME
        )
    if not url.startswith(SQLITE_PREFIX) or "?" in url:
        return None
    path = url[len(SQLITE_PREFIX) :]
    return os.path.abspath(path) if path and path != ":memory:" else None


def _configured_url() -> str | None:
    value = user_config().get("database_url")
    return value.strip() if isinstance(value, str) and value.strip() else None


def user_config() -> dict[str, Any]:
    """The user's config document ({} when absent or unreadable: the settings then use their
    defaults, as here), read once per process and file."""
    from tokend.adapters.config_paths import user_config_file

    path = user_config_file()
    document = _USER_CONFIG.get(path)
    if document is None:
        import tomllib

        try:
            with open(path, "rb") as file:
                document = tomllib.load(file)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            document = {}
        _USER_CONFIG[path] = document
    return document


_USER_CONFIG: dict[str, dict[str, Any]] = {}


def session_version(
    path: str, session_id: str | None, workspace_uri: str
) -> tuple[str, int] | None:
    """(id, version) of `session_id`, else of `workspace_uri`'s newest session, in the SQLite
    file at `path`; None when there is none or it cannot be read this way."""
    row = session_row(path, session_id, workspace_uri)
    return None if row is None else (row[0], row[1])


def session_row(
    path: str, session_id: str | None, workspace_uri: str
) -> tuple[str, int, str | None, str | None] | None:
    """(id, version, workspace URI, gauge state as stored: JSON text) of `session_id`, else of
    `workspace_uri`'s newest session, in the SQLite file at `path`; None when there is none or
    it cannot be read this way."""
    if not os.path.isfile(path):
        return None
    import sqlite3

    try:
        connection = sqlite3.connect(path, timeout=0.05)
    except sqlite3.Error:
        return None
    try:
        query, arg = (ONE, session_id) if session_id is not None else (NEWEST, workspace_uri)
        row = connection.execute(query, (arg,)).fetchone()
    except sqlite3.Error:
        return None
    finally:
        connection.close()
    if row is None or not isinstance(row[0], str) or type(row[1]) is not int:
        return None
    uri, state = row[2], row[3]
    return (
        row[0],
        row[1],
        uri if isinstance(uri, str) else None,
        state if isinstance(state, str) else None,
    )
