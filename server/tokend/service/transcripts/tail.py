"""One followed transcript: read what the agent appended, import what has settled into the
transcript's session, remember how far (the same cursor `tokend import` keeps, so following and
importing never add a record twice, and a restarted follower resumes where it stopped).

Reading and parsing run in the service's worker threads; appends go through the session's
owner like any client's (counted off the event loop), so every watching connection gets
`budget/didChange`. Like `tokend import`, a followed session is never compacted by tokend: the
agent compacts its own context, and its compactions are imported as boundaries.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokend.core.errors import TokendError
from tokend.core.transcripts.events import TranscriptEvent
from tokend.service.transcripts.importer import (
    AGENTS,
    CURSOR_KEY,
    Agent,
    TranscriptImporter,
    parse_events,
    read_records,
)
from tokend.service.transcripts.ports import TranscriptService

log = logging.getLogger(__name__)

__all__ = ["AGENTS", "CURSOR_KEY", "Agent", "TailStatus", "TranscriptTail"]


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
    caught_up: bool = False  # what the file held when following began is read


class TranscriptTail:
    """Follows one transcript file into one session. `sync` is called whenever the file may
    have grown; calls never overlap (the follower awaits each)."""

    def __init__(
        self, service: TranscriptService, agent: Agent, path: Path, workspace_uri: str | None = None
    ) -> None:
        self.service = service
        self.agent = agent
        self.path = path
        self.importer = TranscriptImporter(service, agent, path, workspace_uri)
        self.records: list[Mapping[str, Any]] = []
        self.skipped = 0  # lines that were not JSON records
        self.error: str | None = None
        self._offset = 0
        self._settled = 0  # records already covered by an import
        self.caught_up = False  # set by the follower after its first sync

    @property
    def session_id(self) -> str | None:
        return self.importer.session_id

    @property
    def workspace_uri(self) -> str | None:
        return self.importer.workspace_uri

    @property
    def messages(self) -> int:
        return self.importer.messages

    @property
    def calls(self) -> int:
        return self.importer.calls

    @property
    def compactions(self) -> int:
        return self.importer.compactions

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
            caught_up=self.caught_up,
        )

    @property
    def waiting(self) -> bool:
        """Records are read that no import covered yet (the last import failed)."""
        return self._settled < len(self.records)

    async def sync(self) -> int:
        """Read what the file gained and import it at once, a response still being written
        included (its later blocks and its growing usage come with the next syncs), and what a
        failed import left. Returns how many messages were appended."""
        grew = await self.service.workers.run(self._read_new)
        if not grew and not self.waiting:
            return 0
        records = list(self.records)
        events = await self.service.workers.run(lambda: self._parse(records))
        before = self.messages + self.compactions
        try:
            await self.importer.apply(records, events)
            self._settled = len(records)
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
        read = read_records(chunk[:end].splitlines())
        if read.skipped:
            self.skipped += read.skipped
            log.warning("following %s: skipped %d lines that are not JSON", self.path, read.skipped)
        self.records.extend(read.records)
        return end > 0

    def _parse(self, records: Sequence[Mapping[str, Any]]) -> list[TranscriptEvent]:
        """The events of the records (a Codex rollout's up to its last response with usage)."""
        return parse_events(self.agent, records, final=False)
