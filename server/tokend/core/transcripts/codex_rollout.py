"""Codex CLI rollout files -> the transcript events tokend imports (core.transcripts.events's types).

Pure: takes parsed records (dicts); no file access. Codex writes one rollout per session,
`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl` (CODEX_HOME defaults to ~/.codex),
one JSON record a line, flushed as it goes: `{timestamp, type, payload}` where `type` is

- `session_meta` (the first line): `{id, timestamp, cwd, originator, cli_version, git?}`.
- `turn_context` (before each turn): `{cwd, model, effort?, ...}`: the model of the turn's calls.
- `response_item`: the conversation as the model sees it, in order:
  `message {role: user|assistant|developer|system, content: [{type: input_text|output_text,
  text} | {type: input_image, image_url}]}`, `reasoning {summary: [{type: summary_text, text}],
  content?: [{type: reasoning_text, text}], encrypted_content?}`, `function_call {name,
  arguments (a JSON string), call_id}`, `function_call_output {call_id, output}` (`output` a
  string, or `{content, success}`), `custom_tool_call {name, input, call_id}`,
  `custom_tool_call_output {call_id, output}`, `local_shell_call {call_id, action: {command}}`,
  `web_search_call {action?}`.
- `event_msg`: what the UI shows. Only `token_count` is read: `{info: {total_token_usage,
  last_token_usage, model_context_window} | null, rate_limits}`, each usage `{input_tokens
  (cached included), cached_input_tokens, output_tokens (reasoning included),
  reasoning_output_tokens, total_tokens}`. One follows every model response; it is written
  again with the same totals when only the rate limits changed.
- `compacted`: `{message, replacement_history?}`: Codex compacted the conversation; `message`
  is the summary the new window starts with.

Mapping: a response's items (reasoning, assistant text, tool calls) become one assistant message
preceded by one ProviderCall with its `last_token_usage` (input = input - cached, cacheRead =
cached, output and reasoning as reported); both are emitted when that token_count arrives, and
tool outputs written before it follow the message. A user message is "user", developer and
system messages "system", tool outputs "tool". `compacted` is a CompactionBoundary followed by
the summary (flagged `compact_summary`). Each message's uuid is `line:N`, N the 1-based index of
its first record: rollouts are append-only, so it names the same message on every read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tokend.core.transcripts.events import (
    CompactionBoundary,
    ProviderCall,
    TranscriptEvent,
    TranscriptMessage,
)
from tokend.core.types import ImagePart, Part, ReasoningPart, Role, TextPart, ToolCallPart, Usage
from tokend.core.types import ToolResultPart as ResultPart

ASSISTANT_ITEMS = frozenset(
    {"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
)
OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output"})
ROLES: Mapping[str, Role] = {"user": "user", "developer": "system", "system": "system"}


@dataclass(frozen=True)
class RolloutOrigin:
    """What the records say about the session: Codex's id, its folder, model and window."""

    session_id: str | None
    cwd: str | None
    model: str | None
    context_window: int | None  # tokens, as Codex reports it (model_context_window)


def rollout_origin(records: Sequence[Mapping[str, Any]]) -> RolloutOrigin:
    """The session id and cwd of `session_meta`, the first turn's model, the first window."""
    session_id = cwd = model = None
    window: int | None = None
    for record in records:
        payload = record.get("payload")
        if not isinstance(payload, Mapping):
            continue
        kind = record.get("type")
        if kind == "session_meta":
            session_id = session_id or _text(payload.get("id"))
            cwd = cwd or _text(payload.get("cwd"))
        elif kind == "turn_context":
            model = model or _text(payload.get("model"))
            cwd = cwd or _text(payload.get("cwd"))
        elif kind == "event_msg" and payload.get("type") == "token_count":
            info = payload.get("info")
            if isinstance(info, Mapping) and window is None:
                window = _count(info.get("model_context_window"))
    return RolloutOrigin(session_id, cwd, model, window)


@dataclass
class _Pending:
    """The response being written: its items, and tool outputs that came before its usage."""

    uuid: str | None = None
    parts: list[Part] = field(default_factory=list)
    outputs: list[TranscriptMessage] = field(default_factory=list)


def parse_rollout(
    records: Sequence[Mapping[str, Any]], *, final: bool = True
) -> list[TranscriptEvent]:
    """The events of a rollout, in order. With `final` false (a file still being written), a
    response whose token_count has not arrived yet is left out: it is emitted, whole, by a
    later parse that sees its usage."""
    events: list[TranscriptEvent] = []
    pending = _Pending()
    tool_names: dict[str, str] = {}
    last_totals: Any = None
    model: str | None = None
    for number, record in enumerate(records, start=1):
        payload = record.get("payload")
        if not isinstance(payload, Mapping):
            continue
        kind, item = record.get("type"), payload.get("type")
        uuid = f"line:{number}"
        if kind == "turn_context":
            model = _text(payload.get("model")) or model
        elif kind == "compacted":
            _flush(events, pending, None, model)
            pending = _Pending()
            summary = str(payload.get("message") or "")
            events.append(CompactionBoundary(pre_tokens=None, trigger="codex"))
            events.append(
                TranscriptMessage("user", (TextPart(summary),), uuid, compact_summary=True)
            )
        elif kind == "event_msg" and item == "token_count":
            info = payload.get("info")
            if not isinstance(info, Mapping) or info.get("total_token_usage") == last_totals:
                continue  # no usage yet, or the same figures again (a rate-limit update)
            last_totals = info.get("total_token_usage")
            if pending.parts:
                _flush(events, pending, _usage(info.get("last_token_usage")), model)
                pending = _Pending()
        elif kind == "response_item":
            if item in ASSISTANT_ITEMS or (
                item == "message" and payload.get("role") == "assistant"
            ):
                pending.uuid = pending.uuid or uuid
                pending.parts.extend(_assistant_parts(payload, tool_names))
            elif item in OUTPUT_ITEMS:
                output = _output_message(payload, tool_names, uuid)
                (pending.outputs if pending.parts else events).append(output)
            elif item == "message":
                message = _prompt_message(payload, uuid)
                if message is not None:
                    _flush(events, pending, None, model)  # a response without usage (aborted)
                    pending = _Pending()
                    events.append(message)
    if final:
        _flush(events, pending, None, model)
    return events


def _flush(
    events: list[TranscriptEvent], pending: _Pending, usage: Usage | None, model: str | None
) -> None:
    if pending.parts:
        if usage is not None:
            events.append(ProviderCall(pending.uuid or "", None, model, usage))
        events.append(TranscriptMessage("assistant", tuple(pending.parts), pending.uuid))
    events.extend(pending.outputs)


def _usage(raw: Any) -> Usage | None:
    """Codex's TokenUsage as tokend's: its input_tokens include the cached ones, its
    output_tokens the reasoning ones."""
    if not isinstance(raw, Mapping):
        return None
    total_input = _count(raw.get("input_tokens")) or 0
    cached = min(_count(raw.get("cached_input_tokens")) or 0, total_input)
    output = _count(raw.get("output_tokens")) or 0
    reasoning = min(_count(raw.get("reasoning_output_tokens")) or 0, output)
    return Usage(
        input_tokens=total_input - cached,
        output_tokens=output,
        reasoning_tokens=reasoning,
        cache_read_tokens=cached,
    )


def _assistant_parts(payload: Mapping[str, Any], tool_names: dict[str, str]) -> list[Part]:
    item = payload.get("type")
    if item == "message":
        return [TextPart(text) for text in _texts(payload.get("content"))]
    if item == "reasoning":
        texts = _texts(payload.get("content")) or _texts(payload.get("summary"))
        metadata = (
            {"encryptedContent": payload["encrypted_content"]}
            if payload.get("encrypted_content")
            else None
        )
        return [ReasoningPart("\n".join(texts), provider_metadata=metadata)]
    call_id = str(payload.get("call_id") or payload.get("id") or "")
    if item == "function_call":
        name = str(payload.get("name") or "")
        tool_names[call_id] = name
        return [ToolCallPart(call_id, name, _json_or_text(payload.get("arguments")))]
    if item == "custom_tool_call":
        name = str(payload.get("name") or "")
        tool_names[call_id] = name
        return [ToolCallPart(call_id, name, payload.get("input"))]
    if item == "local_shell_call":
        tool_names[call_id] = "local_shell"
        return [ToolCallPart(call_id, "local_shell", payload.get("action"))]
    return [TextPart(json.dumps(payload.get("action") or {}, sort_keys=True))]  # web search


def _output_message(
    payload: Mapping[str, Any], tool_names: Mapping[str, str], uuid: str
) -> TranscriptMessage:
    call_id = str(payload.get("call_id") or "")
    output = payload.get("output")
    failed = False
    if isinstance(output, Mapping):
        failed = output.get("success") is False
        output = output.get("content")
    if isinstance(output, list):
        output = "\n".join(_texts(output))
    part = ResultPart(call_id, tool_names.get(call_id, ""), str(output or ""), is_error=failed)
    return TranscriptMessage("tool", (part,), uuid)


def _prompt_message(payload: Mapping[str, Any], uuid: str) -> TranscriptMessage | None:
    role = ROLES.get(str(payload.get("role")))
    if role is None:
        return None
    parts: list[Part] = []
    for block in payload.get("content") or ():
        if not isinstance(block, Mapping):
            continue
        if block.get("type") in ("input_text", "output_text", "text"):
            parts.append(TextPart(str(block.get("text", ""))))
        elif block.get("type") == "input_image":
            parts.append(ImagePart(_media_type(block.get("image_url"))))
    return TranscriptMessage(role, tuple(parts), uuid) if parts else None


def _texts(blocks: Any) -> list[str]:
    if isinstance(blocks, str):
        return [blocks]
    if not isinstance(blocks, list):
        return []
    return [str(b.get("text", "")) for b in blocks if isinstance(b, Mapping) and "text" in b]


def _media_type(url: Any) -> str:
    """`data:image/png;base64,...` -> image/png; anything else image/*."""
    if isinstance(url, str) and url.startswith("data:") and ";" in url:
        return url[5 : url.index(";")]
    return "image/*"


def _json_or_text(arguments: Any) -> Any:
    if not isinstance(arguments, str):
        return arguments
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
