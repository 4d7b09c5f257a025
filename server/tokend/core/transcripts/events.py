"""Claude Code JSONL transcripts -> an ordered list of events (messages, provider calls, compactions).

Pure: takes JSON lines (str) or already parsed records (dicts); no file access.

What a transcript holds, and what this parser keeps:

- `user` records: a prompt (string content or text/image blocks) -> a "user" message; tool results
  (`tool_result` blocks) -> a "tool" message. `isMeta` prompts (e.g. the local-command caveat) are sent
  to the model too, so they are kept (flagged `meta`). The compaction summary prompt is flagged
  `compact_summary`.
- `assistant` records: one provider response is written as several records (one content block each)
  sharing (`message.id`, `requestId`), sometimes interleaved with the tool results of their earlier
  blocks. They become ONE `ProviderCall` (the usage of the LAST record: output_tokens grows while
  streaming) followed by ONE "assistant" message holding every block in record order, both placed
  where the first record was.
- `system` records with subtype `compact_boundary` -> `CompactionBoundary` (with preTokens).
- Skipped: `progress`, `file-history-snapshot`, `queue-operation` (client bookkeeping), every record
  with `isSidechain` true (sub-agent traffic, another context window), other `system` subtypes
  (`local_command`, `stop_hook_summary`, `turn_duration`: UI notes; a local command's visible output is
  also written as a `user` record, which is kept), and record types this parser does not know.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tokend.core.types import (
    ImagePart,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)

SKIPPED_TYPES = frozenset({"progress", "file-history-snapshot", "queue-operation"})


@dataclass(frozen=True, slots=True)
class TranscriptMessage:
    """One message as the model sees it. role is "user", "assistant" or "tool"."""

    role: Role
    parts: tuple[Part, ...]
    uuid: str | None = None  # the first record's uuid
    provider_message_id: str | None = None  # assistant messages: the provider's message id
    meta: bool = False  # a prompt the client hides from the user but sends to the model
    compact_summary: bool = False  # the summary that starts a window after a compaction
    at: datetime | None = None  # when the agent wrote it (its first record's `timestamp`)


def record_time(record: Mapping[str, Any]) -> datetime | None:
    """A record's `timestamp` (ISO 8601, as Claude Code and Codex write it), None without one."""
    stamp = str(record.get("timestamp"))
    try:
        at = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class ProviderCall:
    """One provider request/response; usage in tokens as the provider reported it (last record)."""

    provider_message_id: str
    request_id: str | None
    model: str | None
    usage: Usage


@dataclass(frozen=True, slots=True)
class CompactionBoundary:
    """The client compacted the conversation here; pre_tokens = context size (tokens) before it."""

    pre_tokens: int | None
    trigger: str | None = None
    at: datetime | None = None  # the boundary record's `timestamp`


TranscriptEvent = TranscriptMessage | ProviderCall | CompactionBoundary


def parse_transcript(lines: Iterable[str | Mapping[str, Any]]) -> list[TranscriptEvent]:
    """Parse a transcript into ordered events. Blank lines are ignored; a malformed JSON line raises
    ValueError naming its line number (1-based)."""
    records = list(_records(lines))
    responses = _group_responses(records)
    tool_names: dict[str, str] = {}
    events: list[TranscriptEvent] = []
    emitted: set[tuple[str, str | None]] = set()
    for record in records:
        kind = record.get("type")
        if kind == "assistant":
            key = _response_key(record)
            if key in emitted:
                continue
            emitted.add(key)
            call, message = responses[key]
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    tool_names[part.call_id] = part.name
            events.extend((call, message))
        elif kind == "user":
            user_message = _user_message(record, tool_names)
            if user_message is not None:
                events.append(user_message)
        elif kind == "system" and record.get("subtype") == "compact_boundary":
            metadata = record.get("compactMetadata") or {}
            events.append(
                CompactionBoundary(
                    pre_tokens=_int_or_none(metadata.get("preTokens")),
                    trigger=metadata.get("trigger"),
                    at=record_time(record),
                )
            )
    return events


def provider_calls(events: Iterable[TranscriptEvent]) -> list[ProviderCall]:
    """Only the provider calls, in order."""
    return [event for event in events if isinstance(event, ProviderCall)]


def _records(lines: Iterable[str | Mapping[str, Any]]) -> Iterable[Mapping[str, Any]]:
    for number, line in enumerate(lines, start=1):
        if isinstance(line, Mapping):
            record: Any = line
        else:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"transcript line {number} is not JSON: {error.msg}") from error
        if not isinstance(record, Mapping):
            continue
        if record.get("type") in SKIPPED_TYPES or record.get("isSidechain") is True:
            continue
        yield record


def _response_key(record: Mapping[str, Any]) -> tuple[str, str | None]:
    message = record.get("message") or {}
    return (str(message.get("id") or record.get("uuid")), record.get("requestId"))


def _group_responses(
    records: list[Mapping[str, Any]],
) -> dict[tuple[str, str | None], tuple[ProviderCall, TranscriptMessage]]:
    """(message.id, requestId) -> (call with the last record's usage, message with all blocks)."""
    blocks: dict[tuple[str, str | None], list[Part]] = {}
    last: dict[tuple[str, str | None], Mapping[str, Any]] = {}
    first_uuid: dict[tuple[str, str | None], str | None] = {}
    first_at: dict[tuple[str, str | None], datetime | None] = {}
    for record in records:
        if record.get("type") != "assistant":
            continue
        key = _response_key(record)
        blocks.setdefault(key, []).extend(_assistant_parts(record))
        first_uuid.setdefault(key, record.get("uuid"))
        first_at.setdefault(key, record_time(record))
        last[key] = record
    grouped = {}
    for key, record in last.items():
        message = record.get("message") or {}
        call = ProviderCall(
            provider_message_id=key[0],
            request_id=key[1],
            model=message.get("model"),
            usage=_usage(message.get("usage") or {}),
        )
        grouped[key] = (
            call,
            TranscriptMessage(
                role="assistant",
                parts=tuple(blocks[key]),
                uuid=first_uuid[key],
                provider_message_id=key[0],
                at=first_at[key],
            ),
        )
    return grouped


def _usage(raw: Mapping[str, Any]) -> Usage:
    """Anthropic's usage object; `cache_creation.ephemeral_1h_input_tokens` is the share of
    `cache_creation_input_tokens` written with a 1-hour lifetime (capped at that total)."""
    cache_write = _int_or_none(raw.get("cache_creation_input_tokens")) or 0
    by_lifetime = raw.get("cache_creation")
    written_1h = (
        _int_or_none(by_lifetime.get("ephemeral_1h_input_tokens"))
        if isinstance(by_lifetime, Mapping)
        else None
    )
    return Usage(
        input_tokens=_int_or_none(raw.get("input_tokens")) or 0,
        output_tokens=_int_or_none(raw.get("output_tokens")) or 0,
        cache_read_tokens=_int_or_none(raw.get("cache_read_input_tokens")) or 0,
        cache_write_tokens=cache_write,
        cache_write_1h_tokens=min(written_1h or 0, cache_write),
    )


def _assistant_parts(record: Mapping[str, Any]) -> list[Part]:
    content = (record.get("message") or {}).get("content")
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    parts: list[Part] = []
    for block in content or ():
        part = _block_part(block)
        if part is not None:
            parts.append(part)
    return parts


def _block_part(block: Mapping[str, Any]) -> Part | None:
    """An assistant or user content block as a part (tool results are handled by the caller)."""
    kind = block.get("type")
    if kind == "text":
        return TextPart(str(block.get("text", "")))
    if kind == "thinking":
        metadata = {"signature": block["signature"]} if "signature" in block else None
        return ReasoningPart(str(block.get("thinking", "")), provider_metadata=metadata)
    if kind == "redacted_thinking":
        return ReasoningPart("", provider_metadata={"redacted": block.get("data")})
    if kind in ("tool_use", "server_tool_use"):
        return ToolCallPart(
            str(block.get("id", "")), str(block.get("name", "")), block.get("input")
        )
    if kind == "image":
        source = block.get("source") or {}
        return ImagePart(str(source.get("media_type", "image/*")), source.get("data"))
    return None


def _user_message(
    record: Mapping[str, Any], tool_names: Mapping[str, str]
) -> TranscriptMessage | None:
    content = (record.get("message") or {}).get("content")
    parts: list[Part] = []
    has_tool_result = False
    if isinstance(content, str):
        parts.append(TextPart(content))
    else:
        for block in content or ():
            if block.get("type") == "tool_result":
                has_tool_result = True
                parts.extend(_tool_result_parts(block, tool_names))
            else:
                part = _block_part(block)
                if part is not None:
                    parts.append(part)
    if not parts:
        return None
    return TranscriptMessage(
        role="tool" if has_tool_result else "user",
        parts=tuple(parts),
        uuid=record.get("uuid"),
        meta=bool(record.get("isMeta")),
        compact_summary=bool(record.get("isCompactSummary")),
        at=record_time(record),
    )


def _tool_result_parts(block: Mapping[str, Any], tool_names: Mapping[str, str]) -> list[Part]:
    """A tool_result block: its text (string, or text blocks joined by newlines), then its images."""
    call_id = str(block.get("tool_use_id", ""))
    content = block.get("content")
    images: list[Part] = []
    if isinstance(content, str):
        output = content
    else:
        texts = []
        for item in content or ():
            if item.get("type") == "text":
                texts.append(str(item.get("text", "")))
            elif item.get("type") == "image":
                image = _block_part(item)
                if image is not None:
                    images.append(image)
        output = "\n".join(texts)
    result = ToolResultPart(
        call_id=call_id,
        name=tool_names.get(call_id, ""),
        output=output,
        is_error=bool(block.get("is_error")),
    )
    return [result, *images]


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
