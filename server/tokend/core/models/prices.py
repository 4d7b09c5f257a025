"""Per-token prices as litellm's catalog lists them: base rates and context-size tiers.

Units: US dollars per token. A key is either a base rate ("input_cost_per_token") or a tier rate,
the base key with "_above_<N>k_tokens" appended ("input_cost_per_token_above_272k_tokens"), which
applies to a call whose context exceeds N x 1,000 tokens. What a call costs is in pricing.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True, slots=True)
class TokenPrices:
    """US dollars per token; None when the source does not say."""

    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None  # a cache write with the default (5-minute) lifetime
    cache_write_1h: float | None = None  # a cache write with a 1-hour lifetime (Anthropic)
    reasoning: float | None = None  # reasoning tokens, where billed apart from other output

    def over(self, base: TokenPrices) -> TokenPrices:
        """These rates where set, `base`'s elsewhere."""
        mine = {f.name: getattr(self, f.name) for f in fields(self)}
        return replace(base, **{k: v for k, v in mine.items() if v is not None})


@dataclass(frozen=True, slots=True)
class PriceTier:
    """Rates for calls whose context (input + cache read + cache write) exceeds `above_tokens`.
    A rate left None is the next lower tier's, else the base one."""

    above_tokens: int
    prices: TokenPrices


BASE_PRICE_KEYS: dict[str, str] = {
    "input_cost_per_token": "input",
    "output_cost_per_token": "output",
    "cache_read_input_token_cost": "cache_read",
    "cache_creation_input_token_cost": "cache_write",
    "cache_creation_input_token_cost_above_1hr": "cache_write_1h",
    "output_cost_per_reasoning_token": "reasoning",
}
"""litellm's base price keys -> TokenPrices field. Also the keys a config override may set."""

_TIER_KEY = re.compile(r"(?P<base>[a-z0-9_]+?)_above_(?P<thousands>\d+)k_tokens")


def price_key(key: str) -> tuple[int | None, str] | None:
    """(tier threshold in tokens, or None for a base rate; TokenPrices field) of a price key;
    None for keys tokend does not read (batch, flex, priority, audio, image... rates)."""
    if key in BASE_PRICE_KEYS:
        return None, BASE_PRICE_KEYS[key]
    tier = _TIER_KEY.fullmatch(key)
    if tier is not None and tier["base"] in BASE_PRICE_KEYS:
        return int(tier["thousands"]) * 1000, BASE_PRICE_KEYS[tier["base"]]
    return None


def price(value: Any) -> float | None:
    """A rate (a number >= 0) or None."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
    return float(value) if ok else None


def parse_prices(entry: Mapping[str, Any]) -> tuple[TokenPrices, tuple[PriceTier, ...]]:
    """The base rates and the tiers (by threshold, ascending) of one catalog entry."""
    return with_rates(TokenPrices(), (), _rates(entry.items()))


def with_rates(
    base: TokenPrices,
    tiers: tuple[PriceTier, ...],
    rates: Iterable[tuple[int | None, str, float]],
) -> tuple[TokenPrices, tuple[PriceTier, ...]]:
    """`base` and `tiers` with each (threshold or None, field, rate) set; a new threshold adds a tier."""
    base_changes: dict[str, float] = {}
    tier_changes: dict[int, dict[str, float]] = {}
    for threshold, field_name, rate in rates:
        changes = base_changes if threshold is None else tier_changes.setdefault(threshold, {})
        changes[field_name] = rate
    merged = {tier.above_tokens: tier.prices for tier in tiers}
    for threshold, changes in tier_changes.items():
        merged[threshold] = replace(merged.get(threshold, TokenPrices()), **changes)
    return replace(base, **base_changes), tuple(PriceTier(t, merged[t]) for t in sorted(merged))


def _rates(items: Iterable[tuple[str, Any]]) -> Iterable[tuple[int | None, str, float]]:
    for key, value in items:
        found, rate = price_key(key), price(value)
        if found is not None and rate is not None:
            yield found[0], found[1], rate
