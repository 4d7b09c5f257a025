"""The gauge: one number for the status bar and for the compaction decision.

`used_tokens` is what the NEXT request will consume. After a provider call it is anchored on
what the provider reported (`next_input = last_input + last_output + estimate(added since)`);
before any call, or right after a compaction, it is the whole context counted and
`estimated` is True. The breakdown always adds up exactly to `used_tokens`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from tokend.core.usage.stats import RateHeadroom, TimeFigures

# Categories measured directly (the rest of the total is "messages").
MEASURED_CATEGORIES: tuple[str, ...] = (
    "system",
    "tools",
    "memory",
    "repoMap",
    "chatFiles",
    "budget",  # the budget injection (context awareness), when on
)


@dataclass(frozen=True, slots=True)
class BreakdownItem:
    category: str
    tokens: int
    basis: str  # "exact" | "estimate" | "actual" | "derived"


@dataclass(frozen=True, slots=True)
class CallFigures:
    """The last provider call: reported usage plus what the gauge had predicted for it (tokens)."""

    message_id: str
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    predicted_tokens: int | None
    error_pct: float | None
    cleared_input_tokens: int = 0  # by the provider's context editing, from this call's input

    @property
    def context_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


@dataclass(frozen=True, slots=True)
class Totals:
    """Session lifetime sums over every provider call (tokens)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass(frozen=True, slots=True)
class PromptCacheFigures:
    """The prompt cache the last call left: its cached tokens (read + written), the lifetime
    of its entries (300 or 3,600 s) and when that call completed (core.budget.prompt_cache)."""

    cached_tokens: int
    ttl_s: int
    last_call_at: datetime

    @property
    def expires_at(self) -> datetime:
        return self.last_call_at + timedelta(seconds=self.ttl_s)


@dataclass(frozen=True, slots=True)
class BudgetSnapshot:
    session_id: str
    model: str
    context_window: int
    max_output_tokens: int
    used_tokens: int
    remaining_tokens: int
    used_percentage: float  # of context_window, 0..100+, one decimal
    estimated: bool
    breakdown: tuple[BreakdownItem, ...]
    autocompact_threshold: int
    compactions: int
    cost_total_usd: float
    cost_by_model: Mapping[str, float]
    totals: Totals
    last_call: CallFigures | None
    last_estimate_error_pct: float | None
    version: int
    warnings: tuple[str, ...] = field(default_factory=tuple)
    # Claude Code's status-line time and lines, over every message of the session.
    times: TimeFigures = TimeFigures(0, None, 0, 0)
    # The daemon's tokens-per-minute headroom when the change was made ([rate] tpm_limit set).
    rate: RateHeadroom | None = None
    # Who should compact this session: "provider" when its model's provider compacts the
    # context itself (catalog flag provider_compaction), else "tokend" (session/compact).
    compact_with: str = "tokend"
    # The prompt cache of the window's last call that read or wrote it (None: no such call).
    prompt_cache: PromptCacheFigures | None = None


def breakdown(
    used_tokens: int,
    measured: Mapping[str, int],
    messages_tokens: int | None,
    *,
    measured_basis: str,
    messages_estimated: bool = False,
) -> tuple[tuple[BreakdownItem, ...], tuple[str, ...]]:
    """Split `used_tokens` into categories that add up to it exactly.

    `measured` holds the directly counted categories (system, tools, ...). When
    `messages_tokens` is None (the total is anchored on a provider's actual figure), messages
    are back-calculated as the remainder ("derived"); otherwise their basis is the measured
    one, or "estimate" when `messages_estimated` (an exact count still to come). A negative remainder is capped at 0, the measured
    categories are scaled down to fit, and a warning says so.
    """
    items: list[BreakdownItem] = []
    warnings: list[str] = []
    measured_items = [(c, max(0, int(measured.get(c, 0)))) for c in MEASURED_CATEGORIES]
    measured_sum = sum(t for _, t in measured_items)
    if messages_tokens is None:
        remainder = used_tokens - measured_sum
        if remainder < 0:
            warnings.append(
                f"measured parts ({measured_sum} tokens) exceed the provider's total "
                f"({used_tokens} tokens); messages capped at 0 and the rest scaled to fit"
            )
            measured_items = _scale_to(measured_items, used_tokens)
            remainder = 0
        messages_item = BreakdownItem("messages", remainder, "derived")
    else:
        basis = "estimate" if messages_estimated else measured_basis
        messages_item = BreakdownItem("messages", messages_tokens, basis)
    for category, tokens in measured_items:
        if tokens:
            items.append(BreakdownItem(category, tokens, measured_basis))
    items.append(messages_item)
    return tuple(items), tuple(warnings)


def _scale_to(items: Sequence[tuple[str, int]], total: int) -> list[tuple[str, int]]:
    """Scale integer amounts down so they sum to exactly `total` (largest remainder method)."""
    current = sum(t for _, t in items)
    if current <= 0:
        return [(c, 0) for c, _ in items]
    raw = [(c, t * total / current) for c, t in items]
    floors = [(c, int(v)) for c, v in raw]
    short = total - sum(v for _, v in floors)
    order = sorted(range(len(raw)), key=lambda i: raw[i][1] - floors[i][1], reverse=True)
    result = list(floors)
    for i in order[:short]:
        result[i] = (result[i][0], result[i][1] + 1)
    return result


def used_percentage(used_tokens: int, context_window: int) -> float:
    if context_window <= 0:
        return 100.0
    return round(100.0 * used_tokens / context_window, 1)
