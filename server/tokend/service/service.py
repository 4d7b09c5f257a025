"""TokendService: the one shared core every connection talks to.

Methods are synchronous and run on the event-loop thread, so changes to one session are
serialized. Each change publishes a new frozen snapshot and tells the session's listeners.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from ulid import ULID

from tokend.core.budget import output_reserve_tokens, safety_margin_tokens
from tokend.core.calibration import Calibrator
from tokend.core.catalog import Catalog, ModelInfo
from tokend.core.config import TokendConfig
from tokend.core.errors import InvalidParams, MessageTooLarge, SessionNotFound, VersionConflict
from tokend.core.ports import Clock, CountCache, Store
from tokend.core.pricing import cost_usd
from tokend.core.snapshot import BudgetSnapshot
from tokend.core.types import (
    CompactionPart,
    ContentClass,
    Message,
    Part,
    Role,
    SessionInfo,
    StoredPart,
    Usage,
)
from tokend.service.counting import ModelCounter
from tokend.service.listeners import Listener, SnapshotListeners
from tokend.service.live import LiveSession
from tokend.service.loading import load_session, measured_changes
from tokend.service.models import SessionModels

MAX_LOADED_SESSIONS = 64  # unwatched sessions kept in memory beyond this are reloaded on demand


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


def new_id() -> str:
    return str(ULID())


class TokendService:
    def __init__(
        self,
        store: Store,
        catalog: Catalog,
        config: TokendConfig,
        *,
        cache: CountCache | None = None,
        clock: Clock | None = None,
        workspace_catalog: Callable[[str], Catalog] | None = None,
    ) -> None:
        self.store = store
        self.catalog = catalog
        self.config = config
        self.clock: Clock = clock or SystemClock()
        # Loaded sessions, least recently used first; unwatched ones beyond the limit are dropped
        # (they reload from the store on the next request).
        self._sessions: OrderedDict[str, LiveSession] = OrderedDict()
        self._listeners = SnapshotListeners()
        self.calibrator = Calibrator.from_state(store.load_calibration())
        self.models = SessionModels(catalog, self.calibrator, cache, workspace_catalog)

    # -- sessions ---------------------------------------------------------------------------

    def create_session(
        self,
        model: str,
        *,
        title: str | None = None,
        workspace_uri: str | None = None,
        context_window: int | None = None,
    ) -> SessionInfo:
        if context_window is not None and context_window <= 0:
            raise InvalidParams("contextWindow must be a positive number of tokens")
        # An unknown model raises UnknownModel, which names the two ways to declare it.
        self.models.catalog_for(workspace_uri).get(model)
        now = self.clock.now()
        info = SessionInfo(
            id=new_id(),
            model=model,
            created_at=now,
            updated_at=now,
            title=title,
            workspace_uri=workspace_uri,
            context_window=context_window,
        )
        self.store.create_session(info)
        return info

    def session(self, session_id: str) -> LiveSession:
        live = self._sessions.get(session_id)
        if live is None:
            live = self._load(session_id)
            self._sessions[session_id] = live
            self._evict_unwatched()
        else:
            self._sessions.move_to_end(session_id)
        return live

    def _evict_unwatched(self) -> None:
        surplus = len(self._sessions) - MAX_LOADED_SESSIONS
        for session_id in list(self._sessions):
            if surplus <= 0:
                return
            if not self._listeners.has_listeners(session_id):
                del self._sessions[session_id]
                surplus -= 1

    def counter(self, model: ModelInfo) -> ModelCounter:
        """The token counter of `model` (shared by its sessions)."""
        return self.models.counter(model)

    def _load(self, session_id: str) -> LiveSession:
        info = self.store.get_session(session_id)
        if info is None:
            raise SessionNotFound(
                f"no session {session_id!r}: create one with session/create, or list them with session/list"
            )
        model = self.models.model_info(info)
        return load_session(self.store, self.config, info, model, self.counter(model))

    # -- changes ----------------------------------------------------------------------------

    def append(
        self,
        session_id: str,
        role: Role,
        parts: Sequence[Part],
        *,
        usage: Usage | None = None,
        model: str | None = None,
        if_version: int | None = None,
    ) -> tuple[Message, BudgetSnapshot]:
        live = self.session(session_id)
        if if_version is not None and if_version != live.version:
            raise VersionConflict(
                f"session {session_id} is at version {live.version}, not {if_version}: "
                "fetch budget/snapshot and retry",
                {"currentVersion": live.version},
            )
        counter = self.counter(live.model)
        counts = counter.count_parts(role, parts)
        limit = self.input_limit(live)
        if counts.total > limit:
            raise MessageTooLarge(
                f"the message is {counts.total:,} tokens but a {live.model.name} request holds at "
                f"most {limit:,} input tokens: split it, or attach the file by path",
                {"tokens": counts.total, "limit": limit},
            )
        now = self.clock.now()
        message_id = new_id()
        stored = tuple(
            StoredPart(id=new_id(), part=p, tokens=t)
            for p, t in zip(parts, counts.tokens, strict=True)
        )
        catalog = self.models.catalog_for(live.info.workspace_uri)
        cost = cost_usd(catalog.get(model or live.info.model), usage) if usage else None
        message = Message(
            id=message_id,
            session_id=session_id,
            role=role,
            parts=stored,
            created_at=now,
            model=model or (live.info.model if role == "assistant" else None),
            usage=usage,
            cost_usd=cost,
            completed_at=now if usage else None,
        )
        self.store.append_message(message)
        # Calibration learns from what was added between two provider calls (estimated models).
        observed = None
        if live.anchored and live.last_call is not None and not counter.exact:
            observed = (
                live.added_chars_since_call.copy(),
                live.added_since_call,
                live.anchor_tokens(),
            )
        call = live.add_message(message, counts.total, counts.chars_by_class, cost or 0.0)
        if call is not None and observed is not None:
            self._calibrate(live.model.name, call.context_tokens, *observed)
        return message, self._changed(live)

    def _calibrate(
        self,
        model: str,
        actual_context: int,
        chars_by_class: Counter[ContentClass],
        estimated_added: int,
        anchor: int,
    ) -> None:
        """`actual_context - anchor` is what the provider counted for the added messages."""
        actual_added = actual_context - anchor
        if actual_added > 0 and estimated_added > 0:
            self.calibrator.observe(model, chars_by_class, estimated_added, actual_added)
            self.store.save_calibration(self.calibrator.to_state())

    def append_boundary(self, session_id: str, summary: str) -> BudgetSnapshot:
        """Start a new window whose first message holds `summary` (a compaction boundary)."""
        live = self.session(session_id)
        counter = self.counter(live.model)
        counts = counter.count_parts("user", [CompactionPart(summary)])
        now = self.clock.now()
        message = Message(
            id=new_id(),
            session_id=session_id,
            role="user",
            parts=(StoredPart(new_id(), CompactionPart(summary), counts.tokens[0]),),
            created_at=now,
            summary=True,
        )
        self.store.append_message(message)
        live.compactions += 1
        self.store.update_session(
            session_id, compacted_at=now, extra={**live.info.extra, "compactions": live.compactions}
        )
        old = self._sessions.pop(session_id)
        fresh = self.session(session_id)
        fresh.errors = old.errors  # the verification metric spans windows
        return self._changed(fresh)

    def prune_parts(self, session_id: str, part_ids: Sequence[str]) -> BudgetSnapshot:
        """Mark parts compacted (assembly shows a placeholder); the originals stay in the store."""
        live = self.session(session_id)
        now = self.clock.now()
        wanted = set(part_ids)
        self.store.mark_parts_compacted(wanted, now)
        live.compactions += 1
        extra = {**live.info.extra, "compactions": live.compactions}
        self.store.update_session(session_id, compacted_at=now, extra=extra)
        live.info = replace(live.info, compacted_at=now, extra=extra)
        counter = self.counter(live.model)
        for i, message in enumerate(live.messages):
            if not any(sp.id in wanted for sp in message.parts):
                continue
            parts = tuple(
                replace(sp, compacted_at=now) if sp.id in wanted else sp for sp in message.parts
            )
            live.messages[i] = replace(message, parts=parts)
            live.message_tokens[message.id] = counter.stored_total(message.role, parts)
        # Right after a compaction no provider figure describes the context: count it whole.
        live.anchored = False
        live.version += 1
        return self._changed(live)

    def set_measured(self, session_id: str, measured: dict[str, int], exact: bool) -> None:
        """Remember what the system prompt, tools, ... measured at the last assembly."""
        live = self.session(session_id)
        if measured == live.measured:
            return
        live.measured = dict(measured)
        live.measured_exact = exact
        extra = {
            **live.info.extra,
            "measured": live.measured,
            "measuredChanges": measured_changes(live.info) + 1,
        }
        self.store.update_session(session_id, extra=extra)
        live.info = _with_extra(live.info, extra)
        live.version += 1
        self._changed(live)

    def reload(self, session_id: str) -> LiveSession:
        """Drop the in-memory state and read the session again from the store."""
        self._sessions.pop(session_id, None)
        return self.session(session_id)

    # -- reads ------------------------------------------------------------------------------

    def snapshot(self, session_id: str) -> BudgetSnapshot:
        live = self.session(session_id)
        assert live.snapshot is not None
        return live.snapshot

    def loaded_snapshots(self) -> list[BudgetSnapshot]:
        """The current snapshot of every session loaded in this process."""
        return [live.snapshot for live in self._sessions.values() if live.snapshot is not None]

    def loaded_workspaces(self) -> set[str]:
        return {
            live.info.workspace_uri for live in self._sessions.values() if live.info.workspace_uri
        }

    def list_sessions(self, workspace_uri: str | None = None) -> list[SessionInfo]:
        return self.store.list_sessions(workspace_uri)

    def input_limit(self, live: LiveSession) -> int:
        """Tokens a request may hold: the window less the output reserve, and less the safety
        margin when counts are estimates (no local tokenizer for the model)."""
        model = live.model
        limit = model.context_window - output_reserve_tokens(model, self.config.budget)
        if not self.counter(model).exact:
            limit -= safety_margin_tokens(model, self.config.budget)
        return max(0, limit)

    # -- notifications ----------------------------------------------------------------------

    def subscribe(self, session_id: str, listener: Listener) -> Callable[[], None]:
        """Call `listener` with each new snapshot of the session; returns the unsubscribe."""
        return self._listeners.subscribe(session_id, listener)

    def _changed(self, live: LiveSession) -> BudgetSnapshot:
        snapshot = live.publish()
        self._listeners.tell(live.id, snapshot)
        return snapshot

    def close(self) -> None:
        self.store.save_calibration(self.calibrator.to_state())
        self.store.close()


def _with_extra(info: SessionInfo, extra: dict[str, Any]) -> SessionInfo:
    return replace(info, extra=extra)
