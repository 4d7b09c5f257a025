"""Domain values <-> the JSON the store keeps in its `data`, `usage` and `extra` columns.

Every part dataclass maps to a JSON object of its fields (without `kind`, which has its own
column); values such as a tool call's `input` or reasoning `provider_metadata` pass through as
they are, so anything JSON can hold round-trips unchanged.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from tokend.core.types import (
    CompactionPart,
    FilePart,
    ImagePart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)

PART_CLASSES: dict[str, type[Part]] = {
    "text": TextPart,
    "reasoning": ReasoningPart,
    "toolCall": ToolCallPart,
    "toolResult": ToolResultPart,
    "image": ImagePart,
    "file": FilePart,
    "compaction": CompactionPart,
}
PART_KINDS: tuple[str, ...] = tuple(PART_CLASSES)


def part_to_json(part: Part) -> dict[str, Any]:
    """The part's fields except `kind`, as a JSON object (values are not copied)."""
    if type(part) is not PART_CLASSES.get(getattr(part, "kind", ""), None):
        raise TypeError(f"not a part: {part!r}")
    return {f.name: getattr(part, f.name) for f in dataclasses.fields(part) if f.name != "kind"}


def part_from_json(kind: str, data: dict[str, Any]) -> Part:
    """The part of `kind` built from the object `part_to_json` produced."""
    try:
        cls = PART_CLASSES[kind]
    except KeyError:
        raise ValueError(f"unknown part kind {kind!r}") from None
    return cls(**data)


_CLEARED = ("cleared_input_tokens", "cleared_tool_uses", "cleared_thinking_turns")


def usage_to_json(usage: Usage | None) -> dict[str, int] | None:
    """The usage's figures; the provider's context editing figures only when it cleared
    something, so a call without edits is stored as before them (an older tokend reads it)."""
    if usage is None:
        return None
    data = dataclasses.asdict(usage)
    return {k: v for k, v in data.items() if v or k not in _CLEARED}


def usage_from_json(data: dict[str, Any] | None) -> Usage | None:
    return None if data is None else Usage(**data)


def dumps_json(value: Any) -> str:
    """Compact JSON for storage. Non-ASCII stays readable; a string UTF-8 cannot encode (a lone
    surrogate) falls back to \\u escapes so that no value is refused or altered."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text


def loads_json(text: str) -> Any:
    return json.loads(text)
