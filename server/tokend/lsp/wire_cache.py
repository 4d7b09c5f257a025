"""The snapshot's `promptCache` on the wire (protocol.md, Snapshot): the prompt cache the window's
last call left, with `warm` and `secondsLeft` as of the moment the snapshot is sent."""

from __future__ import annotations

from datetime import datetime

import attrs

from tokend.core.snapshot import BudgetSnapshot


@attrs.frozen
class PromptCacheWire:
    cached_tokens: int
    ttl_seconds: int  # 300 or 3,600
    last_call_at: str  # ISO 8601, UTC
    expires_at: str
    warm: bool
    seconds_left: int  # whole seconds, 0 once expired


def to_wire_prompt_cache(s: BudgetSnapshot, now: datetime) -> PromptCacheWire | None:
    cache = s.prompt_cache
    if cache is None:
        return None
    left = (cache.expires_at - now).total_seconds()
    return PromptCacheWire(
        cache.cached_tokens,
        cache.ttl_s,
        cache.last_call_at.isoformat(),
        cache.expires_at.isoformat(),
        left > 0,
        max(0, round(left)),
    )
