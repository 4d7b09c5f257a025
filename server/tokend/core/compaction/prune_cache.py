"""What a prune costs in prompt cache (Anthropic, OpenAI: a request is billed a cache write again
from the first byte that changed).

Clearing tool results in place changes the request from the first cleared result on: every token
after it (as the request will be after the prune) is written to the cache again at the next call,
where it would have been read. While the cache is warm that costs the difference between the
cache-write and cache-read prices on those tokens, once; the prune then saves the cleared tokens
at the cache-read price on every later call. Once the cache has expired (5 minutes, or 1 hour
when the last call wrote 1-hour entries) the next call writes the whole prefix anyway, and the
prune costs nothing extra. Times in seconds, prices in US dollars per token.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from tokend.core.budget.prompt_cache import TTL_1H_S, last_cache
from tokend.core.budget.prompt_cache import done as _done
from tokend.core.models.prices import TokenPrices
from tokend.core.session.changes import PruneParts
from tokend.core.types import Message


@dataclass(frozen=True, slots=True)
class PruneCache:
    rewrite_tokens: int  # cached tokens written again because of the prune
    ttl_s: int
    age_s: float  # since the last call
    extra_usd: float  # the rewrite's cost over reading them (0 when the cache expired)
    saved_per_call_usd: float  # the cleared tokens at the cache-read price

    @property
    def warm(self) -> bool:
        return self.age_s < self.ttl_s

    def payback_calls(self) -> int | None:
        """Later calls until the prune has paid for its rewrite (None: never, nothing saved)."""
        if self.extra_usd <= 0:
            return 0
        if self.saved_per_call_usd <= 0:
            return None
        return math.ceil(self.extra_usd / self.saved_per_call_usd)

    def line(self, model: str) -> str:
        """The prune action's clause about the cache."""
        ttl = "1-hour" if self.ttl_s == TTL_1H_S else "5-minute"
        if not self.warm:
            return (
                f"prompt cache: expired (last call {_ago(self.age_s)} ago, {ttl} lifetime), so "
                f"the {self.rewrite_tokens:,} tokens after the first cleared result cost no "
                "extra cache write"
            )
        calls = self.payback_calls()
        pays = "never pays back" if calls is None else f"pays back after {calls} later call(s)"
        return (
            f"prompt cache: warm (last call {_ago(self.age_s)} ago, {ttl} lifetime): the prune "
            f"writes {self.rewrite_tokens:,} cached tokens again (${self.extra_usd:.4f} over "
            f"reading them at {model}'s prices) and saves ${self.saved_per_call_usd:.4f} per "
            f"later call: {pays}"
        )


@dataclass(frozen=True, slots=True)
class CacheState:
    """The prompt cache as the last call left it: its cached tokens (read + written), the
    lifetime of its entries, when that call completed and how long before `at` that was."""

    cached_tokens: int
    ttl_s: int
    last_call_at: datetime
    age_s: float

    @property
    def warm(self) -> bool:
        return self.age_s < self.ttl_s


def next_call_at(messages: Sequence[Message], now: datetime) -> datetime:
    """When the next call is made: at the newest message when one came after the last call
    (an agent appends its prompt or tool results as it sends them, so a replayed or imported
    transcript is judged at its own times), else now."""
    last = next((m for m in reversed(messages) if m.usage is not None), None)
    newest = messages[-1] if messages else None
    if newest is None or last is None or newest is last:
        return now
    return newest.created_at if newest.created_at > _done(last) else now


def cache_state(messages: Sequence[Message], at: datetime) -> CacheState | None:
    """The cache the last call with cache figures left, as of `at` (None: no such call)."""
    figures = last_cache(messages)
    if figures is None:
        return None
    age = max(0.0, (at - figures.last_call_at).total_seconds())
    return CacheState(figures.cached_tokens, figures.ttl_s, figures.last_call_at, age)


def cache_prices(rates: TokenPrices, ttl_s: int) -> tuple[float, float]:
    """Dollars per token of a cache read and of a cache write at `ttl_s` (the input price
    where the catalog lists none)."""
    read = rates.cache_read if rates.cache_read is not None else (rates.input or 0.0)
    write = rates.cache_write_1h if ttl_s == TTL_1H_S else rates.cache_write
    write = write if write is not None else (rates.input or 0.0)
    return read, write


def prune_cache(
    messages: Sequence[Message],
    message_tokens: Mapping[str, int],
    change: PruneParts,
    freed_tokens: int,
    rates: TokenPrices,
    now: datetime,
) -> PruneCache | None:
    """The cache figures of `change` (clearing tool results) on `messages` (the live context,
    `message_tokens` their totals now), or None when no call with cache figures came before
    (nothing cached to rewrite). The cache's age is taken at `next_call_at(messages, now)`."""
    part_ids = change.part_ids
    state = cache_state(messages, next_call_at(messages, now))
    first = next(
        (i for i, m in enumerate(messages) if any(sp.id in part_ids for sp in m.parts)), None
    )
    if state is None or first is None:
        return None
    after = sum(
        change.message_tokens.get(m.id, message_tokens.get(m.id, 0)) for m in messages[first:]
    )
    read, write = cache_prices(rates, state.ttl_s)
    rewrite = max(0, after)
    extra = rewrite * max(0.0, write - read) if state.warm else 0.0
    return PruneCache(rewrite, state.ttl_s, state.age_s, extra, freed_tokens * read)


def _ago(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7_200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172_800:
        return f"{seconds / 3_600:.1f} h"
    return f"{seconds / 86_400:.0f} days"
