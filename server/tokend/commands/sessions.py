"""`tokend sessions [--all-workspaces] [--deleted]` and `tokend sessions delete|restore|rename`.

Listings read the store. Changes go through the running daemon, so its loaded sessions stay
right; with no daemon they are made on the store directly.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from rich.text import Text

from tokend.commands.local import local_app
from tokend.commands.output import Cell, Column, percent_style, plural, say, write_json, write_table
from tokend.commands.rpc_client import DaemonClient
from tokend.core.errors import SessionNotFound, TokendError
from tokend.core.types import ListedSession, SessionInfo
from tokend.core.workspace.files import workspace_folder
from tokend.lsp import wire
from tokend.lsp.results import to_wire_session_ref
from tokend.service.service import TokendService
from tokend.service.session import admin


@contextmanager
def local_service(database_url: str | None) -> Iterator[TokendService]:
    """The service on the store, for this command only. Closes the store without saving the
    calibration: nothing here calibrates, and a running daemon may have saved a newer one."""
    with local_app(database_url) as app:
        yield app.service


def change_session(
    database_url: str | None,
    method: str,
    params: dict[str, Any],
    locally: Callable[[TokendService], Any],
) -> Any:
    """`method` on the running daemon, else `locally(service)` on the store: the wire result."""
    client = DaemonClient.connect()
    if client is None:
        with local_service(database_url) as service:
            return locally(service)
    with client:
        try:
            return client.request(method, params)
        except SessionNotFound as exc:
            if database_url is None:
                raise
            raise SessionNotFound(
                f"{exc.message} (asked the running daemon, which uses its own store; "
                "`tokend stop` it to change the store of --database-url)"
            ) from None


def workspace_uri(directory: Path | None = None) -> str:
    """The file:// URI sessions of `directory` (default: the current one) are filed under."""
    return (directory or Path.cwd()).resolve().as_uri()


def run_sessions(args: argparse.Namespace, out: TextIO) -> int:
    command = args.sessions_command
    if command is None:
        return list_sessions(args, out)
    sid = args.session_id
    if command == "delete":
        result = change_session(
            args.database_url,
            "session/delete",
            {"sessionId": sid},
            lambda s: _ref(admin.delete_session(s, sid)),
        )
        done = f"deleted session {sid}{_titled(result)}; `tokend sessions restore {sid}` undoes it"
    elif command == "restore":
        result = change_session(
            args.database_url,
            "session/restore",
            {"sessionId": sid},
            lambda s: _ref(admin.restore_session(s, sid)),
        )
        done = f"restored session {sid}{_titled(result)}"
    else:
        title = args.title
        result = change_session(
            args.database_url,
            "session/rename",
            {"sessionId": sid, "title": title},
            lambda s: _ref(admin.rename_session(s, sid, title)),
        )
        done = f"renamed session {sid} to {result['title']!r}"
    if args.json:
        write_json(out, result)
    else:
        say(out, done, "green")
    return 0


def list_sessions(args: argparse.Namespace, out: TextIO) -> int:
    scope = None if args.all_workspaces else workspace_uri()
    with local_service(args.database_url) as service:
        infos = admin.list_sessions(service, scope, deleted=args.deleted)
        rows = [_row(service, info) for info in infos]
    if args.json:
        write_json(out, {"sessions": rows})
        return 0
    if rows:
        _table(out, rows, all_workspaces=args.all_workspaces, deleted=args.deleted)
    say(out, _footer(rows, scope, args.deleted))
    return 0


def _row(service: TokendService, info: ListedSession) -> dict[str, Any]:
    """One session as `--json` prints it (camelCase; gauge figures null when unknown)."""
    try:
        gauge = admin.session_gauge(service, info)
    except TokendError as exc:  # e.g. a model no catalog knows any more: list it anyway
        sys.stderr.write(f"tokend: no gauge for session {info.id}: {exc.message}\n")
        gauge = None
    return {
        "sessionId": info.id,
        "title": info.title,
        "model": info.model,
        "workspaceUri": info.workspace_uri,
        "createdAt": info.created_at.isoformat(),
        "updatedAt": info.updated_at.isoformat(),
        "deletedAt": info.deleted_at.isoformat() if info.deleted_at else None,
        "usedTokens": gauge.used_tokens if gauge else None,
        "usedPercentage": round(gauge.used_percentage, 2) if gauge else None,
        "contextWindow": gauge.context_window if gauge else None,
        "estimated": gauge.estimated if gauge else None,
    }


def _table(out: TextIO, rows: list[dict[str, Any]], *, all_workspaces: bool, deleted: bool) -> None:
    columns = [
        Column("session", style="cyan"),
        Column("used / window", justify="right"),
        Column("%", justify="right"),
        Column("model"),
        Column("title", cut=True),
        Column("updated"),
    ]
    if deleted:
        columns.append(Column("deleted"))
    if all_workspaces:
        columns.append(Column("workspace", cut=True))
    cells: list[list[Cell]] = []
    for row in rows:
        line: list[Cell] = [row["sessionId"], *_gauge_cells(row), row["model"]]
        line += [row["title"] or "", _local_time(row["updatedAt"])]
        if deleted:
            line.append(_local_time(row["deletedAt"]))
        if all_workspaces:
            line.append(_workspace_shown(row["workspaceUri"]))
        cells.append(line)
    write_table(out, columns, cells)


def _gauge_cells(row: dict[str, Any]) -> tuple[Cell, Cell]:
    if row["usedTokens"] is None:
        return "-", "-"
    mark = "~" if row["estimated"] else ""
    used = f"{mark}{row['usedTokens']:,} / {row['contextWindow']:,}"
    pct = row["usedPercentage"]
    return used, Text(f"{pct:.1f}%", style=percent_style(pct))


def _footer(rows: list[dict[str, Any]], scope: str | None, deleted: bool) -> str:
    noun = "deleted session" if deleted else "session"
    where = f"in {_workspace_shown(scope)}" if scope else "in every workspace"
    line = f"{plural(len(rows), noun)} {where}"
    if any(row["estimated"] for row in rows):
        line += " (~ estimated: no provider usage yet)"
    if deleted and rows:
        line += "; `tokend sessions restore ID` brings one back"
    if not rows and not deleted:
        line += ": import one with `tokend import claude-code FILE`, or see `--all-workspaces`"
    return line


def _ref(info: SessionInfo) -> dict[str, Any]:
    result: dict[str, Any] = wire.to_wire(to_wire_session_ref(info))
    return result


def _titled(result: dict[str, Any]) -> str:
    return f" ({result['title']})" if result.get("title") else ""


def _local_time(iso: str | None) -> str:
    return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M") if iso else ""


def _workspace_shown(uri: str | None) -> str:
    if uri is None:
        return "(no workspace)"
    path = workspace_folder(uri)
    return str(path) if path is not None else uri
