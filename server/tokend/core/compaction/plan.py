"""Where a summary ends and the verbatim tail begins.

The summarize tier keeps a tail of the newest messages verbatim (OpenCode: 25% of the usable
window, clamped to 2,000..15,000 tokens) and summarizes the head, the previous summary
included. The tail starts at a message that answers no tool call (a tool result must stay
with its call), preferably within the budget; `full` keeps the shortest such tail. All figures
are tokens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tokend.core.types import Message, ToolResultPart

TAIL_SHARE = 0.25
TAIL_MIN_TOKENS = 2_000
TAIL_MAX_TOKENS = 15_000
MIN_SHRINK = 0.05  # a compaction that frees less than this share of the context is refused


def tail_budget_tokens(input_limit: int) -> int:
    """25% of the usable window (input limit), clamped to 2,000..15,000 tokens."""
    return max(TAIL_MIN_TOKENS, min(int(input_limit * TAIL_SHARE), TAIL_MAX_TOKENS))


@dataclass(frozen=True, slots=True)
class WindowSplit:
    """`head` (summarized; a previous summary first) and `tail` (kept verbatim)."""

    head: tuple[Message, ...]
    tail: tuple[Message, ...]
    head_tokens: int
    tail_tokens: int


def can_start_tail(message: Message) -> bool:
    """A tail may start here: not a summary, and no tool result separated from its call."""
    return not message.summary and not any(
        isinstance(sp.part, ToolResultPart) for sp in message.parts
    )


def split_window(
    messages: Sequence[Message],
    message_tokens: Mapping[str, int],
    tail_tokens: int,
    from_message_id: str | None = None,
) -> WindowSplit | str:
    """The split that keeps the longest tail within `tail_tokens` (0: the shortest tail), or
    at `from_message_id`; a string says why there is nothing to summarize."""
    if from_message_id is not None:
        index = next((i for i, m in enumerate(messages) if m.id == from_message_id), None)
        if index is None:
            return f"message {from_message_id} is not in the live context"
        if not can_start_tail(messages[index]):
            return (
                f"message {from_message_id} answers tool calls made before it (or is a "
                "summary): keep from the assistant message that made the calls"
            )
    else:
        index = _tail_start(messages, message_tokens, tail_tokens)
    head, tail = tuple(messages[:index]), tuple(messages[index:])
    if not any(not m.summary for m in head):
        return "nothing to summarize: every message since the last summary is in the kept tail"
    return WindowSplit(
        head,
        tail,
        sum(message_tokens.get(m.id, 0) for m in head),
        sum(message_tokens.get(m.id, 0) for m in tail),
    )


def _tail_start(messages: Sequence[Message], message_tokens: Mapping[str, int], budget: int) -> int:
    """The earliest tail start whose tail fits `budget`, else the latest possible start (the
    shortest tail that keeps tool results with their calls), else no tail at all."""
    starts = range(len(messages) - 1, 0, -1)
    latest = next((i for i in starts if can_start_tail(messages[i])), None)
    total = 0
    best: int | None = None
    for index in starts:
        total += message_tokens.get(messages[index].id, 0)
        if total > budget:
            break
        if can_start_tail(messages[index]):
            best = index
    if best is not None:
        return best
    return latest if latest is not None else len(messages)


def halve(
    messages: Sequence[Message], message_tokens: Mapping[str, int]
) -> tuple[tuple[Message, ...], tuple[Message, ...]] | None:
    """Two runs split at the first message boundary that reaches half the tokens, each
    holding at least one message that is not a summary (a previous summary stays first, in the
    first run); None when there are fewer than two such messages. Aider's recursive summary
    splits so."""
    fresh = [i for i, m in enumerate(messages) if not m.summary]
    if len(fresh) < 2:
        return None
    total = sum(message_tokens.get(m.id, 0) for m in messages)
    lowest, highest = fresh[0] + 1, fresh[-1]  # the cut: messages[:cut] and messages[cut:]
    cut, seen = highest, 0
    for index, message in enumerate(messages):
        seen += message_tokens.get(message.id, 0)
        if 2 * seen >= total:
            cut = index + 1
            break
    cut = max(lowest, min(cut, highest))
    return tuple(messages[:cut]), tuple(messages[cut:])
