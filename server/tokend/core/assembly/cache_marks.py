"""Cache breakpoints of an assembly: where each cached prefix ends, and (Anthropic) the
`cache_control` marks on the tools, the system text and the messages that end those prefixes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokend.core.assembly.wire_formats import WireFormat, WireMessage

_PREFIX_CHUNKS = ("examples", "readOnlyFiles", "repoMap")
_EPHEMERAL = {"type": "ephemeral"}


@dataclass(frozen=True, slots=True)
class CacheBreakpoint:
    """Where a cached prefix ends: after `chunk`, at `message_index` in Assembly.messages
    (None for tools and for Anthropic's separate system)."""

    chunk: str
    message_index: int | None


def mark_breakpoints(
    fmt: WireFormat,
    out: list[WireMessage],
    ends: Mapping[str, tuple[int, dict[str, Any]] | None],
    has_tools: bool,
    has_system: bool,
) -> list[CacheBreakpoint]:
    """The breakpoints after tools, system, the last prefix chunk and the history; for
    Anthropic, the message blocks ending them get cache_control (in `out`, copying)."""
    marked = ["tools"] if has_tools else []
    if has_system:
        marked.append("system")
    marked.extend([c for c in _PREFIX_CHUNKS if c in ends][-1:])
    if "history" in ends:
        marked.append("history")
    breakpoints: list[CacheBreakpoint] = []
    for chunk in marked:
        end = ends.get(chunk)
        breakpoints.append(CacheBreakpoint(chunk, end[0] if end else None))
        if fmt != "anthropic" or chunk == "system" or chunk == "tools":
            continue
        if end is not None:
            _mark_block(out, *end)
    return breakpoints


def anthropic_prefix(
    tools: Sequence[Mapping[str, Any]],
    system: str | None,
    summary_blocks: Sequence[dict[str, Any]],
) -> tuple[tuple[Mapping[str, Any], ...], tuple[dict[str, Any], ...] | None]:
    """Anthropic's tools (the last one marked) and system field (the system text, marked,
    then the summaries' blocks)."""
    marked_tools = tuple(tools)
    if marked_tools:
        marked_tools = (*marked_tools[:-1], {**marked_tools[-1], "cache_control": _EPHEMERAL})
    blocks: tuple[dict[str, Any], ...] | None = None
    if system is not None:
        blocks = ({"type": "text", "text": system, "cache_control": _EPHEMERAL},)
    if summary_blocks:
        blocks = (*(blocks or ()), *summary_blocks)
    return marked_tools, blocks


def _mark_block(out: list[WireMessage], message_index: int, block: dict[str, Any]) -> None:
    """Put cache_control on `block` (or the nearest cacheable block before it), copying."""
    content = out[message_index]["content"]
    index = cacheable_block_index(content, block)
    if index is None:
        return
    marked = {**content[index], "cache_control": _EPHEMERAL}
    out[message_index] = {
        **out[message_index],
        "content": [*content[:index], marked, *content[index + 1 :]],
    }


_NOT_CACHEABLE = frozenset({"thinking", "redacted_thinking"})


def cacheable_block_index(content: Sequence[dict[str, Any]], block: dict[str, Any]) -> int | None:
    """Where `block` sits in `content`, moved back past thinking blocks (they take no cache_control)."""
    for index in range(len(content) - 1, -1, -1):
        if content[index] is block:
            while index >= 0 and content[index]["type"] in _NOT_CACHEABLE:
                index -= 1
            return index if index >= 0 else None
    return None
