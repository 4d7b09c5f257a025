"""A session's state as immutable data, and the one function that moves it on: `evolve`.

`SessionData` is what a loaded session knows: its window of messages, what each costs, the
last provider call the gauge is anchored on, lifetime totals. Every change (`core.changes`)
goes through `evolve(data, change)`, which returns the next data and what to learn from it;
nothing else builds one. Its gauge is `core.gauge.gauge_snapshot`. Figures are in tokens."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from tokend.core.accounting import (
    EstimateError,
    anchor_usage,
    billed_usages,
    predict_next_input,
    provider_compaction,
    total_usage,
)
from tokend.core.catalog import ModelInfo
from tokend.core.changes import (
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
from tokend.core.errors import VersionConflict
from tokend.core.framing import message_overhead, reply_priming
from tokend.core.message_log import MessageLog
from tokend.core.prompt_cache import cache_after, last_cache
from tokend.core.replay import MEASURED_RULES
from tokend.core.snapshot import CallFigures, PromptCacheFigures, Totals
from tokend.core.totals import add_usage as add_usage  # loading.py reads it here
from tokend.core.types import CompactionPart, ContentClass, Message, SessionInfo, Usage
from tokend.core.usage_stats import TimeTally, add_message

ERROR_HISTORY = 200  # estimate errors kept per session (and persisted)


@dataclass(frozen=True, slots=True)
class Anchor:
    """The last provider call, as the gauge builds on it.

    `output_tokens` is the call's output as the gauge counts it (the message's own count when the
    reported figure was a streaming snapshot). `delta_tokens` are known changes since the call
    that no provider has seen yet: a prune frees its results and adds placeholders, so the gauge
    stays anchored and moves by exactly that much. `learn` is False once such a change happened:
    the next call's figure then mixes it with the added messages, which would teach calibration
    the wrong thing."""

    call: CallFigures
    output_tokens: int
    delta_tokens: int = 0
    learn: bool = True


@dataclass(frozen=True, slots=True)
class Added:
    """What was appended since the last provider call (the estimate the next call checks)."""

    tokens: int = 0  # as the gauge counts them (framing included)
    framing_tokens: int = 0
    fixed_tokens: int = 0  # images and other fixed amounts (not learnt from)
    raw_text_tokens: float = 0.0  # estimate of the text before the model's correction
    chars_by_class: Mapping[ContentClass, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SessionData:
    info: SessionInfo
    model: ModelInfo
    log: MessageLog  # from the last compaction boundary, oldest first, with their tokens
    version: int
    measured: Mapping[str, int] = field(default_factory=dict)  # system, tools, ... (last assembly)
    measured_exact: bool = True
    anchor: Anchor | None = None
    added: Added = Added()
    totals: Totals = Totals()
    cost_by_model: Mapping[str, float] = field(default_factory=dict)
    compactions: int = 0
    errors: tuple[EstimateError, ...] = ()
    times: TimeTally = TimeTally()  # every message of the session so far, all windows
    prompt_cache: PromptCacheFigures | None = None  # what the window's last cached call left
    pending_exact: frozenset[str] = frozenset()  # messages counted by estimate, exact to come

    @property
    def id(self) -> str:
        return self.info.id

    @property
    def messages(self) -> Sequence[Message]:
        return self.log.messages

    @property
    def message_tokens(self) -> Mapping[str, int]:
        """Message id -> tokens as sent (framing, placeholders)."""
        return self.log.tokens

    def used_tokens(self) -> tuple[int, bool]:
        """(tokens the next request will consume, estimated?)."""
        if self.anchor is not None:
            return anchor_tokens(self.anchor, self.model) + self.added.tokens, False
        whole = sum(self.measured.values()) + self.log.total_tokens
        primed = reply_priming(self.model.provider, self.model.tokenizer)
        return whole + (primed if whole else 0), True  # an empty session has no request yet


def anchor_tokens(anchor: Anchor, model: ModelInfo) -> int:
    """What the last call puts in the next request: its input (cached included) plus its
    output as the gauge counts it, less reasoning the provider strips, plus known deltas."""
    call = anchor.call
    usage = Usage(
        input_tokens=call.input_tokens,
        output_tokens=anchor.output_tokens,
        reasoning_tokens=call.reasoning_tokens,
        cache_read_tokens=call.cache_read_tokens,
        cache_write_tokens=call.cache_write_tokens,
    )
    dropped = min(call.reasoning_tokens, anchor.output_tokens) if model.strips_reasoning else 0
    return predict_next_input(usage, 0, dropped) + anchor.delta_tokens


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
            return Evolved(_new_window(data, change))
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
            from tokend.core.count_upgrade import edited  # it builds on this module

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
        return Evolved(_provider_window(data, change, boundary))
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
    actual = usage.context_tokens
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


def call_figures(
    message_id: str, usage: Usage, predicted: int | None, error_pct: float | None
) -> CallFigures:
    """The provider call a message carried, with what the gauge had predicted for it."""
    return CallFigures(
        message_id=message_id,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        reasoning_tokens=usage.reasoning_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        predicted_tokens=predicted,
        error_pct=error_pct,
    )


def anchor_output(usage: Usage, content_tokens: int) -> int:
    """The call's output as the gauge counts it. A reported output far below the message's own
    count is a streaming snapshot, not the final figure (seen in real transcripts): the
    message's count stands in for it."""
    if usage.output_tokens < MEASURED_RULES.final_output_share * content_tokens:
        return content_tokens
    return max(usage.output_tokens, 0)


def _prune(data: SessionData, change: PruneParts) -> SessionData:
    wanted = change.part_ids
    messages = []
    tokens = dict(data.message_tokens)
    anchor = data.anchor
    # Messages up to the anchor's are inside the provider's last figure: their change moves
    # the anchor; later ones were added since, and move what was added.
    after_anchor = anchor is None
    delta_anchor = delta_added = 0
    for message in data.messages:
        if message.id in change.message_tokens:
            parts = tuple(
                replace(sp, compacted_at=change.at)
                if sp.id in wanted and sp.compacted_at is None
                else sp
                for sp in message.parts
            )
            message = replace(message, parts=parts)
            new = change.message_tokens[message.id]
            if after_anchor:
                delta_added += new - tokens.get(message.id, 0)
            else:
                delta_anchor += new - tokens.get(message.id, 0)
            tokens[message.id] = new
        messages.append(message)
        if anchor is not None and message.id == anchor.call.message_id:
            after_anchor = True
    added = data.added
    if anchor is not None:
        anchor = replace(anchor, delta_tokens=anchor.delta_tokens + delta_anchor, learn=False)
        added = replace(added, tokens=added.tokens + delta_added)
    return replace(
        data,
        info=replace(data.info, compacted_at=change.at),
        log=MessageLog.of(messages, tokens),
        anchor=anchor,
        added=added,
        compactions=data.compactions + 1,
        version=data.version + 1,
    )


def _new_window(data: SessionData, change: NewWindow) -> SessionData:
    """A compaction boundary: the summary stands for the covered run at the start of the
    window; the rest follows it. The whole context is counted again (no provider figure
    describes it yet). Raises VersionConflict when the covered messages are no longer the
    start of the window (another compaction or a rewind got there first): appends made while
    the summary was written do not conflict, they come after it."""
    message, covered = change.message, change.covered
    head = data.messages[: len(covered)]
    if len(head) != len(covered) or any(m.id not in covered for m in head):
        raise VersionConflict(
            f"session {data.id} changed while it was being compacted (another compaction or "
            "a rewind came first): compact again",
            {"currentVersion": data.version},
        )
    kept = data.messages[len(covered) :]
    tokens = {message.id: change.tokens}
    tokens.update((m.id, data.message_tokens[m.id]) for m in kept)
    return replace(
        data,
        info=replace(data.info, compacted_at=message.created_at),
        log=MessageLog.of((message, *kept), tokens),
        prompt_cache=last_cache(kept),
        anchor=None,
        added=Added(),
        compactions=data.compactions + 1,
        version=data.version + 2,  # a message and a compaction (as a reload counts them)
        times=add_message(data.times, message),
    )


def _provider_window(data: SessionData, change: AppendMessage, part: CompactionPart) -> SessionData:
    """A message carrying the provider's own compaction: a boundary. The window restarts at
    it (what came before leaves the live context, and stays in the store). Every iteration
    the call was billed for goes into the totals; the gauge anchors on the iteration after the
    compaction (core.accounting.anchor_usage), or counts the window when none describes it. An
    opaque compaction (no text to count) counts as the tokens the provider wrote for it."""
    message, counts = change.message, change.counts
    usage = message.usage
    tokens = counts.total
    if not part.summary and part.iterations and part.iterations[-1].type == "compaction":
        tokens += part.iterations[-1].output_tokens
    compacted = replace(
        data,
        info=replace(data.info, compacted_at=message.created_at),
        log=MessageLog.of((message,), {message.id: tokens}),
        prompt_cache=cache_after(None, message),
        anchor=None,
        added=Added(),
        compactions=data.compactions + 1,
        version=data.version + 1,
        times=add_message(data.times, message),
    )
    if usage is None:
        return compacted
    billed = billed_usages(usage, part)
    errors = data.errors
    if data.anchor is not None and change.learn and billed[0].context_tokens > 0:
        # The request as sent: what its first iteration consumed.
        errors = (*errors, EstimateError(data.used_tokens()[0], billed[0].context_tokens))
    costs = dict(compacted.cost_by_model)
    model = message.model or compacted.model.name
    costs[model] = costs.get(model, 0.0) + (message.cost_usd or 0.0)
    anchored = anchor_usage(usage, part)
    anchor = None
    if anchored is not None:
        content = sum(
            t
            for sp, t, sent in zip(message.parts, counts.tokens, counts.sent, strict=True)
            if sent and sp.part is not part
        )
        call = call_figures(message.id, anchored, None, None)
        anchor = Anchor(call, anchor_output(anchored, content), learn=False)
    return replace(
        compacted,
        anchor=anchor,
        totals=add_usage(compacted.totals, total_usage(billed)),
        cost_by_model=costs,
        errors=errors[-ERROR_HISTORY:],
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
