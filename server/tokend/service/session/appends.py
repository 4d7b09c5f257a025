"""session/append's use case: a message counted off the event loop, applied by the session's
owner in the order appends were dispatched, learnt from, and announced; idempotent under a
client-chosen message id."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from tokend.core.budget.snapshot import BudgetSnapshot
from tokend.core.errors import AlreadyStored, InvalidParams
from tokend.core.excerpt import excerpt
from tokend.core.ports import SessionMessages
from tokend.core.types import Message, Part, Role, StoredMessage, Usage
from tokend.service.counting.calibration import Calibration
from tokend.service.models.session_models import SessionModels
from tokend.service.session.count_upgrade import CountUpgrades
from tokend.service.session.listeners import SnapshotListeners
from tokend.service.session.message_checks import check_answers, check_message_id
from tokend.service.session.message_prep import MessagePrep
from tokend.service.session.sessions import Sessions
from tokend.service.session.state import SessionState
from tokend.service.session.turns import Turn
from tokend.service.workers import Workers


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What session/append answers: the message (None for a retried append whose message left
    the live context since), the snapshot, the message's tokens, and its version and id."""

    message_id: str
    version: int  # the session's version after the append
    tokens: int
    snapshot: BudgetSnapshot
    message: Message | None


class Appends:
    def __init__(
        self,
        messages: SessionMessages,
        sessions: Sessions,
        models: SessionModels,
        prep: MessagePrep,
        workers: Workers,
        listeners: SnapshotListeners,
        calibration: Calibration,
        upgrades: CountUpgrades,
    ) -> None:
        self._messages = messages  # the store's, to find a retried append's message
        self._sessions = sessions
        self._models = models
        self._prep = prep
        self._workers = workers
        self._listeners = listeners
        self._calibration = calibration
        self._upgrades = upgrades

    async def append(
        self,
        session_id: str,
        role: Role,
        parts: Sequence[Part],
        *,
        usage: Usage | None = None,
        model: str | None = None,
        if_version: int | None = None,
        duration_ms: int | None = None,
        message_id: str | None = None,
        at: datetime | None = None,
    ) -> AppendResult:
        """Append a message, counting and writing in a worker thread: the event loop stays free.
        `message_id` (client-chosen) makes the append idempotent: when a message with that id
        is already stored (a retry after a lost reply), nothing is stored and the first
        append's answer is given again.

        Order: the append takes its turn in the session's queue before its first await, so
        appends are applied in the order they were called (the order the daemon read them);
        they are counted in parallel, and each is checked against the history (a toolResult
        answering a toolCall, `if_version`) once every earlier one is applied. Cancelled
        before its write starts, it writes nothing; after, it is finished and answered."""
        state = self._sessions.state(session_id)
        turn = state.take_turn()
        try:
            return await self._append_in_turn(
                state, turn, role, parts, usage, model, if_version, duration_ms, message_id, at
            )
        finally:
            turn.release()

    async def _append_in_turn(
        self,
        state: SessionState,
        turn: Turn,
        role: Role,
        parts: Sequence[Part],
        usage: Usage | None,
        model: str | None,
        if_version: int | None,
        duration_ms: int | None,
        message_id: str | None,
        at: datetime | None = None,
    ) -> AppendResult:
        if message_id is not None:
            check_message_id(message_id)
            again = await self._stored_append(state, message_id)
            if again is not None:
                return again
        if if_version is not None and if_version < state.data.version:
            state.check_version(if_version)  # stale whatever comes before it: not counted
        data = state.data
        change = await self._workers.run(
            lambda: self._prep.prepare(
                data, role, parts, usage, model, duration_ms, message_id, at, later=True
            )
        )
        await turn.wait()
        try:  # committed with the appends queued beside it (group_commit.py); its turn given up
            applied = await state.appends.apply(
                change,
                lambda data: check_answers(data, parts),
                if_version,
                self._workers.submit,
                turn.release,
            )
        except AlreadyStored as exc:  # the same id appended meanwhile (another connection)
            again = self._answer_stored(state, message_id or "", exc.stored)
            if again is None:
                raise
            return again
        counter = self._models.counter(state.data.model)
        if self._calibration.learn(state.data.model.name, counter, applied.evolved):
            self._workers.submit(self._calibration.save)
        self._upgrades.after_append(state, change, counter)
        snapshot = self._listeners.announce(change, applied)
        message = change.message
        return AppendResult(message.id, snapshot.version, change.counts.total, snapshot, message)

    async def _stored_append(self, state: SessionState, message_id: str) -> AppendResult | None:
        """The answer of an append of `message_id` already stored, or None (not stored)."""
        stored = await self._workers.run(lambda: self._messages.find_message(message_id))
        if stored is None:
            return None
        return self._answer_stored(state, message_id, stored)

    def _answer_stored(
        self,
        state: SessionState,
        message_id: str,
        stored: StoredMessage,
    ) -> AppendResult | None:
        if stored.session_id != state.id:
            raise InvalidParams(
                f"message.id {excerpt(message_id)} is already used by another session: choose a new "
                "id for each message (a ULID or a UUID)"
            )
        if stored.version is None or stored.tokens is None:
            return None
        # The message itself while it is in the live context (the reply's `gated` comes from it).
        message = next((m for m in state.data.messages if m.id == message_id), None)
        return AppendResult(message_id, stored.version, stored.tokens, state.snapshot, message)
