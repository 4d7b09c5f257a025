"""`tokend import claude-code FILE [--workspace DIR]`: a Claude Code JSONL transcript into a session.

The importing itself is service/transcripts/importer.py's, the follower's too: the session belongs to
the transcript's workspace (its records' `cwd`, as a file:// URI, unless --workspace says
otherwise); importing a transcript again appends only what it gained since; a line that is not
JSON is skipped and reported.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from tokend.commands.output import counted, plural, say, write_json
from tokend.commands.rpc_client import DaemonClient
from tokend.core.budget.snapshot import BudgetSnapshot
from tokend.core.errors import InvalidParams, TokendError
from tokend.core.transcripts.events import ProviderCall
from tokend.service.app import open_app
from tokend.service.service import TokendService
from tokend.service.transcripts.importer import (
    Records,
    TranscriptImporter,
    parse_events,
    read_records,
)


@dataclass(frozen=True)
class ImportOutcome:
    """What one import added (messages, calls, compactions) to which session, and what it
    skipped (lines that are not JSON, messages the session refused)."""

    session_id: str
    messages: int
    calls: int
    compactions: int
    created: bool = True
    workspace_uri: str | None = None
    skipped_lines: int = 0
    refused: int = 0
    skipped_numbers: tuple[int, ...] = ()  # the first few skipped lines' numbers
    unfinished_last_line: bool = False  # left for a later import, as the follower leaves it


def import_events(
    service: TokendService,
    path: Path,
    context_window: int | None = None,
    workspace_uri: str | None = None,
    *,
    skip_bad_lines: bool = True,
) -> ImportOutcome:
    """Append the transcript's messages, usage and compactions to its session: a new one in
    `workspace_uri` (default: the transcript's cwd), or the one an earlier import or follower
    made, which gets only the events after the last message it holds.

    A last line without its newline is still being written (the agent is at work): it is left
    for a later import, as the follower leaves it. A line that is not a JSON record is skipped
    and counted (as the follower does) or, without `skip_bad_lines`, refused: InvalidParams
    naming its number, and nothing is imported."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidParams(f"cannot import {path}: {exc.strerror or exc}") from None
    end = data.rfind(b"\n") + 1
    unfinished = bool(data[end:].strip())
    read = read_records(data[:end].splitlines())
    if read.skipped and not skip_bad_lines:
        raise InvalidParams(
            f"{path}: {_lines_text(read)} not a JSON record (cut or damaged); nothing was "
            "imported. `tokend import claude-code --skip-bad-lines FILE` imports the rest."
        )
    events = parse_events("claude-code", read.records)
    if not any(isinstance(e, ProviderCall) for e in events):
        unread = ""
        if read.first_skipped is not None:
            unread = (
                f" ({read.skipped} lines are not JSON records, the first line {read.first_skipped})"
            )
        raise InvalidParams(
            f"{path} holds no provider call{unread}: is it a Claude Code transcript?"
        )
    importer = TranscriptImporter(service, "claude-code", path, workspace_uri, context_window)
    asyncio.run(importer.apply(read.records, events))
    assert importer.session_id is not None
    return ImportOutcome(
        importer.session_id,
        importer.messages,
        importer.calls,
        importer.compactions,
        importer.created,
        importer.workspace_uri,
        read.skipped,
        importer.refused,
        read.skipped_lines,
        unfinished,
    )


def _lines_text(read: Records) -> str:
    """'line 501 is', 'lines 12, 40 and 3 more are'."""
    shown = ", ".join(str(n) for n in read.skipped_lines[:3])
    more = read.skipped - min(3, len(read.skipped_lines))
    if read.skipped == 1:
        return f"line {shown} is"
    return f"lines {shown}{f' and {more:,} more' if more else ''} are"


def import_claude_code(
    path: Path,
    database_url: str | None,
    context_window: int | None,
    workspace: Path | None,
    as_json: bool,
    out: TextIO,
    skip_bad_lines: bool = False,
) -> int:
    app = open_app(Path.cwd(), database_url)
    try:
        uri = workspace.resolve().as_uri() if workspace is not None else None
        outcome = import_events(
            app.service, path, context_window, uri, skip_bad_lines=skip_bad_lines
        )
        snapshot = app.service.sessions.snapshot(outcome.session_id)
    finally:
        app.close()
    if not outcome.created and (outcome.messages or outcome.compactions):
        _tell_daemon(outcome.session_id)
    if as_json:
        write_json(out, _outcome_json(outcome, snapshot))
    else:
        _say_outcome(out, path, outcome, snapshot)
    return 0


def _outcome_json(outcome: ImportOutcome, snapshot: BudgetSnapshot) -> dict[str, object]:
    """`--json`'s object: what the import added, to which session, and its gauge."""
    return {
        "sessionId": outcome.session_id,
        "created": outcome.created,
        "workspaceUri": outcome.workspace_uri,
        "messages": outcome.messages,
        "calls": outcome.calls,
        "compactions": outcome.compactions,
        "skippedLines": outcome.skipped_lines,
        "skippedLineNumbers": list(outcome.skipped_numbers),
        "unfinishedLastLine": outcome.unfinished_last_line,
        "refusedMessages": outcome.refused,
        "usedTokens": snapshot.used_tokens,
    }


def _say_outcome(out: TextIO, path: Path, outcome: ImportOutcome, snapshot: BudgetSnapshot) -> None:
    """What the import added, what it skipped, and the session's gauge, in words."""
    what = counted(
        (outcome.messages, "message"),
        (outcome.calls, "provider call"),
        (outcome.compactions, "compaction"),
    )
    sid = outcome.session_id
    if outcome.skipped_lines:
        numbers = ", ".join(str(n) for n in outcome.skipped_numbers)
        more = "" if outcome.skipped_lines <= len(outcome.skipped_numbers) else ", ..."
        say(
            out,
            f"skipped {plural(outcome.skipped_lines, 'line')} of {path} that "
            f"{'is not a JSON record' if outcome.skipped_lines == 1 else 'are not JSON records'}"
            f" (line {numbers}{more})",
            "yellow",
        )
    if outcome.unfinished_last_line:
        say(out, f"left the last line of {path}, still being written, for a later import")
    if outcome.refused:
        say(
            out, f"skipped {outcome.refused} message(s) the session refused (see the log)", "yellow"
        )
    if outcome.created:
        say(out, f"imported {what} into new session {sid} ({outcome.workspace_uri})", "green")
    elif outcome.messages or outcome.compactions:
        say(out, f"added {what} to session {sid}", "green")
    else:
        say(out, f"nothing new in {path} since its last import into session {sid}", "yellow")
    say(
        out,
        f"gauge: {snapshot.used_tokens:,} / {snapshot.context_window:,} tokens "
        f"({snapshot.used_percentage:.1f}%)",
    )


def _tell_daemon(session_id: str) -> None:
    """A running daemon that has the session loaded reads it again (else it would serve the
    session without this import's messages until its next change met the moved version). Best
    effort: a daemon on another store does not know the session, and that is fine."""
    client = DaemonClient.connect(client_name="tokend import")
    if client is None:
        return
    with client:
        try:
            client.request("session/reload", {"sessionId": session_id})
        except TokendError:
            pass
