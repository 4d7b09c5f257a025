"""Loading a session from the store into SessionData.

The live context (core.session.data: the live summary, then what no summary, provider
compaction or rewind took out; sessions stored before a provider's compaction marked what it
retired are marked when loaded) is played through `core.session.evolve.evolve` as reloaded
(unscored) appends, so a reloaded gauge is built by the same code as a live one. What messages
do not hold comes from the session row's figures: compactions, the measured context, the
estimate errors, and a prune's delta on the anchor. The time figures (wall and API duration,
lines edited) are tallied again from every message of every window. Parts the store has no
count for are counted and their counts saved. A lazily loaded session reads its bodies with
the counts the store keeps (`stored_bodies`: no part counted or classified again). The version
is the stored one (the session row's, moved by each change's transaction): it never goes back
across restarts or daemons.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

from tokend.core.assembly.wire_formats import part_is_sent
from tokend.core.budget.snapshot import Totals
from tokend.core.commit import Compacted
from tokend.core.counting.framing import message_overhead
from tokend.core.counting.media_tokens import image_tokens
from tokend.core.models.catalog import ModelInfo
from tokend.core.ports import Store
from tokend.core.session.changes import AppendMessage, MarkRetired
from tokend.core.session.data import SessionData, add_usage
from tokend.core.session.evolve import evolve
from tokend.core.session.gauge_state import GaugeState
from tokend.core.session.message_log import MessageLog
from tokend.core.types import ImagePart, Message, ReasoningPart, SessionInfo
from tokend.core.usage.accounting import holds_provider_compaction, provider_compaction
from tokend.core.usage.stats import tally_messages
from tokend.service.counting.counter import ModelCounter
from tokend.service.session.count_upgrade import loaded_counts


def load_session_data(
    store: Store,
    info: SessionInfo,
    model: ModelInfo,
    counter: ModelCounter,
    *,
    lazy: bool = True,
    later: bool = False,
) -> tuple[SessionData, MarkRetired | None]:
    """The session as stored, and the marks a provider's compaction stored before they were
    kept still needs (for its owner to apply: loading reads, it writes nothing of the
    session's; part counts it had to make go to the parts' count cache). With `lazy`, a row
    that keeps its gauge's state (core.session.gauge_state) gives the session without reading a message:
    the bodies are read when first needed. With `later` (a session loaded by its owner, which
    counts them afterwards), a big text the store has no count for may load with its estimate
    (service.session.count_upgrade.loaded_counts)."""
    deleted = info.deleted_at is not None  # a deleted one: to restore it
    state = GaugeState.of(info.figures.state, info.version) if lazy and not deleted else None
    if state is not None:
        return _lazy(store, info, model, counter, state), None
    return _played(info, model, counter, _Window.read(store, info), store, later=later)


@dataclass(frozen=True)
class _Window:
    """The live context as stored: its messages (less those a provider's compaction retired
    that were stored unmarked), every message of every window, and those retired marks."""

    messages: list[Message]
    every: list[Message]
    retired: tuple[Compacted, ...]
    provider: bool  # a provider's compaction is among the live messages

    @classmethod
    def read(cls, store: Store, info: SessionInfo) -> _Window:
        session_id, deleted = info.id, info.deleted_at is not None
        messages = store.messages.load_messages(session_id, including_deleted=deleted)
        # Messages out of the live context exist only after a compaction boundary or a rewind.
        windowed = bool(messages) and messages[0].summary
        provider = holds_provider_compaction(messages)
        every = (
            store.messages.load_all_messages(session_id, including_deleted=deleted)
            if windowed or provider or info.figures.rewinds
            else messages
        )
        retired = _retired(every) if windowed or provider else ()
        if retired:
            unmarked = {i for mark in retired for i in mark.message_ids}
            messages = [m for m in messages if m.id not in unmarked]
        return cls(messages, every, retired, provider)


def _played(
    info: SessionInfo,
    model: ModelInfo,
    counter: ModelCounter,
    window: _Window,
    store: Store,
    *,
    later: bool = False,
) -> tuple[SessionData, MarkRetired | None]:
    """The live messages played through evolve; with `later`, a big text the store has no
    count for may get its estimate (service.session.count_upgrade.loaded_counts)."""
    messages, every, retired = window.messages, window.every, window.retired
    live = {m.id for m in messages}
    totals = Totals()
    costs: dict[str, float] = {}
    for message in every:  # calls out of the live context (summarized, rewound) still count
        if message.id not in live and message.usage is not None:
            totals = add_usage(totals, message.usage)
            key = message.model or model.name
            costs[key] = costs.get(key, 0.0) + (message.cost_usd or 0.0)
    figures = info.figures
    data = SessionData(
        info=info,
        model=model,
        log=MessageLog.of((), {}),
        version=0,
        measured=MappingProxyType(dict(figures.measured)),
        measured_exact=figures.measured_exact,
        totals=totals,
        cost_by_model=costs,
    )
    missing: dict[str, int] = {}
    # Messages after the last provider call are what the next call's figure will check: count
    # them for calibration too, as when they were appended.
    last_call = max((i for i, m in enumerate(messages) if m.usage is not None), default=-1)
    for index, message in enumerate(messages):
        learn = index > last_call
        counts = loaded_counts(
            counter, message.role, message.parts, for_learning=learn, later=later
        )
        missing.update(  # an estimate is no part's count: counted later (count_upgrade)
            (sp.id, n)
            for sp, n in zip(message.parts, counts.tokens, strict=True)
            if sp.tokens is None and sp.compacted_at is None and not counts.estimated
        )
        if index == 0 and message.summary:
            data = replace(data, log=MessageLog.of((message,), {message.id: counts.total}))
            continue
        data = evolve(data, AppendMessage(_usage_checked(message), counts, learn=False)).data
    if missing:
        store.parts.set_part_tokens(missing)
    data = with_row(data, info)
    if every is not messages:  # the time figures count every window's messages, in order
        data = replace(data, times=tally_messages(every))
    return _restore_anchor_delta(data), MarkRetired(retired) if retired else None


def _lazy(
    store: Store, info: SessionInfo, model: ModelInfo, counter: ModelCounter, state: GaugeState
) -> SessionData:
    """The session from its row alone; its messages are loaded whole when first read (the
    first `state.messages` of the live context then: appends since only add after them, and a
    change made elsewhere meanwhile fails its commit and reloads the session)."""

    def bodies() -> list[tuple[Message, int]]:
        window = _Window.read(store, info)
        stored = None if window.provider else stored_bodies(window.messages, model, counter)
        if stored is not None:
            return stored
        played = _played(info, model, counter, window, store)[0]
        return [(m, played.message_tokens[m.id]) for m in played.messages]

    data = SessionData(
        info=info,
        model=model,
        log=MessageLog.lazy(state.messages, state.tokens, state.gated, bodies),
        version=info.version,
        # As a whole load: a reloaded anchor is never learnt from (_restore_anchor_delta).
        anchor=None if state.anchor is None else replace(state.anchor, learn=False),
        added=state.added,
        totals=state.totals,
        cost_by_model=state.costs,
        times=state.times,
        prompt_cache=state.prompt_cache,
    )
    return with_row(data, info)


def with_row(data: SessionData, info: SessionInfo) -> SessionData:
    """`data` with what the session row holds besides messages: the info, the stored version
    (every change moves it in its own transaction, whichever daemon made it), and from its
    figures the compactions, the estimate errors and the measured context."""
    figures = info.figures
    return replace(
        data,
        info=info,
        version=info.version,
        compactions=figures.compactions,
        errors=figures.errors,
        measured=MappingProxyType(dict(figures.measured)),
        measured_exact=figures.measured_exact,
    )


def _retired(every: list[Message]) -> tuple[Compacted, ...]:
    """Sessions stored before a provider's compaction marked what it retired: the messages
    still unmarked before each boundary, to be marked by it (at the boundary's time), as the
    boundary's append does today."""
    marks: list[Compacted] = []
    pending: list[str] = []
    for message in every:
        if provider_compaction(sp.part for sp in message.parts) is not None:
            if pending:
                marks.append(Compacted(tuple(pending), message.id, message.created_at))
            pending = []
        if message.compacted_at is None:
            pending.append(message.id)
    return tuple(marks)


def stored_bodies(
    messages: Sequence[Message], model: ModelInfo, counter: ModelCounter
) -> list[tuple[Message, int]] | None:
    """The live messages with their tokens as sent, from the counts the store keeps per part
    (what `counter.stored_counts(...).total` gives, without counting or classifying a part's
    text again); as the whole load keeps them (a summary inside the window anchors nothing).
    None when a sent part has no stored count: the whole load counts it and saves the count."""
    provider, fmt = model.provider, counter.format
    pruned: int | None = None
    framing: dict[str, int] = {}  # a role's framing tokens, found once (not once a message)
    out: list[tuple[Message, int]] = []
    for index, message in enumerate(messages):
        role = message.role
        total = framing.get(role)
        if total is None:
            total = framing[role] = message_overhead(role, provider)
        for sp in message.parts:  # no call for the usual part (sent, counted, kept whole)
            part = sp.part
            if isinstance(part, ReasoningPart) and not part_is_sent(part, role, fmt):
                continue
            if isinstance(part, ImagePart):
                total += image_tokens(provider)
            elif sp.compacted_at is not None:
                pruned = counter.pruned_tokens() if pruned is None else pruned
                total += pruned
            elif sp.tokens is None:
                return None
            else:
                total += sp.tokens
        checked = index and message.summary and message.usage  # a summary inside: no anchor
        out.append((_usage_checked(message) if checked else message, total))
    return out


def _usage_checked(message: Message) -> Message:
    """A summary message inside a window never anchors the gauge."""
    return replace(message, usage=None) if message.summary and message.usage else message


def _restore_anchor_delta(data: SessionData) -> SessionData:
    """A prune since the last call moved the anchor by a known delta (persisted); a prune made
    before deltas were persisted leaves the gauge to count the whole context."""
    anchor = data.anchor
    if anchor is None:
        return data
    saved = data.info.figures.anchor_delta
    if saved is not None and saved.message_id == anchor.call.message_id:
        return replace(data, anchor=replace(anchor, delta_tokens=saved.tokens, learn=False))
    if saved is not None:
        return data
    compacted_at = data.info.compacted_at
    call_message = next((m for m in data.messages if m.id == anchor.call.message_id), None)
    if compacted_at is not None and call_message and call_message.created_at <= compacted_at:
        return replace(data, anchor=None)
    return data
