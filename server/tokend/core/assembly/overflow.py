"""The error for a context that does not fit: what it holds, and what to drop first.

All figures are tokens. The suggestions are ranked largest first, so the first one frees
the most.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tokend.core.errors import ContextOverflow

MAX_SUGGESTIONS = 8


def context_overflow(
    tokens: Mapping[str, int], total: int, limit: int, files: Iterable[tuple[str, str, int]]
) -> ContextOverflow:
    """ContextOverflow for an assembly of `total` tokens over `limit`.

    `tokens` holds the tokens of each chunk (CHUNKS names). `files` yields (kind, path, tokens)
    for each chat and read-only file; it is read only when dropping files can help (when the
    system prompt, tools and current message fit on their own)."""
    essential = tokens["system"] + tokens["tools"] + tokens["current"]
    suggestions: list[tuple[int, str]]
    if essential > limit:
        message = (
            f"the current message alone does not fit: system prompt {tokens['system']:,} + "
            f"tools {tokens['tools']:,} + current message {tokens['current']:,} = "
            f"{essential:,} tokens, over the {limit:,}-token limit"
        )
        suggestions = [
            (tokens["current"], f"shorten the current message ({tokens['current']:,} tokens)"),
            (tokens["tools"], f"offer fewer tools (tools: {tokens['tools']:,} tokens)"),
            (tokens["system"], f"shorten the system prompt ({tokens['system']:,} tokens)"),
        ]
    else:
        message = f"the context needs {total:,} tokens, over the {limit:,}-token limit"
        suggestions = [
            (tokens["history"], f"compact the session (history: {tokens['history']:,} tokens)"),
            (tokens["repoMap"], f"drop the repo map ({tokens['repoMap']:,} tokens)"),
            (tokens["examples"], f"drop the example messages ({tokens['examples']:,} tokens)"),
        ]
        for kind, path, size in files:
            suggestions.append((size, f"drop {kind} {path} ({size:,} tokens)"))
    ranked = sorted((s for s in suggestions if s[0] > 0), key=lambda s: -s[0])
    data = {
        "total": total,
        "limit": limit,
        "suggestions": [s for _, s in ranked][:MAX_SUGGESTIONS],
    }
    return ContextOverflow(message, data)
