"""`tokend status` when a daemon answers: the light path `tokend statusline` takes (nothing
heavy imported: os, sys and the C modules under socket and json through adapters.rendezvous),
for a shell prompt or tmux that runs it at every refresh.

Requests are written at once where they can be: initialize, initialized and budget/snapshot
with --session (one round trip); else session/list (the cwd's sessions) first, then
budget/snapshot (and follow/list for `--format claude-code`). What it prints is what the full
path (commands/status.py) prints for the same options. With no daemon, the line or claude-code's
JSON comes from the session row (commands/status_row.py; else the line printed last time, when
the store says its session has not changed since: commands/status_cold.py), and the daemon is
started in the background (commands/status_start.py). Anything else — other options, no daemon, an error the daemon answers — is left to the full
path (None), which says it as before.
"""

from __future__ import annotations

import os

from tokend.adapters import rendezvous
from tokend.commands.status_text import claude_code_status, folder_path, folder_uri, gauge_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, TextIO

REPLY_SECONDS = 10.0
FORMATS = ("line", "json", "claude-code")


class _Unanswered(Exception):
    """The quick path cannot answer: the full path will (and say why, if anything is wrong)."""


def quick(given: Sequence[str], stdin: TextIO, out: TextIO) -> int | None:
    """`tokend statusline ...` and `tokend status ...` (`given`: the command line's words)
    without the argument parser; None for the full path (help, other options, no daemon)."""
    if {"-h", "--help"} & set(given):
        return None
    if given[0] == "statusline":
        from tokend.commands.statusline import run_statusline

        return run_statusline(stdin, out, given[1:])
    return quick_status(given[1:], out)


def quick_status(argv: Sequence[str], out: TextIO) -> int | None:
    """`argv`: the words after `status`. 0 once printed; None for the full path."""
    options = _options(argv)
    if options is None:
        return None
    fmt, session_id = options
    try:
        sock = rendezvous.quick_connect(REPLY_SECONDS)
    except (FileNotFoundError, ConnectionRefusedError):  # no daemon: the row, else the line kept
        return _cold(fmt, session_id, out)
    except (OSError, rendezvous.UnsafePathError):
        return None  # a problem the full path explains
    try:
        text = _status(_Connection(sock), fmt, session_id)
    except (_Unanswered, OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    finally:
        sock.close()
    out.write(text + "\n")
    return 0


def _cold(fmt: str, session_id: str | None, out: TextIO) -> int | None:
    """With no daemon: what the session row says (commands/status_row.py), else the line kept
    from the last call while the store holds its session unchanged (commands/status_cold.py);
    then the daemon is started in the background (commands/status_start.py), whether this
    answered or the full path reads the store."""
    from tokend.commands.status_row import row_status
    from tokend.commands.status_start import start_daemon

    cwd = os.path.realpath(os.getcwd())
    uri = folder_uri(cwd)
    text, kept = row_status(fmt, session_id, uri)
    if text is None and kept and fmt == "line":
        from tokend.commands.status_cold import kept_line

        text = kept_line(session_id, cwd, uri)
    if text is not None:
        out.write(text + "\n")
        out.flush()
    start_daemon()
    return None if text is None else 0


def _options(argv: Sequence[str]) -> tuple[str, str | None] | None:
    """(format, --session) from `[--json] [--format F] [--session ID]`; None otherwise."""
    fmt, session_id, json_flag = "line", None, False
    args = list(argv)
    while args:
        word = args.pop(0)
        name, equals, value = word.partition("=")
        if word == "--json":
            json_flag = True
            continue
        if name not in ("--format", "--session"):
            return None
        if not equals:
            if not args or args[0].startswith("-"):
                return None
            value = args.pop(0)
        if name == "--format":
            if value not in FORMATS:
                return None
            fmt = value
        else:
            session_id = value
    return ("json" if json_flag else fmt), session_id


class _Connection:
    """Requests written in batches on a bare socket; replies read by id."""

    def __init__(self, sock: Any) -> None:
        self.sock = sock
        self.frames = rendezvous.frames(sock)
        self.next_id = 1

    def send(self, *calls: tuple[str, Any]) -> list[int]:
        """Write the requests (a None id: a notification); their ids."""
        data, ids = [], []
        for method, params in calls:
            body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
            if method != "initialized":
                body["id"] = self.next_id
                ids.append(self.next_id)
                self.next_id += 1
            data.append(rendezvous.frame_bytes(rendezvous.dumps(body).encode()))
        self.sock.sendall(b"".join(data))
        return ids

    def results(self, ids: list[int]) -> dict[int, Any]:
        wanted, found = set(ids), {}
        for body in self.frames:
            reply = rendezvous.loads(body.decode("utf-8"))
            if not isinstance(reply, dict) or "method" in reply or reply.get("id") not in wanted:
                continue
            if "error" in reply:
                raise _Unanswered(reply["error"])
            found[reply["id"]] = reply.get("result")
            if len(found) == len(wanted):
                return found
        raise _Unanswered("the daemon closed the connection")


def _status(connection: _Connection, fmt: str, session_id: str | None) -> str:
    cwd = os.path.realpath(os.getcwd())
    hello = {"processId": os.getpid(), "capabilities": {}, "clientInfo": {"name": "tokend status"}}
    calls: list[tuple[str, Any]] = [("initialize", hello), ("initialized", {})]
    if session_id is not None and fmt != "claude-code":  # one round trip
        replies = connection.results(
            connection.send(*calls, ("budget/snapshot", {"sessionId": session_id}))
        )
        return _text(fmt, replies[max(replies)], session_id, cwd)
    calls.append(("session/list", {"workspaceUri": folder_uri(cwd)}))
    listed = connection.results(connection.send(*calls))
    sessions = listed[max(listed)]["sessions"]
    shown = session_id
    if shown is None:
        if not sessions:
            raise _Unanswered("no session")  # the full path says what to do
        shown = sessions[0]["sessionId"]
    workspace = next((s["workspaceUri"] for s in sessions if s["sessionId"] == shown), None)
    calls = [("budget/snapshot", {"sessionId": shown})]
    if fmt == "claude-code":
        calls.append(("follow/list", {}))
    ids = connection.send(*calls)
    replies = connection.results(ids)
    snapshot = replies[ids[0]]
    if fmt != "claude-code":
        return _text(fmt, snapshot, session_id, cwd)
    transcript = next(
        (
            str(t["path"])
            for f in replies[ids[1]]["followers"]
            for t in f["transcripts"]
            if t["sessionId"] == snapshot["sessionId"]
        ),
        None,
    )
    status = claude_code_status(
        snapshot, cwd=os.getcwd(), project_dir=folder_path(workspace), transcript_path=transcript
    )
    return rendezvous.dumps(status)


def _text(fmt: str, snapshot: dict[str, Any], session_id: str | None, cwd: str) -> str:
    """The snapshot as --json or the line (kept for a call with no daemon: status_cold)."""
    if fmt == "json":
        return rendezvous.dumps(snapshot)
    from tokend.commands.status_cold import keep_line

    line = gauge_line(snapshot)
    keep_line(session_id, cwd, snapshot, line)
    return line
