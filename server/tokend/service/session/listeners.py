"""Who hears of a session's changes: callbacks registered per session id, or for every session.

Each hears a SessionEvent: the change the session's owner applied, the data it produced and
that data's snapshot, so a listener never reads the session again to learn what changed (and
never sees data newer than the snapshot it was given)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from tokend.core.budget.snapshot import BudgetSnapshot
from tokend.core.session.changes import AppendMessage, Change
from tokend.core.session.data import SessionData
from tokend.core.types import Message
from tokend.service.session.state import Applied

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SessionEvent:
    """A session's change as its owner applied it. `change` is None when the session was read
    again instead (another daemon moved it, or figures outside the conversation changed);
    `appended` holds the messages the change added to the live context, oldest first (an
    append's message; what another daemon appended)."""

    change: Change | None
    data: SessionData
    snapshot: BudgetSnapshot
    appended: tuple[Message, ...] = ()

    @property
    def session_id(self) -> str:
        return self.data.id


Listener = Callable[[SessionEvent], None]


def applied_event(change: Change, applied: Applied) -> SessionEvent:
    """The event of `change` applied by a session's owner."""
    appended = (change.message,) if isinstance(change, AppendMessage) else ()
    return SessionEvent(change, applied.evolved.data, applied.snapshot, appended)


class SnapshotListeners:
    """The listeners of each session. A listener that raises is logged and never stops the
    others; a listener may unsubscribe (itself or another) while being told."""

    def __init__(self) -> None:
        self._by_session: dict[str, list[Listener]] = {}
        self._every: list[Listener] = []  # told of every session's changes

    def subscribe_every(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` with each change of ANY session; returns the unsubscribe."""
        self._every.append(listener)
        return lambda: self._every.remove(listener) if listener in self._every else None

    def subscribe(self, session_id: str, listener: Listener) -> Callable[[], None]:
        """Call `listener` with each change of the session; returns the unsubscribe."""
        self._by_session.setdefault(session_id, []).append(listener)

        def unsubscribe() -> None:
            listeners = self._by_session.get(session_id, [])
            if listener in listeners:
                listeners.remove(listener)
            if not listeners:
                self._by_session.pop(session_id, None)

        return unsubscribe

    def has_listeners(self, session_id: str) -> bool:
        return bool(self._by_session.get(session_id))

    def announce(self, change: Change, applied: Applied) -> BudgetSnapshot:
        """Tell the session's listeners about `change`, applied by its owner (unless the change
        is a read to the user: the measured context); the snapshot it produced."""
        if applied.broadcast:
            self.tell(applied_event(change, applied))
        return applied.snapshot

    def tell(self, event: SessionEvent) -> None:
        session_id = event.session_id
        for listener in [*self._by_session.get(session_id, ()), *self._every]:
            try:
                listener(event)
            except Exception:  # one broken listener never stops the others
                log.exception("budget listener failed for session %s", session_id)
