"""`tokend statusline`: Claude Code's statusLine command.

Claude Code pipes a JSON object to the command after each message (`session_id`,
`transcript_path`, `cwd`, `model`, `workspace`, `cost`, `context_window`, ...) and shows the first
line it prints. This command asks the daemon (started when none runs) to follow the transcript
named there, which is idempotent, and prints tokend's gauge of that session:

    claude-opus-4-6 · 86k/200k · 43% · compacts at 168k · $1.23

so the status line, the editors and the compaction decision show one number. It never fails
the status line: a problem is printed as a short `tokend: ...` line, and the exit code is 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from tokend.commands.live import LiveClient, short_gauge, short_tokens
from tokend.core.errors import TokendError


def statusline_text(snapshot: dict[str, Any]) -> str:
    return (
        f"{snapshot['model']} · {short_gauge(snapshot)} · compacts at "
        f"{short_tokens(snapshot['autocompactThreshold'])} · ${snapshot['cost']['totalUsd']:.2f}"
    )


def run_statusline(stdin: TextIO, out: TextIO) -> int:
    try:
        out.write(_line(stdin.read()) + "\n")
    except TokendError as exc:
        out.write(f"tokend: {exc.message}\n")
    return 0


def _line(raw: str) -> str:
    try:
        given = json.loads(raw) if raw.strip() else {}
    except ValueError:
        given = {}
    transcript = given.get("transcript_path") if isinstance(given, dict) else None
    if not isinstance(transcript, str) or not Path(transcript).is_file():
        return "tokend: no transcript to follow (run as Claude Code's statusLine command)"
    client = LiveClient.open("tokend statusline", start=True)
    assert client is not None
    with client:
        follower = client.request(
            "follow/start", {"agent": "claude-code", "path": str(Path(transcript).resolve())}
        )
        sessions = [t["sessionId"] for t in follower["transcripts"] if t["sessionId"]]
        if not sessions:
            return "tokend: waiting for the first reply"
        return statusline_text(client.request("budget/snapshot", {"sessionId": sessions[0]}))
