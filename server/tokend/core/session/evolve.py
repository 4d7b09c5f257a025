"""How a session moves on: `evolve(data, change)`, the one function that gives the next
`SessionData` (core.session.data) for every change (core.session.changes), and what calibration may
learn from it. Nothing else builds the next data. Figures are in tokens. Pure."""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType

from tokend.core.budget.prompt_cache import cache_after, last_cache
from tokend.core.counting.framing import message_overhead
from tokend.core.errors import VersionConflict
from tokend.core.session.changes import (
    AppendMessage,
    CalibrationSample,
    Change,
    CountsUpgraded,
    Delete,
    GrowReply,
    MarkRetired,
    NewWindow,
    PruneParts,
    RecordMeasured,
    Restore,
    Rewind,
    UpdateInfo,
)
from tokend.core.session.count_upgrade import edited
from tokend.core.session.data import (
    ERROR_HISTORY,
    Added,
    Anchor,
    SessionData,
    anchor_output,
    anchor_tokens,
    call_figures,
)
from tokend.core.session.message_log import MessageLog
from tokend.core.session.totals import add_usage as add_usage  # loading.py reads it here
from tokend.core.session.windows import new_window, provider_window
from tokend.core.types import Message, SessionInfo
from tokend.core.usage.accounting import (
    EstimateError,
    provider_compaction,
)
from tokend.core.usage.stats import add_message


@dataclass(frozen=True, slots=True)
class Evolved:
    """The next data, and what calibration may learn from the change (provider figures)."""

    data: SessionData
    samples: tuple[CalibrationSample, ...] = ()


def evolve(data: SessionData, change: Change) -> Evolved:
    """The session after `change`. The version moves on by one for every change of the
    conversation; recording what an assembly measured, or the session's title, is not one."""
    match change:
        case AppendMessage():
            return _append(data, change)
        case PruneParts():
            return Evolved(_prune(data, change))
        case NewWindow():
            return Evolved(new_window(data, change))
        case Rewind():
            return Evolved(_rewind(data, change))
        case RecordMeasured():
            measured = MappingProxyType(dict(change.measured))
            return Evolved(replace(data, measured=measured, measured_exact=change.exact))
        case UpdateInfo():
            return Evolved(replace(data, info=_updated_info(data.info, change)))
        case Delete():
            deleted = replace(data.info, deleted_at=data.info.deleted_at or change.at)
            return Evolved(replace(data, info=deleted, version=data.version + 1))
        case MarkRetired():
            return Evolved(data)
        case GrowReply() | CountsUpgraded():
            return Evolved(edited(data, change))
        case Restore():
            restored = replace(data.info, deleted_at=None)
            return Evolved(replace(data, info=restored, version=data.version + 1))
    raise TypeError(f"not a change: {change!r}")


def _updated_info(info: SessionInfo, change: UpdateInfo) -> SessionInfo:
    extra = {**info.extra, **change.extra}
    return replace(
        info,
        title=change.title if change.title is not None else info.title,
        extra={k: v for k, v in extra.items() if v is not None},
        chat_files=info.chat_files if change.chat_files is None else change.chat_files,
        transcript_cursor=change.transcript_cursor or info.transcript_cursor,
    )


def _append(data: SessionData, change: AppendMessage) -> Evolved:
    message, counts = change.message, change.counts
    boundary = provider_compaction(sp.part for sp in message.parts)
    if boundary is not None:
        return Evolved(provider_window(data, change, boundary))
    grown = replace(
        data,
        log=data.log.appended(message, counts.total),
        version=data.version + 1,
        times=add_message(data.times, message),
        pending_exact=data.pending_exact | {message.id} if counts.estimated else data.pending_exact,
    )
    if message.usage is None:
        added = data.added
        chars = dict(added.chars_by_class)
        for cls, n in counts.chars_by_class.items():
            chars[cls] = chars.get(cls, 0) + n
        return Evolved(
            replace(
                grown,
                added=Added(
                    tokens=added.tokens + counts.total,
                    framing_tokens=added.framing_tokens + counts.framing,
                    fixed_tokens=added.fixed_tokens + counts.fixed,
                    raw_text_tokens=added.raw_text_tokens + counts.raw_text,
                    chars_by_class=chars,
                ),
            )
        )
    return _call(grown, data, message, change)


def _call(
    grown: SessionData, before: SessionData, message: Message, change: AppendMessage
) -> Evolved:
    """An assistant message carrying the provider's usage: the gauge re-anchors on it."""
    usage = message.usage
    assert usage is not None
    counts = change.counts
    predicted = before.used_tokens()[0] if before.anchor is not None else None
    # The context as tokend sent it: the provider's figure is after its context editing, which
    # clears again what the previous call's had cleared (the gauge counted that without it).
    cleared_before = before.anchor.call.cleared_input_tokens if before.anchor is not None else 0
    actual = usage.context_tokens + usage.cleared_input_tokens - cleared_before
    errors, error_pct = before.errors, None
    if predicted is not None and actual > 0:  # a reload shows the call's error as it was
        error = EstimateError(predicted, actual)
        errors = (*errors, error)[-ERROR_HISTORY:] if change.learn else errors
        error_pct = error.error_pct
    samples: list[CalibrationSample] = []
    if before.anchor is not None and before.anchor.learn and change.learn:
        added = before.added
        # What the provider counted for the messages added since the last call.
        actual_text = actual - anchor_tokens(before.anchor, before.model)
        actual_text -= added.framing_tokens + added.fixed_tokens
        samples.append(
            CalibrationSample(dict(added.chars_by_class), added.raw_text_tokens, actual_text)
        )
    output = anchor_output(usage, counts.total - counts.framing)
    if change.learn and output == usage.output_tokens and not counts.has_reasoning:
        # The reply's visible text, counted by the provider itself.
        samples.append(
            CalibrationSample(dict(counts.chars_by_class), counts.raw_text, usage.output_tokens)
        )
    call = call_figures(message.id, usage, predicted, error_pct)
    model = message.model or grown.model.name
    costs = dict(grown.cost_by_model)
    costs[model] = costs.get(model, 0.0) + (message.cost_usd or 0.0)
    next_data = replace(
        grown,
        anchor=Anchor(call, output),
        prompt_cache=cache_after(grown.prompt_cache, message),
        added=Added(),
        totals=add_usage(grown.totals, usage),
        cost_by_model=costs,
        errors=errors,
    )
    return Evolved(next_data, tuple(samples))


def _prune(data: SessionData, change: PruneParts) -> SessionData:
    """The pruned parts marked, each message's new count in place: it costs the messages
    pruned, not the window's length (MessageLog.replaced)."""
    wanted, log, anchor = change.part_ids, data.log, data.anchor
    # Messages up to the anchor's are inside the provider's last figure: their change moves
    # the anchor; later ones were added since, and move what was added.
    anchored_at = -1 if anchor is None else log.index_of(anchor.call.message_id)
    if anchored_at is None:  # an anchor out of the window: every message is inside its figure
        anchored_at = len(log.messages)
    delta_anchor = delta_added = 0
    changed: dict[int, tuple[Message, int]] = {}
    for message_id, new in change.message_tokens.items():
        index = log.index_of(message_id)
        if index is None:
            continue
        message, old = log.at(index)
        parts = tuple(
            replace(sp, compacted_at=change.at)
            if sp.id in wanted and sp.compacted_at is None
            else sp
            for sp in message.parts
        )
        changed[index] = (replace(message, parts=parts), new)
        if index > anchored_at:
            delta_added += new - old
        else:
            delta_anchor += new - old
    added = data.added
    if anchor is not None:
        anchor = replace(anchor, delta_tokens=anchor.delta_tokens + delta_anchor, learn=False)
        added = replace(added, tokens=added.tokens + delta_added)
    return replace(
        data,
        info=replace(data.info, compacted_at=change.at),
        log=log.replaced(changed),
        anchor=anchor,
        added=added,
        compactions=data.compactions + 1,
        version=data.version + 1,
    )


def _rewind(data: SessionData, change: Rewind) -> SessionData:
    """The window up to `to_message_id`; the gauge anchors on the last provider call left in
    it (a later one no longer describes the context), plus what was added after that call."""
    ids = [m.id for m in data.messages]
    if change.to_message_id not in ids or tuple(ids[ids.index(change.to_message_id) + 1 :]) != (
        change.removed
    ):
        raise VersionConflict(
            f"session {data.id} changed while it was being rewound: rewind again",
            {"currentVersion": data.version},
        )
    kept = data.messages[: ids.index(change.to_message_id) + 1]
    tokens = {m.id: data.message_tokens[m.id] for m in kept}
    anchor, after = None, 0
    for index in range(len(kept) - 1, -1, -1):
        message = kept[index]
        if message.usage is not None and not message.summary:
            anchor = _anchor_of(data, message, tokens[message.id])
            after = sum(tokens[m.id] for m in kept[index + 1 :])
            break
    return replace(
        data,
        log=MessageLog.of(kept, tokens),
        prompt_cache=last_cache(kept),
        anchor=anchor,
        added=Added(tokens=after) if anchor is not None else Added(),
        version=data.version + 1,
    )


def _anchor_of(data: SessionData, message: Message, tokens: int) -> Anchor:
    """The anchor a call message gives (the current one when it is that message's); never
    learnt from: the next figure follows a rewind."""
    if data.anchor is not None and data.anchor.call.message_id == message.id:
        return replace(data.anchor, learn=False)
    usage = message.usage
    assert usage is not None
    framing = message_overhead(message.role, data.model.provider)
    call = call_figures(message.id, usage, None, None)
    return Anchor(call, anchor_output(usage, tokens - framing), learn=False)
