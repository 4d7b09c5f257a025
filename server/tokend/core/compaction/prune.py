"""The prune tier of compaction: clear old tool output before summarizing anything.

The rule (as OpenCode prunes): walk the history from the newest message back. The last two user
turns (the newest two user turns and everything after the older of them) are never touched.
The walk stops at an earlier compaction: a summary message, or a tool result already pruned.
Tool results are summed newest first; once more than `protect_tokens` of tool output has been
seen, every further result is a candidate, except tools listed in `protected_tools` (they are
neither counted nor pruned). The plan prunes only when the candidates free at least
`minimum_tokens`; otherwise it is empty and says why. All figures are tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tokend.core.types import CompactionPart, Message, StoredPart, ToolResultPart

CHARS_PER_TOKEN_ESTIMATE = 4  # only for a tool result that has no cached count


@dataclass(frozen=True, slots=True)
class PruneConfig:
    """Same fields as core.budget.limits.CompactionConfig's prune settings (tokens; tool names)."""

    protect_tokens: int = 40_000
    minimum_tokens: int = 20_000
    protected_tools: tuple[str, ...] = ("skill",)


@dataclass(frozen=True, slots=True)
class PrunePlan:
    """Part ids to mark compacted, oldest first; `freed_tokens` is their cached count summed
    (each pruned result is then sent as a short placeholder). `skipped_reason` is set when
    the plan is empty."""

    part_ids: tuple[str, ...]
    freed_tokens: int
    skipped_reason: str | None = None


def is_user_turn(message: Message) -> bool:
    """A message the user typed: role user, not a summary, carrying no tool result. A message
    that carries tool results belongs to the turn in progress, even when the client put a
    reminder or other text beside them."""
    if message.role != "user" or message.summary:
        return False
    return not any(isinstance(sp.part, ToolResultPart) for sp in message.parts)


def older_tool_results(
    history: Sequence[Message], cfg: PruneConfig
) -> tuple[bool, list[tuple[int, StoredPart, int]]]:
    """(whether the window has two user turns, then the tool results before them: newest first,
    back to the window's start, those of protected tools left out, each as its message's index,
    the part and its tokens — the cached count, or an estimate from its length)."""
    user_turns = 0
    found: list[tuple[int, StoredPart, int]] = []
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if user_turns < 2:
            user_turns += is_user_turn(message)
            continue
        if message.summary or _is_boundary(message):
            break
        for stored in reversed(message.parts):
            part = stored.part
            if not isinstance(part, ToolResultPart) or part.name in cfg.protected_tools:
                continue
            tokens = stored.tokens
            if tokens is None:
                tokens = -(-len(part.output) // CHARS_PER_TOKEN_ESTIMATE)
            found.append((index, stored, tokens))
    return user_turns >= 2, found


def plan_prune(history: Sequence[Message], cfg: PruneConfig = PruneConfig()) -> PrunePlan:
    """Which old tool results to clear (see the module docstring for the rule)."""
    two_turns, results = older_tool_results(history, cfg)
    if not two_turns:
        return PrunePlan((), 0, "fewer than two user turns: everything is recent")
    seen_tokens = 0
    candidates: list[str] = []
    freed_tokens = 0
    for _, stored, tokens in results:
        if stored.compacted_at is not None:
            break  # an earlier prune got this far
        seen_tokens += tokens
        if seen_tokens > cfg.protect_tokens:
            candidates.append(stored.id)
            freed_tokens += tokens
    return _decide(candidates, freed_tokens, seen_tokens, cfg)


def _is_boundary(message: Message) -> bool:
    return any(isinstance(sp.part, CompactionPart) for sp in message.parts)


def _decide(
    candidates: list[str], freed_tokens: int, seen_tokens: int, cfg: PruneConfig
) -> PrunePlan:
    if not candidates:
        return PrunePlan(
            (),
            0,
            f"old tool output ({seen_tokens:,} tokens) is within the "
            f"{cfg.protect_tokens:,} tokens kept",
        )
    if freed_tokens < cfg.minimum_tokens:
        return PrunePlan(
            (),
            0,
            f"pruning would free only {freed_tokens:,} tokens, "
            f"under the minimum of {cfg.minimum_tokens:,}",
        )
    candidates.reverse()
    return PrunePlan(tuple(candidates), freed_tokens)
