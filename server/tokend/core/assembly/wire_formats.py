"""Stored messages as provider request shapes: OpenAI Chat Completions and Anthropic Messages.

Two steps. `render_message` (here) turns ONE message into wire messages; its output depends
only on that message, so callers may memoize it by message id (the output must then never be
mutated). A `Joiner` (wire_join.py) then strings rendered messages into a request the provider
accepts. Token counts are not touched here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

from tokend.core.counting.media_tokens import provider_family
from tokend.core.counting.render import (
    PRUNED_TOOL_RESULT,
    provider_summary_text,
    summary_text,
    to_json_text,
)
from tokend.core.types import (
    CompactionPart,
    FilePart,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    StoredPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

WireFormat = Literal["openai", "anthropic"]
WIRE_FORMATS: tuple[WireFormat, ...] = ("openai", "anthropic")
WireMessage = dict[str, Any]


def render_message(message: Message, fmt: WireFormat) -> tuple[WireMessage, ...]:
    """The wire messages for one stored message (several when an assistant step has tool results).

    A summary message is never the user's: OpenAI gets a system message, Anthropic (whose
    messages are only the user's and the assistant's) a system block, a wire message of role
    "system" that `split_system_blocks` takes out of the conversation; both read
    `summary_text`. Pruned tool results render as PRUNED_TOOL_RESULT.
    """
    if fmt not in WIRE_FORMATS:
        raise ValueError(f"unknown wire format {fmt!r}; expected one of {WIRE_FORMATS}")
    if message.summary:
        return _summary_wire(message, fmt)
    said_as = _speaker(message, fmt)
    if len(message.parts) == 1 and type(message.parts[0].part) is TextPart:
        return _one_text(said_as, message.parts[0].part.text, fmt)  # most of a session's
    wire: list[WireMessage] = []
    compaction = _provider_compaction(message)
    if compaction is not None and not _kept_in_content(compaction, fmt):
        wire.append(_compaction_wire(compaction, fmt))
        parts = tuple(sp for sp in message.parts if sp.part is not compaction)
        message = replace(message, parts=parts)
    said: list[StoredPart] = []
    results: list[StoredPart] = []
    if said_as != "assistant":  # results first: Anthropic wants tool_result blocks leading
        for sp in message.parts:
            (results if isinstance(sp.part, ToolResultPart) else said).append(sp)
        if results:
            _emit(wire, fmt, "user", (), results)
        if said:
            _emit(wire, fmt, said_as, said, ())
        return tuple(wire)
    for sp in message.parts:
        if isinstance(sp.part, ToolResultPart):
            results.append(sp)
            continue
        if results:  # a new step after the results of the previous one
            _emit(wire, fmt, "assistant", said, results)
            said, results = [], []
        said.append(sp)
    _emit(wire, fmt, "assistant", said, results)
    return tuple(wire)


def _one_text(role: str, text: str, fmt: WireFormat) -> tuple[WireMessage, ...]:
    """What `_emit` makes of a message of one text part, built without its lists."""
    if fmt == "openai":
        return ({"role": role, "content": text},) if text else ()
    return ({"role": role, "content": [{"type": "text", "text": text}]},) if text.strip() else ()


def _provider_compaction(message: Message) -> CompactionPart | None:
    for sp in message.parts:
        if isinstance(sp.part, CompactionPart) and sp.part.provider is not None:
            return sp.part
    return None


def _kept_in_content(part: CompactionPart, fmt: WireFormat) -> bool:
    """Anthropic's compaction block goes back as a block of the assistant's content."""
    return fmt == "anthropic" and part.provider == "anthropic"


def _compaction_wire(part: CompactionPart, fmt: WireFormat) -> WireMessage:
    """A provider's compaction before the rest of its message: OpenAI's compaction item as the
    Responses API takes it back; another provider's as a summary (a system message, never the
    user's)."""
    if fmt == "openai" and part.provider == "openai" and part.opaque:
        item: WireMessage = {"type": "compaction", "encrypted_content": part.opaque}
        if part.item_id:
            item["id"] = part.item_id
        return item
    text = provider_summary_text(part.provider or "", part.summary)
    if fmt == "openai":
        return {"role": "system", "content": text}
    return {"role": "system", "content": [{"type": "text", "text": text}]}


def _summary_wire(message: Message, fmt: WireFormat) -> tuple[WireMessage, ...]:
    texts = [part_text_of_summary(sp.part) for sp in message.parts]
    text = "\n\n".join(t for t in texts if t)
    if fmt == "openai":
        return ({"role": "system", "content": text},)
    return ({"role": "system", "content": [{"type": "text", "text": text}]},)


def part_text_of_summary(part: Part) -> str:
    """What a part of a summary message reads as (its summary, marked)."""
    if isinstance(part, CompactionPart):
        return summary_text(part.summary)
    if isinstance(part, TextPart):
        return part.text
    return ""


def split_system_blocks(
    wires: Sequence[WireMessage], fmt: WireFormat
) -> tuple[list[dict[str, Any]], list[WireMessage]]:
    """(system blocks, the conversation): Anthropic takes summaries as system blocks, not as
    messages; OpenAI keeps its system messages in place (nothing is taken out)."""
    if fmt == "openai":
        return [], list(wires)
    blocks: list[dict[str, Any]] = []
    rest: list[WireMessage] = []
    for wire in wires:
        if wire["role"] == "system":
            blocks.extend(wire["content"])
        else:
            rest.append(wire)
    return blocks, rest


def _speaker(message: Message, fmt: WireFormat) -> str:
    if message.role in ("user", "tool"):
        return "user"
    if message.role == "system":
        return "system" if fmt == "openai" else "user"
    return "assistant"


def _emit(
    wire: list[WireMessage],
    fmt: WireFormat,
    role: str,
    said: Sequence[StoredPart],
    results: Sequence[StoredPart],
) -> None:
    if fmt == "openai":
        said_message = _openai_said(role, said) if said else None
        if said_message is not None and role == "assistant":
            wire.append(said_message)
        wire.extend(map(_openai_result, results))
        if said_message is not None and role != "assistant":
            wire.append(said_message)
        return
    blocks = list(map(_anthropic_result, results)) if role == "user" else []
    blocks.extend([b for sp in said if (b := _anthropic_block(role, sp.part)) is not None])
    if blocks:
        wire.append({"role": role, "content": blocks})
    if role == "assistant" and results:
        wire.append({"role": "user", "content": [_anthropic_result(sp) for sp in results]})


def _result_text(sp: StoredPart) -> str:
    assert isinstance(sp.part, ToolResultPart)
    return PRUNED_TOOL_RESULT if sp.compacted_at is not None else sp.part.output


def _mention(part: Any) -> str:
    match part:
        case FilePart(path=path):
            return f"[file: {path}]"
        case ImagePart(media_type=media_type):
            return f"[image: {media_type}]"
        case ToolCallPart(name=name, input=value):
            return f"[tool call {name}: {to_json_text(value)}]"
    raise TypeError(f"no mention for {part!r}")


def _openai_said(role: str, said: Sequence[StoredPart]) -> WireMessage | None:
    content: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for sp in said:
        part = sp.part
        if isinstance(part, (TextPart, CompactionPart)):
            text = part.text if isinstance(part, TextPart) else part.summary
            if text:
                content.append({"type": "text", "text": text})
        elif isinstance(part, ToolCallPart) and role == "assistant":
            function = {"name": part.name, "arguments": to_json_text(part.input)}
            calls.append({"id": part.call_id, "type": "function", "function": function})
        elif isinstance(part, ImagePart) and role == "user" and part.data_base64:
            url = f"data:{part.media_type};base64,{part.data_base64}"
            content.append({"type": "image_url", "image_url": {"url": url}})
        elif not isinstance(part, ReasoningPart):  # reasoning is never sent to OpenAI
            content.append({"type": "text", "text": _mention(part)})
    if not content and not calls:
        return None
    message: WireMessage = {"role": role, "content": _openai_content(content)}
    if calls:
        message["tool_calls"] = calls
    return message


def _openai_content(content: list[dict[str, Any]]) -> str | list[dict[str, Any]] | None:
    if not content:
        return None
    if len(content) == 1 and content[0]["type"] == "text":
        text: str = content[0]["text"]
        return text
    return content


def _openai_result(sp: StoredPart) -> WireMessage:
    assert isinstance(sp.part, ToolResultPart)
    return {"role": "tool", "tool_call_id": sp.part.call_id, "content": _result_text(sp)}


def _anthropic_result(sp: StoredPart) -> dict[str, Any]:
    part = sp.part
    assert isinstance(part, ToolResultPart)
    return {
        "type": "tool_result",
        "tool_use_id": part.call_id,
        "content": _result_text(sp),
        "is_error": part.is_error,
    }


def _anthropic_block(role: str, part: Any) -> dict[str, Any] | None:
    """One content block (None: nothing to send, e.g. blank text or reasoning outside assistant)."""
    match part:
        case CompactionPart(provider="anthropic", summary=summary) if role == "assistant":
            return {"type": "compaction", "content": summary}
        case TextPart(text=text) | CompactionPart(summary=text):
            return {"type": "text", "text": text} if text.strip() else None
        case ReasoningPart():
            return _anthropic_thinking(part) if role == "assistant" else None
        case ToolCallPart(call_id=call_id, name=name, input=value) if role == "assistant":
            tool_input = value if isinstance(value, dict) else {"input": value}
            return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}
        case ImagePart(media_type=media_type, data_base64=data) if role == "user" and data:
            source = {"type": "base64", "media_type": media_type, "data": data}
            return {"type": "image", "source": source}
    return {"type": "text", "text": _mention(part)}


def _anthropic_thinking(part: ReasoningPart) -> dict[str, Any] | None:
    metadata: Any = part.provider_metadata or {}
    if isinstance(metadata.get("anthropic"), dict):
        metadata = metadata["anthropic"]
    # "redacted" is how the Claude Code importer stores a redacted_thinking block's data.
    redacted = (
        metadata.get("redactedData") or metadata.get("redacted_data") or metadata.get("redacted")
    )
    if redacted is None and metadata.get("type") == "redacted_thinking":
        redacted = metadata.get("data")
    if redacted is not None:
        return {"type": "redacted_thinking", "data": redacted}
    if not metadata.get("signature"):
        return None  # Anthropic rejects a thinking block it did not sign: leave it out
    return {"type": "thinking", "thinking": part.text, "signature": metadata["signature"]}


def default_format(provider: str | None) -> WireFormat:
    """The wire format a provider's requests take: Anthropic's Messages for its family (unknown
    providers included, as the estimator assumes), OpenAI's Chat Completions otherwise."""
    return "anthropic" if provider_family(provider) == "anthropic" else "openai"


def part_is_sent(part: Part, role: str, fmt: WireFormat) -> bool:
    """Whether `render_message` puts the part's text in the request (what is not sent costs
    nothing): OpenAI never receives reasoning; Anthropic takes signed or redacted thinking from
    the assistant only."""
    if not isinstance(part, ReasoningPart):
        return True
    if fmt == "openai" or role != "assistant":
        return False
    return _anthropic_thinking(part) is not None
