"""Changes to a session other than appends, each applied by the session's owner and announced:
a compaction's boundary and pruned tool results, the measured context of an assembly, the
session's info, and a rebuilt snapshot when figures outside the conversation changed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from tokend.core.budget.snapshot import BudgetSnapshot
from tokend.core.ports import Clock
from tokend.core.session.changes import NewWindow, PruneParts, RecordMeasured, UpdateInfo
from tokend.core.session.data import SessionData
from tokend.core.types import ChatFile, CompactionPart, Message, SessionInfo, StoredPart
from tokend.service.models.session_models import SessionModels
from tokend.service.session.listeners import SessionEvent, SnapshotListeners
from tokend.service.session.sessions import Sessions, new_id
from tokend.service.workers import Workers


class SessionChanges:
    def __init__(
        self,
        sessions: Sessions,
        models: SessionModels,
        listeners: SnapshotListeners,
        workers: Workers,
        clock: Clock,
    ) -> None:
        self._sessions = sessions
        self._models = models
        self._listeners = listeners
        self._workers = workers
        self._clock = clock

    def summary_change(
        self,
        data: SessionData,
        summary: str,
        digest: dict[str, Any] | None,
        covered: Sequence[str],
        at: datetime | None = None,
    ) -> NewWindow:
        """The compaction boundary whose summary stands for `covered` (pure of session state;
        safe in a worker thread), dated `at` (a client's compaction) or now."""
        part = CompactionPart(summary, digest)
        counts = self._models.counter(data.model).count_parts("system", [part])
        message = Message(
            id=new_id(),
            session_id=data.id,
            role="system",
            parts=(StoredPart(new_id(), part, counts.tokens[0]),),
            created_at=at or self._clock.now(),
            summary=True,
        )
        return NewWindow(message, counts.total, frozenset(covered))

    def append_boundary(
        self, session_id: str, summary: str, at: datetime | None = None
    ) -> BudgetSnapshot:
        """A compaction boundary whose `summary` stands for the whole live context (a
        client's own compaction, e.g. an imported Claude Code transcript's, dated `at`)."""
        state = self._sessions.state(session_id)
        data = state.data
        change = self.summary_change(data, summary, None, [m.id for m in data.messages], at)
        return self._listeners.announce(change, state.apply(change))

    async def apply_compaction_async(
        self, session_id: str, change: NewWindow | PruneParts
    ) -> BudgetSnapshot:
        """Apply a compaction planned on an earlier version: messages appended meanwhile stay
        (after the summary); VersionConflict when another compaction or a rewind came first."""
        state = self._sessions.state(session_id)
        applied = await state.apply_async(change, None, self._workers.submit)
        return self._listeners.announce(change, applied)

    def prune_change(self, data: SessionData, part_ids: Sequence[str]) -> PruneParts:
        """The change that clears `part_ids` (tool results) to placeholders."""
        wanted = frozenset(part_ids)
        counter = self._models.counter(data.model)
        at = self._clock.now()
        totals: dict[str, int] = {}
        for message in data.messages:
            if any(sp.id in wanted for sp in message.parts):
                marked = tuple(
                    replace(sp, compacted_at=at) if sp.id in wanted else sp for sp in message.parts
                )
                totals[message.id] = counter.stored_counts(message.role, marked).total
        return PruneParts(wanted, at, totals)

    def set_measured(self, session_id: str, measured: dict[str, int], exact: bool) -> None:
        """Remember what the system prompt, tools, ... measured at the last assembly. Not a
        new version and not announced: an assembly is a read."""
        state = self._sessions.state(session_id)
        if dict(state.data.measured) == measured and state.data.measured_exact == exact:
            return
        change = RecordMeasured(measured, exact)
        self._listeners.announce(change, state.apply(change))

    def update_info(
        self,
        session_id: str,
        *,
        title: str | None = None,
        extra: dict[str, object] | None = None,
        chat_files: tuple[ChatFile, ...] | None = None,
        transcript_cursor: Mapping[str, object] | None = None,
    ) -> SessionInfo:
        """Set the title, the client's `extra` keys (merged; None removes a key), the chat
        files, the transcript cursor (None: each left as it is), through the session's owner."""
        state = self._sessions.state(session_id)
        state.apply(UpdateInfo(title, extra or {}, chat_files, transcript_cursor))
        return state.data.info

    def republish(self, session_id: str) -> BudgetSnapshot:
        """Rebuild the session's snapshot under the current settings and tell its listeners
        (figures outside the conversation changed: a chat file edited, the settings)."""
        state = self._sessions.state(session_id)
        snapshot = state.refresh()
        self._listeners.tell(SessionEvent(None, state.data, snapshot))
        return snapshot
