"""Other daemons sharing the database (PostgreSQL): the changes they commit reach the sessions
loaded here, which are brought up to date and their listeners told (budget/didChange)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tokend.core.budget.snapshot import BudgetSnapshot
from tokend.core.errors import SessionNotFound
from tokend.core.ports import RemoteChanges
from tokend.core.session.data import SessionData
from tokend.service.session.listeners import SessionEvent, SnapshotListeners
from tokend.service.session.sessions import Sessions
from tokend.service.workers import Workers


class RemoteFeed:
    def __init__(
        self,
        changes: RemoteChanges | None,
        sessions: Sessions,
        listeners: SnapshotListeners,
        workers: Workers,
    ) -> None:
        self._changes = changes  # the store's feed of other daemons' commits (None: SQLite)
        self._sessions = sessions
        self._listeners = listeners
        self._workers = workers

    def listen(self, loop: asyncio.AbstractEventLoop) -> Callable[[], None] | None:
        """Follow the changes other daemons sharing the database commit: each loaded session
        they move is reloaded and its listeners told (budget/didChange), on `loop`. Returns the
        stop function, or None when the store has no such feed (SQLite)."""
        feed = self._changes
        if feed is None:
            return None
        tasks: set[asyncio.Task[None]] = set()

        def start(session_id: str | None, version: int) -> None:
            task = loop.create_task(self.remote_changed(session_id, version))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

        def on_change(session_id: str | None, version: int) -> None:  # the feed's thread
            loop.call_soon_threadsafe(start, session_id, version)

        return feed.listen(on_change)

    async def remote_changed(self, session_id: str | None, version: int) -> None:
        """Another daemon moved `session_id` to `version` (None: anything may have changed):
        reload what is loaded and behind, and tell its listeners."""
        sessions = self._sessions
        targets = [s.id for s in sessions.loaded_states()] if session_id is None else [session_id]
        for target in targets:
            state = sessions.loaded(target)
            if state is None:
                continue  # not loaded here: the next request reads it from the store
            before = state.data
            try:
                changed = await state.resync_async(
                    None if session_id is None else version, self._workers.run
                )
            except SessionNotFound:  # deleted by the other daemon
                sessions.forget(target)
                continue
            if changed:
                self._listeners.tell(_reloaded(before, state.data, state.snapshot))


def _reloaded(before: SessionData, data: SessionData, snapshot: BudgetSnapshot) -> SessionEvent:
    """The event of a session read again after another daemon moved it: what it appended are
    the live messages this daemon did not hold (no change: the other daemon applied it)."""
    held = {m.id for m in before.messages}
    return SessionEvent(None, data, snapshot, tuple(m for m in data.messages if m.id not in held))
