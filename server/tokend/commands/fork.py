"""`tokend fork [SESSION] [--at MESSAGE] [--json]`: session/fork, a child session holding the
parent's messages up to MESSAGE (all by default); the parent is unchanged.

Through the running daemon, else on the store directly.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from tokend.commands.output import plural, say, write_json
from tokend.commands.sessions import change_session, local_service
from tokend.commands.status import active_session_id
from tokend.service.service import TokendService
from tokend.service.session.history import fork


def session_or_active(args: argparse.Namespace) -> str:
    """The SESSION argument, else the current folder's newest session."""
    if args.session is not None:
        return str(args.session)
    with local_service(args.database_url) as service:
        return active_session_id(service, Path.cwd())


def run_fork(args: argparse.Namespace, out: TextIO) -> int:
    session_id = session_or_active(args)
    params: dict[str, Any] = {"sessionId": session_id}
    if args.at is not None:
        params["atMessageId"] = args.at
    result = change_session(
        args.database_url,
        "session/fork",
        params,
        lambda service: fork_locally(service, session_id, args.at),
    )
    if args.json:
        write_json(out, result)
    else:
        where = f"up to message {args.at}" if args.at else "all of them"
        say(out, f"session {result['sessionId']}: a fork of {session_id}", "green")
        say(out, f"  {plural(result['messages'], 'message')} copied ({where})")
    return 0


def fork_locally(service: TokendService, session_id: str, at_message_id: str | None) -> Any:
    """What session/fork answers, computed on the store."""
    child, copied = fork(service, session_id, at_message_id)
    version = service.sessions.snapshot(child.id).version
    return {"sessionId": child.id, "parentId": session_id, "messages": copied, "version": version}
