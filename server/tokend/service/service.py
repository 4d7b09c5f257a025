"""TokendService: the one shared core every connection talks to.

Each loaded session has one owner, its SessionState; the service finds or loads it, turns a
request into a change (counting the parts, which can be slow, in a worker thread when called
from the event loop) and hands the change to the owner. Calibration learns from what the owner
reports back. Readers get immutable snapshots."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from ulid import ULID

from tokend.core.budget import input_room_tokens
from tokend.core.calibration import Calibrator
from tokend.core.catalog import Catalog, ModelInfo
from tokend.core.changes import (
    AppendMessage,
    MarkRetired,
    NewWindow,
    PruneParts,
    RecordMeasured,
    UpdateInfo,
)
from tokend.core.errors import (
    AlreadyStored,
    InvalidParams,
    MessageTooLarge,
    SessionNotFound,
    UnknownModel,
)
from tokend.core.estimate import DEFAULT_CHARS_PER_TOKEN
from tokend.core.excerpt import excerpt
from tokend.core.gates import gate_parts
from tokend.core.ports import Clock, CountCache, Store
from tokend.core.pricing import call_cost_usd
from tokend.core.session_data import SessionData
from tokend.core.session_evolve import Evolved
from tokend.core.settings import TokendConfig
from tokend.core.snapshot import BudgetSnapshot
from tokend.core.types import (
    ChatFile,
    CompactionPart,
    Message,
    Part,
    Role,
    SessionGauge,
    SessionInfo,
    StoredMessage,
    StoredPart,
    Usage,
)
from tokend.core.usage_stats import RateHeadroom
from tokend.service.catch_up import catch_up
from tokend.service.count_upgrade import CountUpgrades, first_counts
from tokend.service.counting import ModelCounter
from tokend.service.listeners import Listener, SnapshotListeners
from tokend.service.loading import load_session_data
from tokend.service.message_checks import check_answers, check_message, check_message_id
from tokend.service.models import SessionModels, check_window
from tokend.service.session_state import Applied, SessionState, first_figures, gauge_of
from tokend.service.turns import Turn

MAX_LOADED_SESSIONS = 64  # unwatched sessions kept in memory beyond this are reloaded on demand

T = TypeVar("T")


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
        workspace_config: Callable[[str | None], TokendConfig] | None = None,
        forget_settings: Callable[[str | None], None] | None = None,
        settings_key: Callable[[str | None], list[Any] | None] | None = None,
    ) -> None:
        self.store = store
        self.catalog = catalog
        self.config = config
        self.clock: Clock = clock or SystemClock()
        self._workspace_config = workspace_config
        self._forget_settings = forget_settings
        self._settings_key = settings_key  # core.statusline_row: what the row's line was read under
        # Loaded sessions, least recently used first; unwatched ones beyond the limit are dropped.
        self._sessions: OrderedDict[str, SessionState] = OrderedDict()
        self._listeners = SnapshotListeners()
        self._warning_hooks: list[Callable[[SessionData, BudgetSnapshot], tuple[str, ...]]] = []
        self._rate_source: Callable[[SessionData], RateHeadroom | None] | None = None
        self.calibrator = Calibrator.from_state(store.load_calibration(), DEFAULT_CHARS_PER_TOKEN)
        self.models = SessionModels(catalog, self.calibrator, cache, workspace_catalog)
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="tokend-work")
        self.upgrades = CountUpgrades(self.run, self.submit, self._changed, self.calibrator)
        # (session id, summarizer step) -> its failures in a row (service.summarizers' breaker)
        self.summarizer_failures: dict[tuple[str, str], int] = {}

    # -- settings ---------------------------------------------------------------------------

    def config_for(self, workspace_uri: str | None) -> TokendConfig:
        """The settings of a workspace (its .tokend.toml over the user's config)."""
        workspace = self._workspace_config
        return self.config if workspace is None else workspace(workspace_uri)

    def settings_changed(self, workspace_uri: str | None) -> None:
        """The client says settings changed: the workspace's files are read again at its next
        request (not only at the next periodic check)."""
        if self._forget_settings is not None:
            self._forget_settings(workspace_uri)

    # -- sessions ---------------------------------------------------------------------------

    def create_session(
        self,
        model: str,
        *,
        title: str | None = None,
        workspace_uri: str | None = None,
        context_window: int | None = None,
    ) -> SessionInfo:
        # An unknown model raises UnknownModel, which names the two ways to declare it.
        info = self.models.catalog_for(workspace_uri).get(model)
        if context_window is not None:
            check_window(info, context_window, self.config_for(workspace_uri).budget)
        now = self.clock.now()
        session = SessionInfo(
            id=new_id(),
            model=model,
            created_at=now,
            updated_at=now,
            title=title,
            workspace_uri=workspace_uri,
            context_window=context_window,
        )
        key = self._settings_key
        session = first_figures(session, self.models.model_info(session), self.config_for, key)
        self.store.create_session(session)
        return session

    def state(self, session_id: str, *, deleted: bool = False) -> SessionState:
        """The owner of a session, loading it when needed (a soft-deleted one too with
        `deleted`: to restore it)."""
        state = self._sessions.get(session_id)
        if state is None:
            state = self._sessions[session_id] = self._load(session_id, deleted)
            self._evict_unwatched()
        else:
            self._sessions.move_to_end(session_id)
        return state

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

    def _load(self, session_id: str, deleted: bool = False) -> SessionState:
        data, retired = self._read(session_id, deleted, later=True)
        workspace = data.info.workspace_uri
        state = SessionState(
            data,
            self.store,
            lambda: self.config_for(workspace),
            self._decorate,
            reload=lambda: self._catch_up(session_id),
            settings_key=None if (key := self._settings_key) is None else lambda: key(workspace),
        )
        if retired is not None:  # a repair of an older store, written by the session's owner
            state.apply(retired)
        self.upgrades.resume(state, self.counter(data.model))  # counts a load left estimated
        return state

    def _catch_up(self, session_id: str) -> SessionData:
        """The loaded session brought up to the stored version: the new messages alone when
        other daemons only appended, else a whole reload (safe in a worker thread)."""
        state = self._sessions.get(session_id)
        if state is None:
            return self._load_data(session_id)
        data = state.data
        return catch_up(
            self.store, data, self.counter(data.model), lambda: self._load_data(session_id)
        )

    def _load_data(self, session_id: str) -> SessionData:
        """The session as stored now (safe in a worker thread)."""
        return self._read(session_id)[0]

    def _read(
        self, session_id: str, deleted: bool = False, *, later: bool = False
    ) -> tuple[SessionData, MarkRetired | None]:
        """The session as stored now (a deleted one too with `deleted`), and the repair its
        loading found for its owner to apply (`later`: count_upgrade.loaded_counts)."""
        store = self.store
        info = (
            store.get_session_including_deleted(session_id)
            if deleted
            else store.get_session(session_id)
        )
        if info is None:
            raise SessionNotFound(
                f"no session {excerpt(session_id)}: create one with session/create, or list them with session/list",
                {"sessionId": excerpt(session_id)},
            )
        model = self.models.model_info(info)
        return load_session_data(self.store, info, model, self.counter(model), later=later)

    def add_snapshot_warnings(
        self, hook: Callable[[SessionData, BudgetSnapshot], tuple[str, ...]]
    ) -> None:
        """Warnings from outside the conversation (spend limits) in every snapshot built from
        now on; loaded sessions are rebuilt."""
        self._warning_hooks.append(hook)
        for state in self._sessions.values():
            state.refresh()

    def set_rate_source(self, rate: Callable[[SessionData], RateHeadroom | None]) -> None:
        """The daemon's rate headroom, put in every snapshot built from now on."""
        self._rate_source = rate

    def _decorate(self, data: SessionData, snapshot: BudgetSnapshot) -> BudgetSnapshot:
        extra = tuple(w for hook in self._warning_hooks for w in hook(data, snapshot))
        rate = self._rate_source(data) if self._rate_source is not None else None
        if not extra and rate is None:
            return snapshot
        return replace(snapshot, warnings=(*snapshot.warnings, *extra), rate=rate)

    def forget(self, session_id: str) -> None:
        """Drop the in-memory state; the next request reads the session from the store."""
        self._sessions.pop(session_id, None)

    def reload(self, session_id: str) -> SessionState:
        self.forget(session_id)
        return self.state(session_id)

    # -- changes ----------------------------------------------------------------------------

    def prepare_append(
        self,
        data: SessionData,
        role: Role,
        parts: Sequence[Part],
        usage: Usage | None,
        model: str | None,
        duration_ms: int | None = None,
        message_id: str | None = None,
        at: datetime | None = None,
        later: bool = False,
    ) -> AppendMessage:
        """Validate, gate and count a message (pure of session state; safe in a worker
        thread). `duration_ms` (an assistant reply's request to completion) dates the message
        from its request; `at` dates it when it was written elsewhere (an agent's transcript:
        the session's time figures are then the transcript's, with no API time). Tool results a
        gate keeps out (core.gates) are counted as the model sees them; their originals ride on
        the change, to be stored with the message. `later`: service.count_upgrade.first_counts."""
        check_message(data, role, parts, usage)
        if duration_ms is not None and role != "assistant":
            raise InvalidParams(
                f"message.durationMs on a {role} message: it is how long an assistant reply "
                "took, from its request to its completion"
            )
        gated = gate_parts(parts, self.config_for(data.info.workspace_uri).tool_output)
        originals = {g.part.ref: g.original for g in gated if g.part.ref is not None}
        shown = {g.index: g.part for g in gated}
        parts = [shown.get(i, p) for i, p in enumerate(parts)]
        limit = self.input_limit(data)
        counts = first_counts(self.counter(data.model), role, parts, usage, limit, later=later)
        if counts.total > limit:
            size = f"at least {counts.total:,}" if counts.partial else f"{counts.total:,}"
            raise MessageTooLarge(
                f"the message is {size} tokens but a {data.model.name} request holds at "
                f"most {limit:,} input tokens: split it, or attach the file by path",
                {"tokens": counts.total, "limit": limit, "partial": counts.partial},
            )
        now = self.clock.now()
        stored = tuple(  # an estimate is no part's count: a reload counts it (kill -9)
            StoredPart(id=new_id(), part=p, tokens=None if counts.estimated else t)
            for p, t in zip(parts, counts.tokens, strict=True)
        )
        priced = self._priced_model(data, model)
        message = Message(
            id=message_id or new_id(),
            session_id=data.id,
            role=role,
            parts=stored,
            created_at=at or (now - timedelta(milliseconds=duration_ms) if duration_ms else now),
            model=model or (data.info.model if role == "assistant" else None),
            usage=usage,
            cost_usd=call_cost_usd(priced, usage, parts) if usage else None,
            completed_at=(at if at is not None else now) if usage or duration_ms else None,
        )
        return AppendMessage(message, counts, tool_outputs=originals)

    def _priced_model(self, data: SessionData, model: str | None) -> ModelInfo:
        """The model a call is priced with: the one the message names when the catalog knows
        it, else the session's (a name like "claude-opus-4-6[1m]" must not lose the turn)."""
        if not model:
            return data.model
        try:
            return self.models.catalog_for(data.info.workspace_uri).get(model)
        except UnknownModel:
            base = model.split("[", 1)[0]
            found = self.models.catalog_for(data.info.workspace_uri).find(base)
            return found or data.model

    def append(
        self,
        session_id: str,
        role: Role,
        parts: Sequence[Part],
        *,
        usage: Usage | None = None,
        model: str | None = None,
        if_version: int | None = None,
        duration_ms: int | None = None,
    ) -> tuple[Message, BudgetSnapshot]:
        state = self.state(session_id)
        state.check_version(if_version)
        check_answers(state.data, parts)
        change = self.prepare_append(state.data, role, parts, usage, model, duration_ms)
        applied = state.apply(change, if_version)
        self._learn(state, applied.evolved, save=self._save_calibration)
        return change.message, self._changed(state, applied)

    async def append_async(
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
        """As append, counting and writing in a worker thread: the event loop stays free.
        `message_id` (client-chosen) makes the append idempotent: when a message with that id
        is already stored (a retry after a lost reply), nothing is stored and the first
        append's answer is given again.

        Order: the append takes its turn in the session's queue before its first await, so
        appends are applied in the order they were called (the order the daemon read them);
        they are counted in parallel, and each is checked against the history (a toolResult
        answering a toolCall, `if_version`) once every earlier one is applied. Cancelled
        before its write starts, it writes nothing; after, it is finished and answered."""
        state = self.state(session_id)
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
        change = await self.run(
            lambda: self.prepare_append(
                data, role, parts, usage, model, duration_ms, message_id, at, later=True
            )
        )
        await turn.wait()
        check_answers(state.data, parts)
        try:
            applied = await state.apply_async(change, if_version, self.submit)
        except AlreadyStored as exc:  # the same id appended meanwhile (another connection)
            again = self._answer_stored(state, message_id or "", exc.stored)
            if again is None:
                raise
            return again
        self._learn(state, applied.evolved, save=lambda: self._pool.submit(self._save_calibration))
        self.upgrades.after_append(state, change, self.counter(state.data.model))
        snapshot = self._changed(state, applied)
        message = change.message
        return AppendResult(message.id, snapshot.version, change.counts.total, snapshot, message)

    async def _stored_append(self, state: SessionState, message_id: str) -> AppendResult | None:
        """The answer of an append of `message_id` already stored, or None (not stored)."""
        stored = await self.run(lambda: self.store.find_message(message_id))
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
        counts = self.counter(data.model).count_parts("system", [part])
        message = Message(
            id=new_id(),
            session_id=data.id,
            role="system",
            parts=(StoredPart(new_id(), part, counts.tokens[0]),),
            created_at=at or self.clock.now(),
            summary=True,
        )
        return NewWindow(message, counts.total, frozenset(covered))

    def append_boundary(
        self, session_id: str, summary: str, at: datetime | None = None
    ) -> BudgetSnapshot:
        """A compaction boundary whose `summary` stands for the whole live context (a
        client's own compaction, e.g. an imported Claude Code transcript's, dated `at`)."""
        state = self.state(session_id)
        data = state.data
        applied = state.apply(
            self.summary_change(data, summary, None, [m.id for m in data.messages], at)
        )
        return self._changed(state, applied)

    async def apply_compaction_async(
        self, session_id: str, change: NewWindow | PruneParts
    ) -> BudgetSnapshot:
        """Apply a compaction planned on an earlier version: messages appended meanwhile stay
        (after the summary); VersionConflict when another compaction or a rewind came first."""
        state = self.state(session_id)
        applied = await state.apply_async(change, None, self.submit)
        return self._changed(state, applied)

    def prune_change(self, data: SessionData, part_ids: Sequence[str]) -> PruneParts:
        """The change that clears `part_ids` (tool results) to placeholders."""
        wanted = frozenset(part_ids)
        counter = self.counter(data.model)
        at = self.clock.now()
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
        state = self.state(session_id)
        if dict(state.data.measured) == measured and state.data.measured_exact == exact:
            return
        applied = state.apply(RecordMeasured(measured, exact))
        self._changed(state, applied)

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
        state = self.state(session_id)
        state.apply(UpdateInfo(title, extra or {}, chat_files, transcript_cursor))
        return state.data.info

    def republish(self, session_id: str) -> BudgetSnapshot:
        """Rebuild the session's snapshot under the current settings and tell its listeners
        (figures outside the conversation changed: a chat file edited, the settings)."""
        state = self.state(session_id)
        snapshot = state.refresh()
        self._listeners.tell(session_id, snapshot)
        return snapshot

    # -- calibration ------------------------------------------------------------------------

    def _learn(self, state: SessionState, evolved: Evolved, save: Callable[[], object]) -> None:
        if not evolved.samples or self.counter(state.data.model).exact:
            return
        for sample in evolved.samples:
            self.calibrator.observe(
                state.data.model.name,
                sample.chars_by_class,
                sample.estimated_tokens,
                sample.actual_tokens,
            )
        save()

    def _save_calibration(self) -> None:
        self.store.save_calibration(self.calibrator.to_state())

    # -- reads ------------------------------------------------------------------------------

    def snapshot(self, session_id: str) -> BudgetSnapshot:
        return self.state(session_id).snapshot

    def loaded_snapshots(self) -> list[BudgetSnapshot]:
        """The current snapshot of every session loaded in this process."""
        return [state.snapshot for state in self._sessions.values()]

    def loaded_workspaces(self) -> set[str]:
        return {
            s.data.info.workspace_uri for s in self._sessions.values() if s.data.info.workspace_uri
        }

    def list_sessions(self, workspace_uri: str | None = None) -> list[SessionInfo]:
        """Sessions from the store (`figures.gauge` holds the gauge stored with each)."""
        return self.store.list_sessions(workspace_uri)

    def session_gauges(
        self, workspace_uri: str | None = None
    ) -> list[tuple[SessionInfo, SessionGauge]]:
        """Every session with its gauge, newest first, without loading them (listed_gauge)."""
        listed = []
        for info in self.store.list_sessions(workspace_uri):
            gauge = self.listed_gauge(info)
            assert gauge is not None  # listed sessions are not deleted
            listed.append((info, gauge))
        return listed

    def listed_gauge(self, info: SessionInfo) -> SessionGauge | None:
        """The gauge a listing shows: a loaded session's live snapshot, else the figures stored
        with its last change, else (stored before those were kept) the session loaded once;
        None for a deleted session without stored figures."""
        state = self._sessions.get(info.id)
        if state is not None:
            return gauge_of(state.snapshot)
        if info.figures.gauge is not None or info.deleted_at is not None:
            return info.figures.gauge
        return gauge_of(self.snapshot(info.id))

    def input_limit(self, data: SessionData) -> int:
        """Tokens a request of the session may hold (core.budget.input_room_tokens under its
        workspace's settings; the safety margin only when its counts are estimates)."""
        budget = self.config_for(data.info.workspace_uri).budget
        exact = self.counter(data.model).exact
        return max(0, input_room_tokens(data.model, budget, exact=exact))

    # -- work off the event loop --------------------------------------------------------------

    async def run(self, work: Callable[[], T]) -> T:
        """Run `work` in the service's worker threads; the event loop serves others meanwhile."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, work)

    def submit(self, work: Callable[[], T]) -> Future[T]:
        """`work` queued for the service's worker threads (a store write: see service.turns)."""
        return self._pool.submit(work)

    # -- notifications ----------------------------------------------------------------------

    def subscribe(self, session_id: str, listener: Listener) -> Callable[[], None]:
        """Call `listener` with each new snapshot of the session; returns the unsubscribe."""
        return self._listeners.subscribe(session_id, listener)

    def subscribe_every(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` with each new snapshot of every session (replay, status)."""
        return self._listeners.subscribe_every(listener)

    def announce(self, state: SessionState, applied: Applied) -> BudgetSnapshot:
        """Tell the session's listeners about a change applied by its owner; its snapshot."""
        return self._changed(state, applied)

    def _changed(self, state: SessionState, applied: Applied) -> BudgetSnapshot:
        if applied.broadcast:
            self._listeners.tell(state.id, applied.snapshot)
        return applied.snapshot

    # -- other daemons sharing the database ---------------------------------------------------

    def listen_remote(self, loop: asyncio.AbstractEventLoop) -> Callable[[], None] | None:
        """Follow the changes other daemons sharing the database commit: each loaded session
        they move is reloaded and its listeners told (budget/didChange), on `loop`. Returns the
        stop function, or None when the store has no such feed (SQLite)."""
        feed = self.store.changes
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
        targets = list(self._sessions) if session_id is None else [session_id]
        for target in targets:
            state = self._sessions.get(target)
            if state is None:
                continue  # not loaded here: the next request reads it from the store
            try:
                changed = await state.resync_async(
                    None if session_id is None else version, self.run
                )
            except SessionNotFound:  # deleted by the other daemon
                self.forget(target)
                continue
            if changed:
                self._listeners.tell(target, state.snapshot)

    def close(self) -> None:
        self.upgrades.finish()
        self._pool.shutdown(wait=True)
        self._save_calibration()
        self.store.close()


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What session/append answers: the message (None for a retried append whose message left
    the live context since), the snapshot, the message's tokens, and its version and id."""

    message_id: str
    version: int  # the session's version after the append
    tokens: int
    snapshot: BudgetSnapshot
    message: Message | None
