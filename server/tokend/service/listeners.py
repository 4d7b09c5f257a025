"""Who hears of a session's new budget snapshot: callbacks registered per session id."""

from __future__ import annotations

import logging
from collections.abc import Callable

from tokend.core.snapshot import BudgetSnapshot
from tokend.service.session_state import Applied, SessionState

log = logging.getLogger(__name__)

Listener = Callable[[BudgetSnapshot], None]


class SnapshotListeners:
    """The listeners of each session. A listener that raises is logged and never stops the
    others; a listener may unsubscribe (itself or another) while being told."""

    def __init__(self) -> None:
        self._by_session: dict[str, list[Listener]] = {}
        self._every: list[Listener] = []  # told of every session's snapshots

    def subscribe_every(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` with each new snapshot of ANY session; returns the unsubscribe."""
        self._every.append(listener)
        return lambda: self._every.remove(listener) if listener in self._every else None

    def subscribe(self, session_id: str, listener: Listener) -> Callable[[], None]:
        """Call `listener` with each new snapshot of the session; returns the unsubscribe."""
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

    def announce(self, state: SessionState, applied: Applied) -> BudgetSnapshot:
        """Tell the session's listeners about a change its owner applied (unless the change is a
        read to the user: the measured context); the snapshot it produced."""
        if applied.broadcast:
            self.tell(state.id, applied.snapshot)
        return applied.snapshot

    def tell(self, session_id: str, snapshot: BudgetSnapshot) -> None:
        for listener in [*self._by_session.get(session_id, ()), *self._every]:
            try:
                listener(snapshot)
            except Exception:  # one broken listener never stops the others
                log.exception("budget listener failed for session %s", session_id)
