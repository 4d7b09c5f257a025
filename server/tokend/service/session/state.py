"""SessionState: the one owner of a loaded session (gopls's Session/Snapshot, in our terms).

Every change goes through `apply(change, if_version)` (or `apply_async` on the daemon's event
loop): the version is checked, the next SessionData is computed by `core.session.evolve.evolve`,
the change is persisted in ONE transaction, and only then is the new immutable data and its
snapshot published. Readers take `data` / `snapshot`; they never see half an update, and
nothing else writes a session's state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, TypeVar

from tokend.core.assembly.render_cache import RenderCache
from tokend.core.budget.snapshot import BudgetSnapshot
from tokend.core.commit import SessionCommit
from tokend.core.errors import ChangedElsewhere, VersionConflict
from tokend.core.models.catalog import ModelInfo
from tokend.core.ports import Store
from tokend.core.session.changes import (
    Change,
    MarkRetired,
    NewWindow,
    RecordMeasured,
    Rewind,
    UpdateInfo,
)
from tokend.core.session.data import SessionData
from tokend.core.session.evolve import Evolved, evolve
from tokend.core.session.gauge import gauge_snapshot
from tokend.core.session.gauge_state import gauge_state_json
from tokend.core.session.message_log import MessageLog
from tokend.core.settings.tables import TokendConfig
from tokend.core.statusline.row import KEY as STATUS_KEY
from tokend.core.statusline.row import status_row
from tokend.core.types import AnchorDelta, SessionFigures, SessionGauge, SessionInfo
from tokend.service.session.applied import Applied as Applied
from tokend.service.session.change_commit import change_commit
from tokend.service.session.group_commit import AppendQueue
from tokend.service.session.turns import Submit, Turn, Turns, committed

T = TypeVar("T")
Decorate = Callable[[SessionData, BudgetSnapshot], BudgetSnapshot]
Reload = Callable[[], SessionData]
Worker = Callable[[Callable[[], T]], Awaitable[T]]


class SessionState:
    def __init__(
        self,
        data: SessionData,
        store: Store,
        config: Callable[[], TokendConfig],
        decorate: Decorate | None = None,
        reload: Reload | None = None,
        settings_key: Callable[[], list[Any] | None] | None = None,
    ) -> None:
        self._data = data
        self._settings_key = settings_key  # the config files `config` was read from, stamped
        self._reload = reload
        self._store = store
        self._config = config
        self._decorate = decorate
        self._snapshot = self._gauge(data)
        self.render_cache = RenderCache()  # wire messages by id, for warm assemblies
        self.appends = AppendQueue(self)  # appends committed together (group_commit.py)
        self.lock = asyncio.Lock()  # serializes apply_async; reads never wait on it
        # One compaction at a time per session (appends go on meanwhile; they take `lock`).
        self.compacting = asyncio.Lock()
        self._append_turns = Turns()  # appends are applied in the order they were dispatched

    def _gauge(self, data: SessionData) -> BudgetSnapshot:
        """The snapshot of `data`, with what comes from outside the conversation (spend
        warnings, rate headroom)."""
        config = self._config()
        snapshot = gauge_snapshot(data, config.compaction, config.budget)
        return self._decorate(data, snapshot) if self._decorate is not None else snapshot

    @property
    def id(self) -> str:
        return self._data.id

    @property
    def data(self) -> SessionData:
        return self._data

    @property
    def snapshot(self) -> BudgetSnapshot:
        return self._snapshot

    def refresh(self) -> BudgetSnapshot:
        """Rebuild the snapshot after the workspace settings changed (no new version)."""
        self._snapshot = self._gauge(self._data)
        return self._snapshot

    def take_turn(self) -> Turn:
        """A place in the session's queue of appends (service.session.turns): take it when the request
        is dispatched, wait for it before applying, release it whatever happens."""
        return self._append_turns.take()

    def check_version(self, if_version: int | None, data: SessionData | None = None) -> None:
        """VersionConflict unless `if_version` is None or the version of `data` (the
        session's data as published when None)."""
        version = (self._data if data is None else data).version
        if if_version is not None and if_version != version:
            raise VersionConflict(
                f"session {self.id} is at version {version}, not {if_version}: "
                "fetch budget/snapshot and retry",
                {"currentVersion": version},
            )

    def apply(self, change: Change, if_version: int | None = None) -> Applied:
        """Check, evolve, persist (one transaction), publish; synchronously. When another
        daemon sharing the database moved the session meanwhile, the change is applied to the
        session as stored, under its lock (VersionConflict when `if_version` is now stale)."""
        self.check_version(if_version)
        applied, persist = self._next(change)
        try:
            persist()
        except ChangedElsewhere:
            if self._reload is None:
                raise
            applied = self._apply_held(change, if_version)
            self.render_cache.clear()
        return self.publish(applied, change)

    async def apply_async(
        self, change: Change, if_version: int | None, submit: Submit[Any]
    ) -> Applied:
        """As apply, with the store write run in a worker thread by `submit` (off the event
        loop). Concurrent calls are applied one at a time, each against the version the
        previous left.

        The commit point is the worker thread starting the write: a cancel of the awaiting
        task before it raises CancelledError and changes nothing; after it, the write is
        finished and published and its result returned (a committing thread cannot be
        stopped, and the state must never disagree with the store)."""
        async with self.lock:
            return await self.apply_locked(change, if_version, submit)

    async def apply_locked(
        self, change: Change, if_version: int | None, submit: Submit[Any]
    ) -> Applied:
        """apply_async's work, for a caller that holds `lock` (service.session.group_commit)."""
        self.check_version(if_version)
        applied, persist = self._next(change)
        try:
            await committed(submit, persist)
        except ChangedElsewhere:
            if self._reload is None:
                raise
            applied = await committed(submit, lambda: self._apply_held(change, if_version))
            self.render_cache.clear()
        return self.publish(applied, change)

    def _apply_held(self, change: Change, if_version: int | None) -> Applied:
        """Another daemon moved the session: hold its lock, reload it, apply `change` to it and
        commit in the holding transaction, so this attempt cannot lose the race again."""
        assert self._reload is not None
        with self._store.hold(self.id) as held:
            data = self._reload()
            self._data, self._snapshot = data, self._gauge(data)
            self.check_version(if_version)
            applied, commit = self.evolve(change)
            held.commit_change(commit)
        return applied

    async def resync_async(self, version: int | None, worker: Worker[Any]) -> bool:
        """Reload the session from the store when another daemon moved it past `version`
        (None: whatever the version); True when the data changed."""
        if self._reload is None:
            return False
        async with self.lock:
            if version is not None and self._data.version >= version:
                return False  # our own change, or one already reloaded
            data = await worker(self._reload)
            if data.version == self._data.version and version is None:
                return False
            self._replace(data)
            return True

    def _replace(self, data: SessionData) -> None:
        """Take `data` (reloaded from the store) as the session's state."""
        self._data = data
        self._snapshot = self._gauge(data)
        self.render_cache.clear()

    # -- internals -------------------------------------------------------------------------

    def _next(self, change: Change) -> tuple[Applied, Callable[[], None]]:
        applied, commit = self.evolve(change)
        store, session_id = self._store, self._data.id

        def persist() -> None:
            store.commit_change(session_id, commit)

        return applied, persist

    def evolve(
        self, change: Change, before: SessionData | None = None
    ) -> tuple[Applied, SessionCommit]:
        """The data and snapshot after `change` (to `before`, else to the data published), and
        the commit that stores them; nothing is published."""
        before = self._data if before is None else before
        evolved = evolve(before, change)
        # Before the gauge reads the config: a reload in between leaves the key older, never newer.
        settings = self._settings_key() if self._settings_key is not None else None
        snapshot = self._gauge(evolved.data)
        rewinds = before.info.figures.rewinds + isinstance(change, Rewind)  # a reload counts them
        figures = session_figures(evolved.data, snapshot, rewinds, settings)
        data = replace(evolved.data, info=replace(evolved.data.info, figures=figures))
        commit = change_commit(before, data, change, figures)
        broadcast = not isinstance(change, RecordMeasured | UpdateInfo | MarkRetired)
        return Applied(Evolved(data, evolved.samples), snapshot, broadcast), commit

    def commit_together(self, commits: list[SessionCommit]) -> None:
        """Several changes' commits in one transaction (a worker thread's; AppendQueue)."""
        self._store.commit_changes(self._data.id, commits)

    def publish(self, applied: Applied, change: Change) -> Applied:
        """Make `applied` (evolve's, committed) the session's data and snapshot."""
        data = applied.evolved.data
        self._data = data
        self._snapshot = applied.snapshot
        if isinstance(change, NewWindow | Rewind):
            self.render_cache.clear()  # the messages that left are rendered no more
        return applied


def session_figures(
    data: SessionData,
    snapshot: BudgetSnapshot,
    rewinds: int,
    settings: list[Any] | None = None,
) -> SessionFigures:
    """What the session row keeps after a change: what a reload needs that messages do not
    hold (compactions, rewinds, measured context, the estimate errors, a prune's delta on the
    anchor) and, for listings, the gauge's figures; with `settings` (the config files' stamps),
    what `tokend status` prints with no daemon (core.statusline.row)."""
    anchor = data.anchor
    state = gauge_state_json(data)
    if settings is not None:
        state[STATUS_KEY] = status_row(snapshot, settings)
    return SessionFigures(
        compactions=data.compactions,
        rewinds=rewinds,
        measured=dict(data.measured),
        measured_exact=data.measured_exact,
        errors=data.errors,
        anchor_delta=None
        if anchor is None
        else AnchorDelta(anchor.call.message_id, anchor.delta_tokens),
        gauge=gauge_of(snapshot),
        state=state,
    )


def first_figures(
    info: SessionInfo,
    model: ModelInfo,
    config_for: Callable[[str | None], TokendConfig],
    settings_key: Callable[[str | None], list[Any] | None] | None,
) -> SessionInfo:
    """A new session's row before its first change: with a settings key (the config files'
    stamps, taken before the config is read: a reload in between leaves it older), the gauge
    state of a session with no message and what `tokend status` prints for it
    (core.statusline.row); as it is without one."""
    settings = settings_key(info.workspace_uri) if settings_key is not None else None
    if settings is None:
        return info
    data = SessionData(info=info, model=model, log=MessageLog.of((), {}), version=info.version)
    state = gauge_state_json(data)
    config = config_for(info.workspace_uri)
    snapshot = gauge_snapshot(data, config.compaction, config.budget)
    state[STATUS_KEY] = status_row(snapshot, settings)
    return replace(info, figures=SessionFigures(state=state))


def gauge_of(snapshot: BudgetSnapshot) -> SessionGauge:
    """The snapshot's headline figures, as listings show them and the session row keeps them."""
    return SessionGauge(
        snapshot.used_tokens,
        snapshot.used_percentage,
        snapshot.context_window,
        snapshot.estimated,
        snapshot.version,
        snapshot.model,
    )
