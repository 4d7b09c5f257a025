"""`tokend import claude-code FILE [--workspace DIR]`: a Claude Code JSONL transcript into a session.

The session belongs to the transcript's workspace: its records' `cwd`, as a file:// URI, unless
--workspace says otherwise. Importing a transcript again appends only what it gained since: the
session's extra remembers which transcript fed it and how far (TRANSCRIPT_KEY).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from tokend.commands.output import counted, say, write_json
from tokend.commands.rpc_client import DaemonClient
from tokend.core.errors import InvalidParams, TokendError
from tokend.core.transcript import (
    CompactionBoundary,
    ProviderCall,
    TranscriptEvent,
    TranscriptMessage,
    parse_transcript,
)
from tokend.core.types import SessionInfo, TextPart
from tokend.service.admin import set_session_extra
from tokend.service.factory import build_service
from tokend.service.service import TokendService

CLAUDE_CODE_WINDOW = 200_000  # Claude Code runs Claude at the standard window unless told "[1m]"
SOURCE = "claude-code"
# extra["transcript"] = {source, sessionId (Claude Code's), path, records, lastUuid}: records is
# how many non-blank lines were read, lastUuid the uuid of the last message imported.
TRANSCRIPT_KEY = "transcript"


@dataclass(frozen=True)
class ImportOutcome:
    """What one import added (messages, calls, compactions) to which session."""

    session_id: str
    messages: int
    calls: int
    compactions: int
    created: bool = True
    workspace_uri: str | None = None


@dataclass(frozen=True)
class TranscriptOrigin:
    """Where a transcript came from, read from its records."""

    session_id: str | None  # Claude Code's sessionId
    cwd: str | None


def import_events(
    service: TokendService,
    path: Path,
    context_window: int | None = None,
    workspace_uri: str | None = None,
) -> ImportOutcome:
    """Append the transcript's messages, usage and compactions to its session: a new one in
    `workspace_uri` (default: the transcript's cwd), or the one an earlier import made, which
    gets only the events after the last message it holds."""
    try:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        events = parse_transcript(lines)
    except (OSError, ValueError) as exc:
        raise InvalidParams(f"cannot import {path}: {exc}") from None
    calls = [e for e in events if isinstance(e, ProviderCall)]
    if not calls:
        raise InvalidParams(f"{path} holds no provider call: is it a Claude Code transcript?")
    origin = transcript_origin(lines)
    previous = imported_session(service, origin, path)
    last_uuid: str | None = None
    if previous is None:
        workspace_uri = workspace_uri or _file_uri(origin.cwd)
        sid = _create_session(service, path, calls[0].model, context_window, workspace_uri)
        start = 0
    else:
        sid, workspace_uri = previous.id, previous.workspace_uri
        last_uuid = previous.extra[TRANSCRIPT_KEY].get("lastUuid")
        start = _resume_index(events, last_uuid, path, sid)
    added = _Added(last_uuid=last_uuid)
    try:
        _append(service, sid, events[start:], added)
    finally:  # a failed append leaves the cursor after the last message that made it
        cursor = {
            "source": SOURCE,
            "sessionId": origin.session_id,
            "path": str(path.resolve()),
            "records": len(lines) if added.complete else None,
            "lastUuid": added.last_uuid,
        }
        set_session_extra(service, sid, TRANSCRIPT_KEY, cursor)
    return ImportOutcome(
        sid, added.messages, added.calls, added.compactions, previous is None, workspace_uri
    )


def transcript_origin(lines: Sequence[str]) -> TranscriptOrigin:
    """The first sessionId and cwd the records carry (the first records usually hold both)."""
    session_id: str | None = None
    cwd: str | None = None
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        session_id = session_id or _text_or_none(record.get("sessionId"))
        cwd = cwd or _text_or_none(record.get("cwd"))
        if session_id and cwd:
            break
    return TranscriptOrigin(session_id, cwd)


def imported_session(
    service: TokendService, origin: TranscriptOrigin, path: Path
) -> SessionInfo | None:
    """The live session an earlier import of this transcript made: same Claude Code sessionId,
    or, for a transcript without one, same file."""
    for info in service.list_sessions(None):
        cursor = info.extra.get(TRANSCRIPT_KEY)
        if not isinstance(cursor, dict) or cursor.get("source") != SOURCE:
            continue
        if origin.session_id is not None:
            if cursor.get("sessionId") == origin.session_id:
                return info
        elif cursor.get("path") == str(path.resolve()):
            return info
    return None


def _create_session(
    service: TokendService,
    path: Path,
    model: str | None,
    context_window: int | None,
    workspace_uri: str | None,
) -> str:
    model = model or "claude-opus-4-6"
    info = service.catalog.get(model)
    if context_window is None and info.provider == "anthropic" and "[1m]" not in model:
        context_window = min(info.context_window, CLAUDE_CODE_WINDOW)
    return service.create_session(
        model,
        title=f"imported: {path.name}",
        workspace_uri=workspace_uri,
        context_window=context_window,
    ).id


def _resume_index(
    events: Sequence[TranscriptEvent], last_uuid: Any, path: Path, session_id: str
) -> int:
    """The index of the first event after the message with `last_uuid` (0: none imported)."""
    if not last_uuid:
        return 0
    for index, event in enumerate(events):
        if isinstance(event, TranscriptMessage) and event.uuid == last_uuid:
            return index + 1
    raise InvalidParams(
        f"{path} no longer holds the last message imported into session {session_id}: the "
        f"transcript was rewritten. Delete that session (`tokend sessions delete {session_id}`) "
        "and import it again"
    )


@dataclass
class _Added:
    messages: int = 0
    calls: int = 0
    compactions: int = 0
    last_uuid: str | None = None  # of the last message appended
    complete: bool = False


def _append(
    service: TokendService, sid: str, events: Sequence[TranscriptEvent], added: _Added
) -> None:
    """Append `events` in order, counting into `added`: usage goes to the assistant message
    after its call, and a compaction boundary starts a window whose first message is the
    compaction summary."""
    pending: ProviderCall | None = None
    boundary_next = False
    for event in events:
        if isinstance(event, ProviderCall):
            pending = event
            added.calls += 1
        elif isinstance(event, CompactionBoundary):
            boundary_next = True
        elif isinstance(event, TranscriptMessage):
            if boundary_next:
                summary = _text(event) if event.compact_summary else "(compacted by Claude Code)"
                service.append_boundary(sid, summary)
                added.compactions += 1
                boundary_next = False
                if event.compact_summary:
                    added.last_uuid = event.uuid or added.last_uuid
                    continue
            usage = pending.usage if pending and event.role == "assistant" else None
            call_model = pending.model if pending and event.role == "assistant" else None
            service.append(sid, event.role, list(event.parts), usage=usage, model=call_model)
            added.messages += 1
            added.last_uuid = event.uuid or added.last_uuid
            if event.role == "assistant":
                pending = None
    added.complete = True


def _text(message: TranscriptMessage) -> str:
    return "\n".join(p.text for p in message.parts if isinstance(p, TextPart))


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _file_uri(directory: str | None) -> str | None:
    """`directory` (absolute, as Claude Code records it) as a file:// URI; None otherwise."""
    if directory is None or not Path(directory).is_absolute():
        return None
    return Path(directory).as_uri()


def import_claude_code(
    path: Path,
    database_url: str | None,
    context_window: int | None,
    workspace: Path | None,
    as_json: bool,
    out: TextIO,
) -> int:
    service = build_service(Path.cwd(), database_url)
    try:
        uri = workspace.resolve().as_uri() if workspace is not None else None
        outcome = import_events(service, path, context_window, uri)
        snapshot = service.snapshot(outcome.session_id)
    finally:
        service.close()
    if not outcome.created and (outcome.messages or outcome.compactions):
        _tell_daemon(outcome.session_id)
    if as_json:
        write_json(
            out,
            {
                "sessionId": outcome.session_id,
                "created": outcome.created,
                "workspaceUri": outcome.workspace_uri,
                "messages": outcome.messages,
                "calls": outcome.calls,
                "compactions": outcome.compactions,
                "usedTokens": snapshot.used_tokens,
            },
        )
        return 0
    what = counted(
        (outcome.messages, "message"),
        (outcome.calls, "provider call"),
        (outcome.compactions, "compaction"),
    )
    sid = outcome.session_id
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
    return 0


def _tell_daemon(session_id: str) -> None:
    """A running daemon that has the session loaded reads it again (else its next change would
    write back its older extra, this import's cursor lost). Best effort: a daemon on another
    store does not know the session, and that is fine."""
    client = DaemonClient.connect(client_name="tokend import")
    if client is None:
        return
    with client:
        try:
            client.request("session/reload", {"sessionId": session_id})
        except TokendError:
            pass
