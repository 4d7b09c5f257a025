"""One followed transcript: read what the agent appended, import what has settled into the
transcript's session, remember how far (the same cursor `tokend import` keeps, so following and
importing never add a record twice, and a restarted follower resumes where it stopped).

Reading and parsing run in the service's worker threads; appends go through the session's
owner like any client's (counted off the event loop), so every watching connection gets
`budget/didChange`. Like `tokend import`, a followed session is never compacted by tokend: the
agent compacts its own context, and its compactions are imported as boundaries.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tokend.core.codex_rollout import parse_rollout, rollout_origin
from tokend.core.errors import InvalidParams, MessageTooLarge, TokendError
from tokend.core.transcript import (
    CompactionBoundary,
    ProviderCall,
    TranscriptEvent,
    TranscriptMessage,
    parse_transcript,
)
from tokend.core.transcript_tail import resume_after, settled_count
from tokend.core.types import TextPart
from tokend.service.service import TokendService

log = logging.getLogger(__name__)

Agent = Literal["claude-code", "codex"]
AGENTS: tuple[Agent, ...] = ("claude-code", "codex")
CURSOR_KEY = "transcript"
"""Session extra key of the import cursor, shared with `tokend import` (commands/importer.py):
{source, sessionId (the agent's), path, records, lastUuid, lastParts}."""
CLAUDE_CODE_WINDOW = 200_000  # Claude Code runs Claude at the standard window unless "[1m]"


@dataclass(frozen=True)
class Origin:
    """Who wrote the transcript (the agent's session id), where, with which model and window."""

    session_id: str | None
    cwd: str | None
    model: str | None
    context_window: int | None


@dataclass(frozen=True)
class TailStatus:
    """A followed transcript as follow/list shows it."""

    path: str
    session_id: str | None
    workspace_uri: str | None
    records: int  # complete records read so far
    messages: int  # appended by this follower
    calls: int
    compactions: int
    error: str | None


class TranscriptTail:
    """Follows one transcript file into one session. `sync` is called whenever the file may
    have grown; calls never overlap (the follower awaits each)."""

    def __init__(
        self, service: TokendService, agent: Agent, path: Path, workspace_uri: str | None = None
    ) -> None:
        self.service = service
        self.agent = agent
        self.path = path
        self.workspace_uri = workspace_uri
        self.session_id: str | None = None
        self.records: list[Mapping[str, Any]] = []
        self.messages = self.calls = self.compactions = 0
        self.error: str | None = None
        self._offset = 0
        self._settled = 0  # records already covered by an import

    def status(self) -> TailStatus:
        return TailStatus(
            str(self.path),
            self.session_id,
            self.workspace_uri,
            len(self.records),
            self.messages,
            self.calls,
            self.compactions,
            self.error,
        )

    @property
    def waiting(self) -> bool:
        """Records are read that no import covered yet (a response still being written)."""
        return self._settled < len(self.records)

    async def sync(self, *, quiet: bool = False) -> int:
        """Read what the file gained and import what has settled (everything when `quiet`: the
        agent stopped writing for a while). Returns how many messages were appended."""
        grew = await self.service.run(self._read_new)
        if not grew and not (quiet and self.waiting):
            return 0
        records = list(self.records)
        settled, events = await self.service.run(lambda: self._parse(records, quiet))
        before = self.messages + self.compactions
        try:
            await self._import(records, events)
            self._settled = settled
            self.error = None
        except TokendError as exc:
            self.error = exc.message
            log.warning("following %s: %s", self.path, exc.message)
        return self.messages + self.compactions - before

    # -- reading ------------------------------------------------------------------------------

    def _read_new(self) -> bool:
        """Parse the complete lines appended since the last read (a worker thread). A file
        that shrank was rewritten: it is read again from the start."""
        try:
            size = self.path.stat().st_size
            if size < self._offset:
                self._offset, self.records, self._settled = 0, [], 0
            if size == self._offset:
                return False
            with self.path.open("rb") as stream:
                stream.seek(self._offset)
                chunk = stream.read(size - self._offset)
        except OSError as exc:
            self.error = f"cannot read {self.path}: {exc.strerror or exc}"
            return False
        end = chunk.rfind(b"\n") + 1  # a last line without its newline is still being written
        self._offset += end
        for line in chunk[:end].splitlines():
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                log.warning("following %s: skipped a line that is not JSON", self.path)
                continue
            if isinstance(record, dict):
                self.records.append(record)
        return end > 0

    def _parse(
        self, records: Sequence[Mapping[str, Any]], quiet: bool
    ) -> tuple[int, list[TranscriptEvent]]:
        """(records covered, their events): a Claude Code transcript up to its last ended
        response (all when quiet); a Codex rollout up to its last response with usage."""
        if self.agent == "codex":
            return len(records), parse_rollout(records, final=False)
        settled = len(records) if quiet else settled_count(records)
        return settled, parse_transcript(records[:settled])

    def origin(self, records: Sequence[Mapping[str, Any]]) -> Origin:
        if self.agent == "codex":
            o = rollout_origin(records)
            return Origin(o.session_id, o.cwd, o.model, o.context_window)
        session_id = next((r["sessionId"] for r in records if _text(r.get("sessionId"))), None)
        cwd = next((r["cwd"] for r in records if _text(r.get("cwd"))), None)
        return Origin(session_id, cwd, None, None)

    # -- importing ----------------------------------------------------------------------------

    async def _import(
        self, records: Sequence[Mapping[str, Any]], events: Sequence[TranscriptEvent]
    ) -> None:
        origin = self.origin(records)
        cursor = self._cursor(origin)
        if self.session_id is None:
            first_call = next((e for e in events if isinstance(e, ProviderCall)), None)
            if first_call is None:
                return  # no provider call yet: the session's model is not known
            self.session_id = self._create_session(origin, first_call.model)
            cursor = {}
        resume = resume_after(events, cursor.get("lastUuid"), cursor.get("lastParts"))
        if resume is None:
            raise TokendError(
                f"{self.path} no longer holds the last message imported into session "
                f"{self.session_id}: the transcript was rewritten. Delete that session "
                f"(`tokend sessions delete {self.session_id}`) and follow it again"
            )
        written = _Cursor(cursor.get("lastUuid"), cursor.get("lastParts"))
        try:
            if resume.continuation is not None:
                await self._append_message(resume.continuation, None, written, grown=True)
            await self._append_events(resume.events, written)
        finally:
            self.service.update_info(
                self.session_id,
                extra={
                    CURSOR_KEY: {
                        "source": self.agent,
                        "sessionId": origin.session_id,
                        "path": str(self.path.resolve()),
                        "records": len(records),
                        "lastUuid": written.uuid,
                        "lastParts": written.parts,
                    }
                },
            )

    def _cursor(self, origin: Origin) -> dict[str, Any]:
        """The cursor of the session an earlier import or follower made for this transcript
        (same agent session id, or for a transcript without one, same file); {} for none."""
        if self.session_id is not None:
            saved = self.service.state(self.session_id).data.info.extra.get(CURSOR_KEY)
            return dict(saved) if isinstance(saved, dict) else {}
        for info in self.service.list_sessions(None):
            saved = info.extra.get(CURSOR_KEY)
            if not isinstance(saved, dict) or saved.get("source") != self.agent:
                continue
            same = (
                saved.get("sessionId") == origin.session_id
                if origin.session_id is not None
                else saved.get("path") == str(self.path.resolve())
            )
            if same:
                self.session_id = info.id
                self.workspace_uri = info.workspace_uri
                return dict(saved)
        return {}

    def _create_session(self, origin: Origin, call_model: str | None) -> str:
        model = origin.model or call_model or "claude-opus-4-6"
        catalog = self.service.models.catalog_for(self.workspace_uri)
        info = catalog.find(model) or catalog.get(model.split("[", 1)[0])
        window = origin.context_window
        if window is None and info.provider == "anthropic" and "[1m]" not in model:
            window = min(info.context_window, CLAUDE_CODE_WINDOW)
        if self.workspace_uri is None and origin.cwd and Path(origin.cwd).is_absolute():
            self.workspace_uri = Path(origin.cwd).as_uri()
        created = self.service.create_session(
            info.name,
            title=f"{self.agent}: {self.path.name}",
            workspace_uri=self.workspace_uri,
            context_window=window,
        )
        return created.id

    async def _append_events(self, events: Sequence[TranscriptEvent], written: _Cursor) -> None:
        """The importer's rules: usage goes to the assistant message after its call; a
        compaction boundary starts a window whose first message is the agent's summary."""
        assert self.session_id is not None
        pending: ProviderCall | None = None
        boundary_next = False
        for event in events:
            if isinstance(event, ProviderCall):
                pending = event
            elif isinstance(event, CompactionBoundary):
                boundary_next = True
            elif isinstance(event, TranscriptMessage):
                if boundary_next:
                    boundary_next = False
                    summary = _text_of(event) if event.compact_summary else "(compacted)"
                    self.service.append_boundary(self.session_id, summary)
                    self.compactions += 1
                    if event.compact_summary:
                        written.uuid, written.parts = event.uuid or written.uuid, None
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
    ) -> None:
        """Append one message; one the session refuses (say, too large) is skipped and logged,
        never retried forever."""
        assert self.session_id is not None
        try:
            await self.service.append_async(
                self.session_id,
                message.role,
                list(message.parts),
                usage=call.usage if call else None,
                model=call.model if call else None,
            )
            self.messages += 1
            self.calls += 1 if call else 0
        except TokendError as exc:
            if exc.code not in (InvalidParams.code, MessageTooLarge.code):  # skip it
                raise
            log.warning("following %s: skipped a %s message: %s", self.path, message.role, exc)
        if message.uuid:
            previous = written.parts if grown and written.uuid == message.uuid else 0
            written.uuid, written.parts = message.uuid, (previous or 0) + len(message.parts)


@dataclass
class _Cursor:
    uuid: str | None  # the last message imported (its first record's uuid)
    parts: int | None  # how many of its parts were imported (None: all)


def _text_of(message: TranscriptMessage) -> str:
    return "\n".join(p.text for p in message.parts if isinstance(p, TextPart))


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)
