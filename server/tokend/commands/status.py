"""`tokend status` (one-line gauge) and `tokend context` (a /context-like table).

Both ask the running daemon when one answers: it has the sessions loaded, so the answer takes
a few milliseconds (fit for a shell prompt or a tmux status line), and it is the very snapshot
the editors show. With no daemon, `tokend status` prints the line (or claude-code's JSON) from the
session row at once (commands/status_row.py, through commands/status_quick.py); otherwise (and
`tokend context`, `--json`) the store is read directly, which loads the session (a second or
two), and the line printed is kept for a row that cannot answer (commands/status_cold.py).
Either way the figures are the wire Snapshot of protocol.md, printed by commands.live.
Heavy modules (the store, the service) are imported only on that slow path.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from tokend.commands.live import LiveClient, claude_code_status, context_rows, gauge_line
from tokend.core.errors import SessionNotFound

if TYPE_CHECKING:
    from tokend.service.service import TokendService


def active_session_id(service: TokendService, workspace: Path) -> str:
    newest = service.sessions.active_session_id(workspace.resolve().as_uri())
    if newest is None:
        raise _no_session(workspace)
    return newest


def _no_session(workspace: Path) -> SessionNotFound:
    return SessionNotFound(
        f"no session for workspace {workspace.resolve()}: start one from your editor or agent, "
        "or `tokend import claude-code FILE`; pass --session ID for another workspace's"
    )


def wire_snapshot(
    args: argparse.Namespace, *, with_transcript: bool = False
) -> tuple[dict[str, Any], str | None, str | None]:
    """(the wire Snapshot of --session or the cwd's active session, its workspace URI, the
    transcript the daemon follows into it when `with_transcript`), from the daemon unless
    --database-url names a store to read (no transcript then: only the daemon follows)."""
    client = None if args.database_url else LiveClient.connect(client_name="tokend status")
    if client is not None:
        with client:
            snapshot, uri = daemon_snapshot(client, args.session, Path.cwd())
            path = _followed_path(client, snapshot["sessionId"]) if with_transcript else None
            return snapshot, uri, path
    return (*_local_snapshot(args), None)


def _followed_path(client: LiveClient, session_id: str) -> str | None:
    """The transcript the daemon follows into `session_id`, None when it follows none."""
    for follower in client.request("follow/list")["followers"]:
        for transcript in follower["transcripts"]:
            if transcript["sessionId"] == session_id:
                return str(transcript["path"])
    return None


def daemon_snapshot(
    client: LiveClient, session_id: str | None, workspace: Path
) -> tuple[dict[str, Any], str | None]:
    """(Snapshot, workspace URI) of `session_id` or the workspace's newest session."""
    listed = client.request("session/list", {"workspaceUri": workspace.resolve().as_uri()})
    sessions = listed["sessions"]
    if session_id is None:
        if not sessions:
            raise _no_session(workspace)
        session_id = sessions[0]["sessionId"]
    uri = next((s["workspaceUri"] for s in sessions if s["sessionId"] == session_id), None)
    snapshot: dict[str, Any] = client.request("budget/snapshot", {"sessionId": session_id})
    return snapshot, uri


def _local_snapshot(args: argparse.Namespace) -> tuple[dict[str, Any], str | None]:
    from tokend.commands.sessions import local_service
    from tokend.lsp import wire
    from tokend.lsp.convert import to_wire_snapshot

    with local_service(args.database_url) as service:  # a read: saves no calibration
        session_id = args.session or active_session_id(service, Path.cwd())
        snapshot = service.sessions.snapshot(session_id)
        info = service.store.get_session(session_id)
    result: dict[str, Any] = wire.to_wire(to_wire_snapshot(snapshot))
    return result, info.workspace_uri if info is not None else None


def run_status(args: argparse.Namespace, out: TextIO) -> int:
    if args.daemon:
        from tokend.commands.serve import daemon_status

        return daemon_status(args, out)
    fmt = "json" if args.json else args.format
    snapshot, workspace_uri, transcript = wire_snapshot(args, with_transcript=fmt == "claude-code")
    if fmt == "json":
        out.write(json.dumps(snapshot) + "\n")
    elif fmt == "claude-code":
        project = _folder(workspace_uri)
        status = claude_code_status(
            snapshot, cwd=str(Path.cwd()), project_dir=project, transcript_path=transcript
        )
        out.write(json.dumps(status) + "\n")
    else:
        from tokend.commands.status_cold import keep_line

        line = gauge_line(snapshot)
        out.write(line + "\n")
        keep_line(args.session, os.path.realpath(os.getcwd()), snapshot, line)
    return 0


def _folder(uri: str | None) -> str | None:
    from urllib.parse import unquote, urlparse

    if not uri or not uri.startswith("file://"):
        return None
    return unquote(urlparse(uri).path)


def run_context(args: argparse.Namespace, out: TextIO) -> int:
    s, _, _ = wire_snapshot(args)
    rows = context_rows(s)
    if args.json:
        out.write(json.dumps([{"category": c, "tokens": t, "basis": b} for c, t, b in rows]) + "\n")
        return 0
    out.write(gauge_line(s) + "\n\n")
    out.write(f"{'category':<20} {'tokens':>10} {'% window':>9}  basis\n")
    window = s["contextWindow"]
    for category, tokens, basis in rows:
        pct = 100.0 * tokens / window if window else 0.0
        out.write(f"{category:<20} {tokens:>10,} {pct:>8.1f}%  {basis}\n")
    for warning in s["warnings"]:
        out.write(f"warning: {warning}\n")
    return 0
