"""`tokend handoff [SESSION] --goal TEXT [--json]`: session/handoff, a new child session for
GOAL whose first message carries the parent's context and its most relevant files.

Through the running daemon, else on the store directly.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any, TextIO

from tokend.commands.fork import session_or_active
from tokend.commands.output import plural, say, write_json
from tokend.commands.sessions import change_session
from tokend.lsp.results import to_wire_handoff
from tokend.lsp.wire import to_wire
from tokend.service.service import TokendService
from tokend.service.session.handoff import handoff


def run_handoff(args: argparse.Namespace, out: TextIO) -> int:
    session_id = session_or_active(args)
    result = change_session(
        args.database_url,
        "session/handoff",
        {"sessionId": session_id, "goal": args.goal},
        lambda service: handoff_locally(service, session_id, args.goal),
    )
    if args.json:
        write_json(out, result)
        return 0
    say(out, f"session {result['sessionId']}: a handoff from {session_id}", "green")
    included = [f for f in result["files"] if f["included"]]
    say(out, f"  first message: {result['tokens']:,} tokens, {plural(len(included), 'file')}")
    for entry in result["files"]:
        if entry["included"]:
            say(out, f"  + {entry['path']}  {entry['tokens']:,} tokens")
        else:
            say(out, f"  - {entry['path']}  ({entry['reason']})", "yellow")
    return 0


def handoff_locally(service: TokendService, session_id: str, goal: str) -> Any:
    """What session/handoff answers, computed on the store."""
    return to_wire(to_wire_handoff(asyncio.run(handoff(service, session_id, goal))))
