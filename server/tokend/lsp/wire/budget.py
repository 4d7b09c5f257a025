"""budget/snapshot's Snapshot (protocol.md, the Snapshot), which many results carry, and the
budget/didChange notification. Its `promptCache`: the prompt cache the window's last call left,
with `warm` and `secondsLeft` as of the moment the snapshot is sent."""

from __future__ import annotations

from datetime import datetime

import attrs

from tokend.core.budget.snapshot import BudgetSnapshot, Totals


@attrs.frozen
class PromptCacheWire:
    cached_tokens: int
    ttl_seconds: int  # 300 or 3,600
    last_call_at: str  # ISO 8601, UTC
    expires_at: str
    warm: bool
    seconds_left: int  # whole seconds, 0 once expired


@attrs.frozen
class BreakdownWire:
    category: str
    tokens: int
    basis: str


@attrs.frozen
class CostWire:
    total_usd: float
    by_model: dict[str, float]


@attrs.frozen
class TotalsWire:
    calls: int
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int


@attrs.frozen
class TimeWire:
    """Milliseconds and lines over every message of the session (Claude Code's status line)."""

    wall_ms: int
    api_ms: int | None
    lines_added: int
    lines_removed: int


@attrs.frozen
class LastCallWire:
    message_id: str
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    context_tokens: int
    cleared_input_tokens: int  # what the provider's context editing cleared from that input
    predicted_tokens: int | None
    error_pct: float | None


@attrs.frozen
class RateWire:
    tokens_per_minute: int
    tpm_limit: int
    headroom_tokens: int
    used_percentage: float


@attrs.frozen
class SnapshotWire:
    session_id: str
    model: str
    context_window: int
    max_output_tokens: int
    used_tokens: int
    used_percentage: float
    remaining_tokens: int
    estimated: bool
    breakdown: list[BreakdownWire]
    autocompact_threshold: int
    compactions: int
    compact_with: str  # "provider" | "tokend"
    cost: CostWire
    totals: TotalsWire
    time: TimeWire
    last_call: LastCallWire | None
    last_estimate_error_pct: float | None
    version: int
    warnings: list[str]
    rate: RateWire | None = None
    prompt_cache: PromptCacheWire | None = None


@attrs.frozen
class BudgetDidChangeParams:
    """budget/didChange: a watched session's snapshot after a change."""

    session_id: str
    snapshot: SnapshotWire


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


def to_wire_totals(t: Totals) -> TotalsWire:
    """Field by field: dataclasses.astuple deep-copies every value, and was three quarters of
    to_wire_snapshot's time (budget/snapshot 1.2-1.4x main 9f76291's, bench/reshape.py)."""
    return TotalsWire(
        t.calls,
        t.input_tokens,
        t.output_tokens,
        t.reasoning_tokens,
        t.cache_read_tokens,
        t.cache_write_tokens,
    )
