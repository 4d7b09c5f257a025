"""Loading a session from the store into SessionData.

The live context (core.session_data: the live summary, then what no summary, provider
compaction or rewind took out; sessions stored before a provider's compaction marked what it
retired are marked when loaded) is played through `core.session_data.evolve` as reloaded
(unscored) appends, so a reloaded gauge is built by the same code as a live one. What messages
do not hold comes from the session row's `extra`: compactions, the measured context, the
estimate errors, and a prune's delta on the anchor. The time figures (wall and API duration,
lines edited) are tallied again from every message of every window. Parts the store has no
count for are counted and their counts saved. The version is the stored one (the session row's,
moved by each change's transaction): it never goes back across restarts or daemons.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from tokend.core.accounting import provider_compaction
from tokend.core.catalog import ModelInfo
from tokend.core.changes import AppendMessage
from tokend.core.ports import Store
from tokend.core.session_data import SessionData, add_usage, evolve
from tokend.core.snapshot import Totals
from tokend.core.types import Message, SessionInfo
from tokend.core.usage_stats import tally_messages
from tokend.service.counting import ModelCounter
from tokend.service.session_state import restored_errors


def load_session_data(
    store: Store, info: SessionInfo, model: ModelInfo, counter: ModelCounter
) -> SessionData:
    session_id = info.id
    messages = store.load_messages(session_id)
    # Messages out of the live context exist only after a compaction boundary or a rewind.
    windowed = bool(messages) and messages[0].summary
    provider = any(provider_compaction(sp.part for sp in m.parts) for m in messages)
    every = (
        store.load_all_messages(session_id)
        if windowed or provider or info.extra.get("rewinds")
        else messages
    )
    if windowed or provider:
        unmarked = _mark_retired(store, session_id, every)
        messages = [m for m in messages if m.id not in unmarked]
    live = {m.id for m in messages}
    totals = Totals()
    costs: dict[str, float] = {}
    for message in every:  # calls out of the live context (summarized, rewound) still count
        if message.id not in live and message.usage is not None:
            totals = add_usage(totals, message.usage)
            key = message.model or model.name
            costs[key] = costs.get(key, 0.0) + (message.cost_usd or 0.0)
    extra = info.extra
    data = SessionData(
        info=info,
        model=model,
        messages=(),
        message_tokens={},
        version=0,
        measured=MappingProxyType(dict(extra.get("measured") or {})),
        measured_exact=bool(extra.get("measuredExact", True)),
        totals=totals,
        cost_by_model=costs,
    )
    missing: dict[str, int] = {}
    # Messages after the last provider call are what the next call's figure will check: count
    # them for calibration too, as when they were appended.
    last_call = max((i for i, m in enumerate(messages) if m.usage is not None), default=-1)
    for index, message in enumerate(messages):
        counts = counter.stored_counts(message.role, message.parts, for_learning=index > last_call)
        missing.update(
            (sp.id, n)
            for sp, n in zip(message.parts, counts.tokens, strict=True)
            if sp.tokens is None and sp.compacted_at is None
        )
        if index == 0 and message.summary:
            data = replace(data, messages=(message,), message_tokens={message.id: counts.total})
            continue
        data = evolve(data, AppendMessage(_usage_checked(message), counts, learn=False)).data
    if missing:
        store.set_part_tokens(missing)
    data = with_row(data, info)
    if every is not messages:  # the time figures count every window's messages, in order
        data = replace(data, times=tally_messages(every))
    return _restore_anchor_delta(data)


def with_row(data: SessionData, info: SessionInfo) -> SessionData:
    """`data` with what the session row holds besides messages: the info, the stored version
    (every change moves it in its own transaction, whichever daemon made it), and from `extra`
    the compactions, the estimate errors and the measured context."""
    extra = info.extra
    return replace(
        data,
        info=info,
        version=info.version,
        compactions=int(extra.get("compactions", 0)),
        errors=restored_errors(extra),
        measured=MappingProxyType(dict(extra.get("measured") or {})),
        measured_exact=bool(extra.get("measuredExact", True)),
    )


def _mark_retired(store: Store, session_id: str, every: list[Message]) -> set[str]:
    """Sessions stored before a provider's compaction marked what it retired: mark those
    messages now, each by the first boundary after it (at the boundary's time), as the
    boundary's append does today. Returns the ids marked (they were still in the live list)."""
    marks: dict[str, list[str]] = {}
    pending: list[str] = []
    for message in every:
        if provider_compaction(sp.part for sp in message.parts) is not None:
            if pending:
                marks[message.id] = pending
            pending = []
        if message.compacted_at is None:
            pending.append(message.id)
    boundaries = {m.id: m for m in every if m.id in marks}
    for boundary_id, ids in marks.items():
        store.commit_change(
            session_id,
            compacted_message_ids=ids,
            compacted_by=boundary_id,
            compacted_at=boundaries[boundary_id].created_at,
        )
    return {i for ids in marks.values() for i in ids}


def _usage_checked(message: Message) -> Message:
    """A summary message inside a window never anchors the gauge."""
    return replace(message, usage=None) if message.summary and message.usage else message


def _restore_anchor_delta(data: SessionData) -> SessionData:
    """A prune since the last call moved the anchor by a known delta (persisted); a prune made
    before deltas were persisted leaves the gauge to count the whole context."""
    anchor = data.anchor
    if anchor is None:
        return data
    saved = data.info.extra.get("anchorDelta")
    if isinstance(saved, dict) and saved.get("messageId") == anchor.call.message_id:
        tokens = saved.get("tokens")
        if isinstance(tokens, int) and not isinstance(tokens, bool):
            return replace(data, anchor=replace(anchor, delta_tokens=tokens, learn=False))
    if saved is not None:
        return data
    compacted_at = data.info.compacted_at
    call_message = next((m for m in data.messages if m.id == anchor.call.message_id), None)
    if compacted_at is not None and call_message and call_message.created_at <= compacted_at:
        return replace(data, anchor=None)
    return data
