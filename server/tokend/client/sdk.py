"""The provider SDKs' replies as `session/append` wants them: parts, usage and an id.

An agent that calls Anthropic's or OpenAI's Python SDK hands tokend the response object it got:

    reply = anthropic_reply(client.messages.create(...))
    tokend.append(sid, "assistant", reply.parts, usage=reply.usage, message_id=reply.id)
    results = [tool_result(call["callId"], call["name"], run(call)) for call in reply.tool_calls]
    tokend.append(sid, "tool", results)

The SDKs are not imported: a response is read as the SDK's pydantic model (`model_dump`) or as
the plain dict the HTTP API returns, so agents on either, or on a raw HTTP client, use the same
functions. Usage follows protocol.md's table (Anthropic reports uncached input apart; OpenAI
counts cached input, read or written, inside its input figure, so it is subtracted).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Part = dict[str, Any]


@dataclass(frozen=True)
class Reply:
    """One provider response in tokend's shape."""

    parts: list[Part]
    usage: dict[str, Any]
    id: str | None = None  # the provider's response id: a retried append stores it once
    model: str | None = None
    tool_calls: list[Part] = field(default_factory=list)  # the `toolCall` parts, in order


def tool_result(call_id: str, name: str, output: str, *, is_error: bool = False) -> Part:
    """A `toolResult` part answering the `toolCall` `call_id` (append it with role `tool`)."""
    return {
        "type": "toolResult",
        "callId": call_id,
        "name": name,
        "output": output,
        "isError": is_error,
    }


def anthropic_reply(message: Any) -> Reply:
    """An Anthropic Messages response (`anthropic.types.Message` or its JSON)."""
    m = _plain(message)
    parts: list[Part] = []
    for block in m.get("content") or []:
        kind = block.get("type")
        if kind == "text":
            parts.append({"type": "text", "text": block.get("text", "")})
        elif kind in ("thinking", "redacted_thinking"):
            metadata = {k: v for k, v in block.items() if k in ("signature", "data")}
            part: Part = {"type": "reasoning", "text": block.get("thinking", "")}
            if metadata:
                part["providerMetadata"] = {"anthropic": {"type": kind, **metadata}}
            parts.append(part)
        elif kind in ("tool_use", "server_tool_use"):
            parts.append(
                {
                    "type": "toolCall",
                    "callId": block["id"],
                    "name": block["name"],
                    "input": block.get("input") or {},
                }
            )
        elif kind == "compaction":
            parts.append({"type": "compaction", "provider": "anthropic", "summary": _text(block)})
    u = m.get("usage") or {}
    usage: dict[str, Any] = {
        "inputTokens": _int(u.get("input_tokens")),
        "outputTokens": _int(u.get("output_tokens")),
        "cacheReadTokens": _int(u.get("cache_read_input_tokens")),
        "cacheWriteTokens": _int(u.get("cache_creation_input_tokens")),
    }
    split = u.get("cache_creation")
    if isinstance(split, Mapping) and split.get("ephemeral_1h_input_tokens"):
        usage["cacheWrite1hTokens"] = _int(split.get("ephemeral_1h_input_tokens"))
    edits = (m.get("context_management") or {}).get("applied_edits")
    if isinstance(edits, list) and edits:  # what the API's context editing cleared
        usage["appliedEdits"] = [_applied_edit(e) for e in edits if isinstance(e, Mapping)]
    return _reply(parts, usage, m)


def _applied_edit(edit: Mapping[str, Any]) -> dict[str, Any]:
    """One of Anthropic's `context_management.applied_edits`, as protocol.md's Usage has it."""
    out: dict[str, Any] = {
        "type": str(edit.get("type", "")),
        "clearedInputTokens": _int(edit.get("cleared_input_tokens")),
    }
    for name, key in (
        ("cleared_tool_uses", "clearedToolUses"),
        ("cleared_thinking_turns", "clearedThinkingTurns"),
    ):
        if name in edit:
            out[key] = _int(edit.get(name))
    return out


def openai_chat_reply(completion: Any, choice: int = 0) -> Reply:
    """An OpenAI Chat Completions response (`ChatCompletion` or its JSON), its `choice`."""
    c = _plain(completion)
    message = (c.get("choices") or [{}])[choice].get("message") or {}
    parts: list[Part] = []
    if message.get("content"):
        parts.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        parts.append(
            {
                "type": "toolCall",
                "callId": call["id"],
                "name": function.get("name", ""),
                "input": _arguments(function.get("arguments")),
            }
        )
    return _reply(parts, _openai_usage(c.get("usage") or {}, "prompt", "completion"), c)


def openai_responses_reply(response: Any) -> Reply:
    """An OpenAI Responses API response (`Response` or its JSON)."""
    r = _plain(response)
    parts: list[Part] = []
    for item in r.get("output") or []:
        kind = item.get("type")
        if kind == "message":
            text = "".join(
                c.get("text", "")
                for c in item.get("content") or []
                if c.get("type") == "output_text"
            )
            if text:
                parts.append({"type": "text", "text": text})
        elif kind == "reasoning":
            summary = "\n".join(s.get("text", "") for s in item.get("summary") or [])
            parts.append({"type": "reasoning", "text": summary})
        elif kind == "function_call":
            parts.append(
                {
                    "type": "toolCall",
                    "callId": item.get("call_id") or item.get("id", ""),
                    "name": item.get("name", ""),
                    "input": _arguments(item.get("arguments")),
                }
            )
        elif kind == "compaction":
            part: Part = {"type": "compaction", "provider": "openai"}
            part["opaque"] = item.get("encrypted_content", "")
            if item.get("id"):
                part["id"] = item["id"]
            parts.append(part)
    return _reply(parts, _openai_usage(r.get("usage") or {}, "input", "output"), r)


def _openai_usage(u: Mapping[str, Any], given: str, made: str) -> dict[str, int]:
    """OpenAI's usage as tokend's (protocol.md's table): Chat Completions names its figures
    prompt/completion, the Responses API input/output; both count cached input, read or
    written, inside the input figure, so it is subtracted."""
    details = u.get(f"{given}_tokens_details") or {}
    cached, written = _int(details.get("cached_tokens")), _int(details.get("cache_write_tokens"))
    return {
        "inputTokens": max(0, _int(u.get(f"{given}_tokens")) - cached - written),
        "outputTokens": _int(u.get(f"{made}_tokens")),
        "cacheReadTokens": cached,
        "cacheWriteTokens": written,
        "reasoningTokens": _int((u.get(f"{made}_tokens_details") or {}).get("reasoning_tokens")),
    }


def _reply(parts: list[Part], usage: dict[str, Any], raw: Mapping[str, Any]) -> Reply:
    calls = [p for p in parts if p["type"] == "toolCall"]
    model = raw.get("model")
    return Reply(parts, usage, raw.get("id"), model if isinstance(model, str) else None, calls)


def _plain(value: Any) -> dict[str, Any]:
    """An SDK's pydantic model (or a dict) as JSON-shaped dicts."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        value = dump(mode="json", exclude_unset=False)
    if not isinstance(value, Mapping):
        raise TypeError(
            f"a provider response, as its SDK's object or a dict: not {type(value).__name__}"
        )
    return dict(value)


def _arguments(raw: Any) -> Any:
    """Tool-call arguments: OpenAI sends them as a JSON string (kept as the string when it is
    not valid JSON, as the model wrote it)."""
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw if raw is not None else {}


def _text(block: Mapping[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(c.get("text", "") for c in content if isinstance(c, Mapping))
    return ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
