"""How a part reads as text to a tokenizer: the one place that decides what gets counted."""

from __future__ import annotations

from tokend.core.json_text import dumps
from tokend.core.types import (
    CompactionPart,
    ContentClass,
    FilePart,
    ImagePart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

PRUNED_TOOL_RESULT = "[Old tool result content cleared]"
SUMMARY_HEADER = (
    "[Summary of the earlier conversation, written by tokend when it compacted the session. "
    "It is not a message from the user: the user's own words are quoted in it.]"
)


def summary_text(summary: str) -> str:
    """A compaction summary as the model reads it: marked, so that nobody takes it for the
    user's message (every wire format renders this text)."""
    return f"{SUMMARY_HEADER}\n\n{summary}"


PROVIDER_SUMMARY_HEADER = (
    "[Summary of the earlier conversation, written by {provider} when it compacted the context. "
    "It is not a message from the user.]"
)
OPAQUE_COMPACTION = "[The earlier conversation was compacted by {provider}; its summary is encrypted and cannot be shown here.]"


def provider_summary_text(provider: str, summary: str) -> str:
    """A provider's compaction as another provider's model reads it (a summary, never the
    user's message); an opaque one says so."""
    if not summary:
        return OPAQUE_COMPACTION.format(provider=provider)
    return f"{PROVIDER_SUMMARY_HEADER.format(provider=provider)}\n\n{summary}"


def to_json_text(value: object) -> str:
    """Compact JSON as providers serialise tool inputs (no spaces after separators); a big
    input (an 8 MB command) a piece at a time, so that counting it in a worker thread does not
    hold the interpreter from the event loop (json.dumps of 8 MB: 17 ms in one call)."""
    return dumps(value, ensure_ascii=False, separators=(",", ":"))


def part_text(part: Part, *, pruned: bool = False) -> str:
    """The text a tokenizer sees for `part` (images have none: they are fixed amounts)."""
    match part:
        case TextPart(text=text) | ReasoningPart(text=text):
            return text
        case ToolCallPart(name=name, input=value):
            return name + " " + to_json_text(value)
        case ToolResultPart(output=output):
            return PRUNED_TOOL_RESULT if pruned else output
        case CompactionPart(provider=str(), summary=summary):
            return summary  # the provider's own: sent as it gave it
        case CompactionPart(summary=summary):
            return summary_text(summary)
        case FilePart(path=path):
            return path
        case ImagePart():
            return ""
    raise TypeError(f"not a part: {part!r}")


def part_content_hint(part: Part) -> ContentClass | None:
    """A content class known from the part's kind alone (None: classify the text)."""
    if isinstance(part, ToolCallPart):
        return ContentClass.JSON
    return None
