"""The sessions this process has loaded, least recently used first, and what a listing shows.

Each loaded session has one owner, its SessionState (service.session.loader loads it); readers
get its immutable snapshots. Sessions nobody listens to are dropped beyond MAX_LOADED_SESSIONS
and read again from the store on demand."""

from __future__ import annotations

from collections import OrderedDict

from ulid import ULID

from tokend.core.budget.limits import input_room_tokens, output_reserve_tokens, safety_margin_tokens
from tokend.core.budget.snapshot import BudgetSnapshot
from tokend.core.errors import InvalidParams
from tokend.core.models.catalog import ModelInfo, with_context_window
from tokend.core.ports import Clock, Store
from tokend.core.types import ListedSession, SessionGauge, SessionInfo
from tokend.service.models.session_models import SessionModels
from tokend.service.session.listeners import SnapshotListeners
from tokend.service.session.loader import SessionLoader
from tokend.service.session.state import SessionState, first_figures, gauge_of

MAX_LOADED_SESSIONS = 64  # unwatched sessions kept in memory beyond this are reloaded on demand
MAX_TOKEN_COUNT = 2**31 - 1  # no token figure on the wire may exceed this (protocol.md)


def new_id() -> str:
    return str(ULID())


class Sessions:
    def __init__(
        self,
        store: Store,
        models: SessionModels,
        loader: SessionLoader,
        listeners: SnapshotListeners,
        clock: Clock,
    ) -> None:
        self._store = store
        self._models = models
        self._loader = loader
        self._listeners = listeners
        self._clock = clock
        self._loaded: OrderedDict[str, SessionState] = OrderedDict()

    def create_session(
        self,
        model: str,
        *,
        title: str | None = None,
        workspace_uri: str | None = None,
        context_window: int | None = None,
    ) -> SessionInfo:
        # An unknown model raises UnknownModel, which names the two ways to declare it.
        info = self._models.catalog_for(workspace_uri).get(model)
        if context_window is not None:
            self._check_window(info, context_window, workspace_uri)
        now = self._clock.now()
        session = SessionInfo(
            id=new_id(),
            model=model,
            created_at=now,
            updated_at=now,
            title=title,
            workspace_uri=workspace_uri,
            context_window=context_window,
        )
        models = self._models
        session = first_figures(
            session, models.model_info(session), models.config_for, models.settings_stamps
        )
        self._store.create_session(session)
        return session

    def _check_window(self, model: ModelInfo, window: int, workspace_uri: str | None) -> None:
        """A session's window must leave room for input once the reply is reserved."""
        if window <= 0 or window > MAX_TOKEN_COUNT:
            raise InvalidParams(f"contextWindow must be a positive number of tokens, not {window}")
        budget = self._models.config_for(workspace_uri).budget
        sized = with_context_window(model, window)
        reserve = output_reserve_tokens(sized, budget)
        margin = safety_margin_tokens(sized, budget)
        if input_room_tokens(sized, budget) <= 0:
            raise InvalidParams(
                f"contextWindow {window:,} leaves no room for input: {model.name} keeps "
                f"{reserve:,} tokens for its reply and {margin:,} as a safety margin; use a "
                "larger window, or lower budget.output_reserve_cap"
            )

    def state(self, session_id: str, *, deleted: bool = False) -> SessionState:
        """The owner of a session, loading it when needed (a soft-deleted one too with
        `deleted`: to restore it)."""
        state = self._loaded.get(session_id)
        if state is None:
            state = self._loaded[session_id] = self._loader.load(session_id, deleted)
            self._evict_unwatched()
        else:
            self._loaded.move_to_end(session_id)
        return state

    def _evict_unwatched(self) -> None:
        surplus = len(self._loaded) - MAX_LOADED_SESSIONS
        for session_id in list(self._loaded):
            if surplus <= 0:
                return
            if not self._listeners.has_listeners(session_id):
                del self._loaded[session_id]
                surplus -= 1

    def loaded(self, session_id: str) -> SessionState | None:
        """The session's owner when it is loaded in this process (never loads it)."""
        return self._loaded.get(session_id)

    def loaded_states(self) -> list[SessionState]:
        """Every session loaded in this process."""
        return list(self._loaded.values())

    def loaded_snapshots(self) -> list[BudgetSnapshot]:
        """The current snapshot of every session loaded in this process."""
        return [state.snapshot for state in self._loaded.values()]

    def loaded_workspaces(self) -> set[str]:
        return {
            s.data.info.workspace_uri for s in self._loaded.values() if s.data.info.workspace_uri
        }

    def forget(self, session_id: str) -> None:
        """Drop the in-memory state; the next request reads the session from the store."""
        self._loaded.pop(session_id, None)

    def reload(self, session_id: str) -> SessionState:
        self.forget(session_id)
        return self.state(session_id)

    def snapshot(self, session_id: str) -> BudgetSnapshot:
        return self.state(session_id).snapshot

    def list_sessions(
        self, workspace_uri: str | None = None, *, deleted: bool = False
    ) -> list[ListedSession]:
        """What a listing shows of the sessions, from the store (`gauge`: the one stored with
        each); with `deleted`, of the soft-deleted ones (core.ports.SessionListings.listed)."""
        return self._store.listings.listed(workspace_uri, deleted=deleted)

    def active_session_id(self, workspace_uri: str) -> str | None:
        """The workspace's session updated last; None when it has none."""
        return self._store.listings.newest(workspace_uri)

    def session_gauges(
        self, workspace_uri: str | None = None
    ) -> list[tuple[ListedSession, SessionGauge]]:
        """Every session with its gauge, newest first, without loading them (listed_gauge)."""
        listed = []
        for info in self._store.listings.listed(workspace_uri):
            gauge = self.listed_gauge(info)
            assert gauge is not None  # listed sessions are not deleted
            listed.append((info, gauge))
        return listed

    def listed_gauge(self, info: ListedSession) -> SessionGauge | None:
        """The gauge a listing shows: a loaded session's live snapshot, else the figures stored
        with its last change, else (stored before those were kept) the session loaded once;
        None for a deleted session without stored figures."""
        state = self._loaded.get(info.id)
        if state is not None:
            return gauge_of(state.snapshot)
        if info.gauge is not None or info.deleted_at is not None:
            return info.gauge
        return gauge_of(self.snapshot(info.id))
