"""Joining rendered wire messages into one request the provider accepts.

Anthropic's roles alternate and start with "user" (consecutive same-role messages are merged);
in both formats every tool result directly answers its tool call, orphan results are sent as
text and unanswered calls get a placeholder result. Each repair adds a warning. The already
valid case (the usual one) takes a fast path. Token counts are not touched here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tokend.core.assembly.wire_formats import WireFormat, WireMessage

UNANSWERED_TOOL_CALL = "[No result: the tool call was interrupted]"
CONVERSATION_START = "[Earlier conversation omitted]"
ORPHAN_RESULT_PREFIX = "[Tool result]\n"


class Joiner:
    """Strings rendered messages into one valid request, in order. `add`, then `messages`."""

    def __init__(self, fmt: WireFormat) -> None:
        self.fmt = fmt
        self.messages: list[WireMessage] = []
        self.warnings: list[str] = []
        self.pending: dict[str, str] = {}  # tool call id -> tool name, awaiting a result

    def add(self, wire: WireMessage) -> None:
        self.extend((wire,))

    def extend(self, wires: Iterable[WireMessage]) -> None:
        """Add wire messages in order; the common, already valid case takes a fast path."""
        if self.fmt == "openai":
            self._extend_openai(wires)
        else:
            self._extend_anthropic(wires)

    def _extend_openai(self, wires: Iterable[WireMessage]) -> None:
        append, pending = self.messages.append, self.pending
        for wire in wires:
            if wire.get("role") != "tool" and not pending:  # an item without a role too
                append(wire)
                for call in wire.get("tool_calls") or ():
                    pending[call["id"]] = call["function"]["name"]
            elif wire.get("role") == "tool" and pending.pop(wire["tool_call_id"], None) is not None:
                append(wire)
            else:
                self._add_openai(wire)

    def _extend_anthropic(self, wires: Iterable[WireMessage]) -> None:
        out, pending = self.messages, self.pending
        last = out[-1]["role"] if out else None
        for wire in wires:
            content = wire["content"]
            if wire["role"] == "assistant":
                if last == "user" and not pending:
                    out.append(wire)
                    for block in content:
                        if block["type"] == "tool_use":
                            pending[block["id"]] = block["name"]
                    last = "assistant"
                    continue
            elif last == "assistant" and _answers_only(content, pending):
                out.append(wire)
                for block in content:
                    if block["type"] == "tool_result":
                        del pending[block["tool_use_id"]]
                last = "user"
                continue
            self._add_anthropic(wire)
            last = out[-1]["role"] if out else None

    def finish(self) -> list[WireMessage]:
        """Answer calls left unanswered at the end; returns the joined messages."""
        if self.fmt == "openai":
            self._answer_pending_openai()
        else:
            self._answer_pending_anthropic()
        return self.messages

    def end_position(self) -> tuple[int, dict[str, Any]] | None:
        """(index, last block) of the newest message: where a chunk that ends now ends."""
        if not self.messages:
            return None
        content = self.messages[-1].get("content")
        return len(self.messages) - 1, content[-1] if isinstance(content, list) else {}

    def _add_openai(self, wire: WireMessage) -> None:
        if wire.get("role") == "tool":
            if self.pending.pop(wire["tool_call_id"], None) is not None:
                self.messages.append(wire)
                return
            self.warnings.append(
                f"tool result {wire['tool_call_id']} answers no call; sent as text"
            )
            wire = {"role": "user", "content": ORPHAN_RESULT_PREFIX + wire["content"]}
        self._answer_pending_openai()
        self.messages.append(wire)
        for call in wire.get("tool_calls") or ():
            self.pending[call["id"]] = call["function"]["name"]

    def _answer_pending_openai(self) -> None:
        for call_id, name in self.pending.items():
            self.warnings.append(f"tool call {call_id} ({name}) had no result; sent a placeholder")
            self.messages.append(
                {"role": "tool", "tool_call_id": call_id, "content": UNANSWERED_TOOL_CALL}
            )
        self.pending.clear()

    def _add_anthropic(self, wire: WireMessage) -> None:
        out = self.messages
        if wire["role"] == "assistant":
            if out and out[-1]["role"] == "assistant":
                out[-1] = {"role": "assistant", "content": [*out[-1]["content"], *wire["content"]]}
            else:
                self._answer_pending_anthropic()
                if not out:
                    self.warnings.append("the conversation starts with the assistant; added a stub")
                    stub = {"type": "text", "text": CONVERSATION_START}
                    out.append({"role": "user", "content": [stub]})
                out.append(wire)
            for block in wire["content"]:
                if block["type"] == "tool_use":
                    self.pending[block["id"]] = block["name"]
            return
        results: list[dict[str, Any]] = []
        others: list[dict[str, Any]] = []
        for block in wire["content"]:
            if block["type"] != "tool_result":
                others.append(block)
            elif self.pending.pop(block["tool_use_id"], None) is not None:
                results.append(block)
            else:
                self.warnings.append(
                    f"tool result {block['tool_use_id']} answers no call; sent as text"
                )
                others.append({"type": "text", "text": ORPHAN_RESULT_PREFIX + block["content"]})
        self._add_user_blocks(results, others)

    def _answer_pending_anthropic(self) -> None:
        placeholders = []
        for call_id, name in self.pending.items():
            self.warnings.append(f"tool call {call_id} ({name}) had no result; sent a placeholder")
            placeholders.append(
                {
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": UNANSWERED_TOOL_CALL,
                    "is_error": True,
                }
            )
        self.pending.clear()
        if placeholders:
            self._add_user_blocks(placeholders, [])

    def _add_user_blocks(self, results: list[dict[str, Any]], others: list[dict[str, Any]]) -> None:
        """Append to the conversation as the user; tool results stay ahead of other blocks."""
        out = self.messages
        if out and out[-1]["role"] == "user":
            previous = out[-1]["content"]
            kept = [b for b in previous if b["type"] == "tool_result"]
            rest = [b for b in previous if b["type"] != "tool_result"]
            out[-1] = {"role": "user", "content": [*kept, *results, *rest, *others]}
        elif results or others:
            out.append({"role": "user", "content": [*results, *others]})


def _answers_only(content: Sequence[dict[str, Any]], pending: dict[str, str]) -> bool:
    """True when every tool result in `content` answers a pending call (results lead)."""
    if not content or content[0]["type"] != "tool_result":
        return bool(content)
    return all(b["tool_use_id"] in pending for b in content if b["type"] == "tool_result")
