"""A message on the wire, as session/append takes it (MessageParams, its `usage`: protocol.md's
Usage, with what the provider's context editing reported in it, `appliedEdits`: Anthropic's
`context_management.applied_edits`) and as session/messages gives it back (MessageWire and its
parts, protocol.md's Part). Shared by the session and assembly features; the parts an append
sends are read by hand (convert.py) so that a malformed part gets a precise message."""

from __future__ import annotations

from typing import Any

import attrs

from tokend.core.errors import InvalidParams
from tokend.core.types import (
    CompactionPart,
    FilePart,
    ImagePart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from tokend.core.types import Message as DomainMessage
from tokend.lsp.wire.common import omitted


@attrs.frozen
class IterationParams:
    type: str  # "compaction" | "message"
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@attrs.frozen
class AppliedEditParams:
    type: str  # "clear_tool_uses_20250919" | "clear_thinking_20251015" | a later edit's name
    cleared_input_tokens: int
    cleared_tool_uses: int = 0
    cleared_thinking_turns: int = 0


@attrs.frozen
class UsageParams:
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0  # the part of cache_write_tokens kept for an hour
    # Anthropic's usage.iterations: each sampling iteration, a provider's compaction included
    iterations: list[IterationParams] | None = None
    # Anthropic's context_management.applied_edits: what the provider cleared from the input
    applied_edits: list[AppliedEditParams] | None = None


@attrs.frozen
class MessageParams:
    role: str
    parts: list[Any]
    usage: UsageParams | None = None
    model: str | None = None
    duration_ms: int | None = None  # an assistant reply: from its request to its completion
    id: str | None = None  # client-chosen: the idempotency key of the append


# -- a stored message's parts, as session/messages sends them (`pruned` only when true) --------


@attrs.frozen
class TextPartWire:
    type: str  # "text", or "summary" for a compaction's summary
    text: str
    pruned: bool = omitted(False)


@attrs.frozen
class ReasoningPartWire:
    type: str
    text: str
    provider_metadata: dict[str, Any] | None = omitted()
    pruned: bool = omitted(False)


@attrs.frozen
class ToolCallPartWire:
    type: str
    call_id: str
    name: str
    input: Any
    pruned: bool = omitted(False)


@attrs.frozen
class ToolResultPartWire:
    """`output` is what the model sees; a gated one names its gate, ref and originalChars."""

    type: str
    call_id: str
    name: str
    output: str
    is_error: bool
    gate: str | None = omitted()
    ref: str | None = omitted()
    original_chars: int | None = omitted()
    pruned: bool = omitted(False)


@attrs.frozen
class ImagePartWire:
    type: str
    media_type: str
    data_base64: str | None = omitted()
    pruned: bool = omitted(False)


@attrs.frozen
class FilePartWire:
    type: str
    path: str
    pruned: bool = omitted(False)


@attrs.frozen
class CompactionPartWire:
    """A provider's own compaction (Anthropic's summary, OpenAI's opaque item and its id)."""

    type: str
    provider: str
    summary: str | None = omitted()
    opaque: str | None = omitted()
    id: str | None = omitted()
    pruned: bool = omitted(False)


PartWire = (
    TextPartWire
    | ReasoningPartWire
    | ToolCallPartWire
    | ToolResultPartWire
    | ImagePartWire
    | FilePartWire
    | CompactionPartWire
)


@attrs.frozen
class MessageWire:
    """One message of session/messages; `tokens` as the live context counts it (None when the
    message is out of it)."""

    message_id: str
    role: str
    kind: str  # "message" | "summary"
    parts: list[PartWire]
    created_at: str
    tokens: int | None
    live: bool
    compacted_at: str | None = omitted()
    compacted_by: str | None = omitted()
    model: str | None = omitted()


def cleared_figures(usage: UsageParams) -> dict[str, int]:
    """The provider's edits summed, as core.types.Usage keeps them (tokens, tool uses, thinking
    turns); InvalidParams for a total no request could have cleared."""
    edits = usage.applied_edits or []
    figures = {
        "cleared_input_tokens": sum(e.cleared_input_tokens for e in edits),
        "cleared_tool_uses": sum(e.cleared_tool_uses for e in edits),
        "cleared_thinking_turns": sum(e.cleared_thinking_turns for e in edits),
    }
    if figures["cleared_input_tokens"] > 2**31 - 1:
        raise InvalidParams(
            "message.usage.appliedEdits clear more than 2,147,483,647 input tokens in all"
        )
    return figures


def to_wire_part(part: Part, pruned: bool = False) -> PartWire:
    """A stored part as protocol.md's Part (a summary as {type: "summary", text}; a gated
    tool result's `output` is what the model sees, with {gate, ref, originalChars})."""
    match part:
        case TextPart(text=text):
            return TextPartWire("text", text, pruned=pruned)
        case ReasoningPart(text=text, provider_metadata=meta):
            return ReasoningPartWire("reasoning", text, provider_metadata=meta, pruned=pruned)
        case ToolCallPart(call_id=call_id, name=name, input=value):
            return ToolCallPartWire("toolCall", call_id, name, value, pruned=pruned)
        case ToolResultPart():
            return ToolResultPartWire(
                "toolResult",
                part.call_id,
                part.name,
                part.output,
                part.is_error,
                gate=part.gate,
                ref=part.ref if part.gate is not None else None,
                original_chars=part.original_chars if part.gate is not None else None,
                pruned=pruned,
            )
        case ImagePart(media_type=media_type, data_base64=data):
            return ImagePartWire("image", media_type, data_base64=data, pruned=pruned)
        case FilePart(path=path):
            return FilePartWire("file", path, pruned=pruned)
        case CompactionPart(provider=str(provider)):
            return CompactionPartWire(
                "compaction",
                provider,
                summary=part.summary or None,
                opaque=part.opaque or None,
                id=part.item_id or None,
                pruned=pruned,
            )
        case CompactionPart(summary=summary):
            return TextPartWire("summary", summary, pruned=pruned)
    raise TypeError(f"not a part: {part!r}")


def to_wire_message(stored: DomainMessage, tokens: int | None) -> MessageWire:
    """One message of session/messages; `tokens` as the live context counts it (None when
    the message is out of it). Times are ISO 8601 UTC."""
    compacted = stored.compacted_at is not None
    return MessageWire(
        stored.id,
        stored.role,
        "summary" if stored.summary else "message",
        [to_wire_part(sp.part, pruned=bool(sp.compacted_at)) for sp in stored.parts],
        stored.created_at.isoformat(),
        tokens,
        not compacted,
        compacted_at=stored.compacted_at.isoformat() if stored.compacted_at is not None else None,
        compacted_by=stored.compacted_by if compacted else None,
        model=stored.model,
    )
