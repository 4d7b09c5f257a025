"""`tokend status` (the line) with no daemon, at once: the line printed last time, when the store
says its session has not changed since.

Every `tokend status` that prints the line keeps it in the runtime folder (`status/`, one file
per working folder, or per --session ID) with the session's id and version. With no daemon, the
next call asks the store which session it would show and at which version (adapters.store_peek:
sqlite3, one SELECT, no SQLAlchemy) and prints the kept line when both are the same: every change
of a session moves its version in the change's own transaction, so the line is what reading the
store would print. Otherwise (nothing kept, a newer session in the folder, a session that moved,
a store that is not a SQLite file, another format) the store is read as before
(commands/status.py), and its line is kept.

The session row answers first (commands/status_row.py); the kept line is asked only for a row
an older tokend wrote, with no status block: unlike the row, it cannot tell that a config file
changed since.
"""

from __future__ import annotations

import os

from tokend.adapters import rendezvous
from tokend.commands.statusline_known import keep_text, kept_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FOLDER = "status"


def _key(session_id: str | None, cwd: str) -> str:
    return f"session {session_id}" if session_id is not None else f"folder {cwd}"


def _kept_file(key: str) -> str:
    """<runtime folder>/status/<FNV-1a 64 of the key> (the key is the file's first line)."""
    digest = 0xCBF29CE484222325
    for byte in key.encode("utf-8", "surrogateescape"):
        digest = ((digest ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return os.path.join(rendezvous.runtime_location(), FOLDER, f"{digest:016x}")


def keep_line(session_id: str | None, cwd: str, snapshot: dict[str, Any], line: str) -> None:
    """Keep `line`, made from `snapshot`, as what `tokend status [--session ID]` printed in
    the working folder `cwd` (a real path)."""
    key = _key(session_id, cwd)
    text = "\n".join([key, str(snapshot["sessionId"]), str(snapshot["version"]), line])
    keep_text(_kept_file(key), text)


def kept_line(session_id: str | None, cwd: str, uri: str) -> str | None:
    """The line kept for these options, when the store holds that session at that version
    (`uri`: the working folder's, whose newest session is shown without --session)."""
    key = _key(session_id, cwd)
    fields = (kept_text(_kept_file(key)) or "").split("\n", 3)
    if len(fields) != 4 or fields[0] != key or not fields[2].isdigit():
        return None
    from tokend.adapters.store_peek import session_version, store_file

    path = store_file()
    if path is None or session_version(path, session_id, uri) != (fields[1], int(fields[2])):
        return None
    return fields[3]
