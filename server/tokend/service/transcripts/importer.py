"""The one transcript importer: `tokend import` (commands/importer.py) and the follower
(service/transcripts/tail.py) both append an agent's transcript to its session through it, so the same file
gives the same messages, usage and cost whichever way it came in.

Its rules:
- the session belongs to the transcript's agent session id (or, without one, its file) and to its
  `cwd`'s workspace unless told otherwise; it is created at the first provider call, on that
  call's model (a Claude Code `[1m]` suffix names the 1M-token window of the same model);
- usage goes to the assistant message after its call; a compaction boundary starts a window
  whose first message is the agent's summary (PLACEHOLDER when the transcript holds none);
- a line that is not JSON (cut, half written) and a message the session refuses (too large) are
  skipped and counted, never an abort: one bad record must not cost the rest of the transcript;
- the session's transcript cursor (SessionInfo.transcript_cursor) remembers which transcript fed
  it and how far, so importing
  and following never add a record twice.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tokend.core.errors import InvalidParams, MessageTooLarge, TokendError
from tokend.core.transcripts.codex_rollout import parse_rollout, rollout_origin
from tokend.core.transcripts.events import (
    CompactionBoundary,
    ProviderCall,
    TranscriptEvent,
    TranscriptMessage,
    parse_transcript,
)
from tokend.core.transcripts.records import MAX_LINE_NUMBERS, Records, read_records
from tokend.core.transcripts.tail import Resume, resume_after
from tokend.core.types import TextPart
from tokend.service.session.reply_growth import grow_reply
from tokend.service.transcripts.ports import TranscriptService

log = logging.getLogger(__name__)

__all__ = ["MAX_LINE_NUMBERS", "Records", "TranscriptImporter", "read_records"]

Agent = Literal["claude-code", "codex"]
AGENTS: tuple[Agent, ...] = ("claude-code", "codex")
CURSOR_KEY = "transcript"
"""What the import cursor was called when it lived in the session's extra (before its own
column, SessionInfo.transcript_cursor). The cursor: {source (the agent), sessionId (the agent's), path,
records (complete JSON records read), lastUuid, lastParts (the last message imported, how many
of its parts), replyUuid, replyParts (the same of the last assistant message: a response
imported before it ended can still grow), replyMessage (that message's id in the session: it
gains the response's later blocks and newest usage as they come)}."""
CLAUDE_CODE_WINDOW = 200_000  # Claude Code runs Claude at the standard window unless "[1m]"
PLACEHOLDER = "(compacted by the agent: the transcript holds no summary)"


@dataclass(frozen=True)
class Origin:
    """Who wrote the transcript (the agent's session id), where, with which model and window."""

    session_id: str | None
    cwd: str | None
    model: str | None
    context_window: int | None


def parse_events(
    agent: Agent, records: Sequence[Mapping[str, Any]], *, final: bool = True
) -> list[TranscriptEvent]:
    if agent == "codex":
        return parse_rollout(records, final=final)
    return parse_transcript(records)


def transcript_origin(agent: Agent, records: Sequence[Mapping[str, Any]]) -> Origin:
    if agent == "codex":
        o = rollout_origin(records)
        return Origin(o.session_id, o.cwd, o.model, o.context_window)
    session_id = next((r["sessionId"] for r in records if _text(r.get("sessionId"))), None)
    cwd = next((r["cwd"] for r in records if _text(r.get("cwd"))), None)
    return Origin(session_id, cwd, None, None)


class TranscriptImporter:
    """Appends one transcript's events to its session; `apply` is called with everything read
    so far (the follower: again as the file grows) and appends only what the cursor has not
    seen. Counters add up over every call."""

    def __init__(
        self,
        service: TranscriptService,
        agent: Agent,
        path: Path,
        workspace_uri: str | None = None,
        context_window: int | None = None,
    ) -> None:
        self.service = service
        self.agent = agent
        self.path = path
        self.workspace_uri = workspace_uri
        self.context_window = context_window
        self.session_id: str | None = None
        self.created = False
        self.messages = self.calls = self.compactions = self.refused = 0

    async def apply(
        self, records: Sequence[Mapping[str, Any]], events: Sequence[TranscriptEvent]
    ) -> None:
        """Append what `events` (parsed from `records`) hold after the session's cursor.
        Raises InvalidParams when the transcript no longer holds the last message imported."""
        origin = transcript_origin(self.agent, records)
        cursor = self._cursor(origin)
        if self.session_id is None:
            first_call = next((e for e in events if isinstance(e, ProviderCall)), None)
            if first_call is None:
                return  # no provider call yet: the session's model is not known
            self.session_id = self._create_session(origin, first_call.model)
            self.created, cursor = True, {}
        last_uuid, last_parts = cursor.get("lastUuid"), cursor.get("lastParts")
        reply = (
            (cursor.get("replyUuid"), cursor.get("replyParts"))
            if "replyUuid" in cursor
            else (last_uuid, last_parts)  # a cursor written before replyUuid was kept
        )
        resume = resume_after(events, last_uuid, last_parts, reply)
        if resume is None:
            raise InvalidParams(
                f"{self.path} no longer holds the last message imported into session "
                f"{self.session_id}: the transcript was rewritten. Delete that session "
                f"(`tokend sessions delete {self.session_id}`) and import or follow it again"
            )
        written = _Cursor(last_uuid, last_parts, *reply, cursor.get("replyMessage"))
        try:
            await self._grow_reply(resume, written)
            await self._append_events(resume.events, written)
        finally:  # a failed append leaves the cursor after the last message that made it
            self.service.changes.update_info(
                self.session_id,
                transcript_cursor={
                    "source": self.agent,
                    "sessionId": origin.session_id,
                    "path": str(self.path.resolve()),
                    "records": len(records),
                    "lastUuid": written.uuid,
                    "lastParts": written.parts,
                    "replyUuid": written.reply_uuid,
                    "replyParts": written.reply_parts,
                    "replyMessage": written.reply_message,
                },
            )

    async def _grow_reply(self, resume: Resume, written: _Cursor) -> None:
        """The last reply imported, as the transcript has it now: its later blocks and newest
        usage (a reply imported while it streamed); its blocks appended as a message of their
        own when the reply is not in the window (refused, or compacted away)."""
        assert self.session_id is not None
        blocks = resume.continuation
        if resume.call is not None and written.reply_message is not None:
            more = blocks.parts if blocks is not None else ()
            usage = resume.call.usage
            if await grow_reply(self.service, self.session_id, written.reply_message, more, usage):
                written.reply_parts = (written.reply_parts or 0) + len(more)
                if written.uuid == written.reply_uuid:
                    written.parts = written.reply_parts
                return
        if blocks is not None:
            await self._append_message(blocks, None, written, grown=True)

    def _cursor(self, origin: Origin) -> dict[str, Any]:
        """The cursor of the session an earlier import or follower made for this transcript
        (same agent session id, or for a transcript without one, same file); {} for none."""
        if self.session_id is not None:
            saved = self.service.sessions.state(self.session_id).data.info.transcript_cursor
            return dict(saved) if saved is not None else {}
        for session_id, workspace_uri, saved in self.service.store.listings.transcript_cursors():
            if saved.get("source") != self.agent:
                continue
            same = (
                saved.get("sessionId") == origin.session_id
                if origin.session_id is not None
                else saved.get("path") == str(self.path.resolve())
            )
            if same:
                self.session_id, self.workspace_uri = session_id, workspace_uri
                return dict(saved)
        return {}

    def _create_session(self, origin: Origin, call_model: str | None) -> str:
        model = origin.model or call_model or "claude-opus-4-6"
        catalog = self.service.models.catalog_for(self.workspace_uri)
        info = catalog.find(model) or catalog.get(model.split("[", 1)[0])
        window = self.context_window or origin.context_window
        if window is None and info.provider == "anthropic" and "[1m]" not in model:
            window = min(info.context_window, CLAUDE_CODE_WINDOW)
        if self.workspace_uri is None and origin.cwd and Path(origin.cwd).is_absolute():
            self.workspace_uri = Path(origin.cwd).as_uri()
        created = self.service.sessions.create_session(
            info.name,
            title=f"{self.agent}: {self.path.name}",
            workspace_uri=self.workspace_uri,
            context_window=window,
        )
        return created.id

    async def _append_events(self, events: Sequence[TranscriptEvent], written: _Cursor) -> None:
        assert self.session_id is not None
        pending: ProviderCall | None = None
        boundary: CompactionBoundary | None = None
        for event in events:
            if isinstance(event, ProviderCall):
                pending = event
            elif isinstance(event, CompactionBoundary):
                boundary = event
            elif isinstance(event, TranscriptMessage):
                if boundary is not None:
                    at, boundary = boundary.at or event.at, None
                    summary = _text_of(event) if event.compact_summary else PLACEHOLDER
                    self.service.changes.append_boundary(self.session_id, summary, at)
                    self.compactions += 1
                    if event.compact_summary:
                        written.uuid, written.parts = event.uuid or written.uuid, None
                        written.reply_uuid = written.reply_parts = None
                        continue
                call = pending if event.role == "assistant" else None
                await self._append_message(event, call, written)
                if event.role == "assistant":
                    pending = None

    async def _append_message(
        self,
        message: TranscriptMessage,
        call: ProviderCall | None,
        written: _Cursor,
        grown: bool = False,
    ) -> str | None:
        """Append one message; one the session refuses (say, too large) is skipped, counted
        and logged, never retried forever. Its id (None when refused)."""
        assert self.session_id is not None
        appended = None
        try:
            result = await self.service.appends.append(
                self.session_id,
                message.role,
                list(message.parts),
                usage=call.usage if call else None,
                model=call.model if call else None,
                at=message.at,
            )
            self.messages += 1
            self.calls += 1 if call else 0
            appended = result.message_id
        except TokendError as exc:
            if exc.code not in (InvalidParams.code, MessageTooLarge.code):
                raise
            self.refused += 1
            log.warning("importing %s: skipped a %s message: %s", self.path, message.role, exc)
        if not message.uuid:
            return appended
        if grown:  # more blocks of the last reply: the cursor's last message stays where it is
            written.reply_parts = (written.reply_parts or 0) + len(message.parts)
            if written.uuid == message.uuid:
                written.parts = written.reply_parts
            return appended
        written.uuid, written.parts = message.uuid, len(message.parts)
        if message.role == "assistant":
            written.reply_uuid, written.reply_parts = message.uuid, len(message.parts)
            written.reply_message = appended if call else None
        return appended


@dataclass
class _Cursor:
    uuid: str | None  # the last message imported (its first record's uuid)
    parts: int | None  # how many of its parts were imported (None: all)
    reply_uuid: str | None = None  # the last assistant message imported
    reply_parts: int | None = None  # how many of its parts were imported
    reply_message: str | None = None  # its id in the session (the message with its call)


def _text_of(message: TranscriptMessage) -> str:
    return "\n".join(p.text for p in message.parts if isinstance(p, TextPart))


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)
