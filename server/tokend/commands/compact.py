"""`tokend compact [SESSION] [--json]`: session/compact with strategy "auto", before and after.

Through the running daemon (its attached editors see the change), else on the store directly.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from tokend.commands.output import percent_style, plural, say, write_json
from tokend.commands.sessions import change_session, local_service
from tokend.commands.status import active_session_id
from tokend.lsp.results import to_wire_compact_result
from tokend.lsp.wire import to_wire
from tokend.service.compaction.tiers import compact
from tokend.service.service import TokendService


def run_compact(args: argparse.Namespace, out: TextIO) -> int:
    session_id = args.session
    if session_id is None:
        with local_service(args.database_url) as service:
            session_id = active_session_id(service, Path.cwd())
    result = change_session(
        args.database_url,
        "session/compact",
        {"sessionId": session_id, "strategy": "auto"},
        lambda service: compact_locally(service, session_id),
    )
    if args.json:
        write_json(out, result)
    else:
        _report(out, session_id, result)
    return 0


def compact_locally(service: TokendService, session_id: str) -> Any:
    """What session/compact answers, computed on the store: {before, after, actions, snapshot}."""
    outcome = compact(service, session_id, "auto")
    return to_wire(to_wire_compact_result(outcome))


def _report(out: TextIO, session_id: str, result: dict[str, Any]) -> None:
    before, after = result["before"], result["after"]
    window = result["snapshot"]["contextWindow"] or 1
    freed = before - after
    say(out, f"session {session_id}  ({result['snapshot']['model']})")
    for label, tokens in (("before", before), ("after", after)):
        pct = 100.0 * tokens / window
        say(out, f"{label:<7}{tokens:>12,} tokens  {pct:5.1f}%", percent_style(pct))
    done = [a for a in result["actions"] if a["kind"] != "skip"]
    if not done:
        say(out, "nothing to compact", "yellow")
    for action in result["actions"]:
        say(out, f"  {action['kind']}: {action['detail']}")
    if done:
        say(out, f"freed {plural(freed, 'token')}", "green")
