"""`session/append`'s `message.usage` on the wire (protocol.md, Usage), and what the provider's
context editing reported in it (`appliedEdits`: Anthropic's `context_management.applied_edits`)."""

from __future__ import annotations

import attrs

from tokend.core.errors import InvalidParams


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
