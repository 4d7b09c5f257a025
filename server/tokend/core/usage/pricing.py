"""What one provider call costs, in US dollars, from a model's per-token prices and its usage."""

from __future__ import annotations

from collections.abc import Iterable

from tokend.core.models.catalog import ModelInfo
from tokend.core.models.prices import PriceTier, TokenPrices
from tokend.core.types import Part, Usage
from tokend.core.usage.accounting import billed_usages, provider_compaction


def rates_for(
    prices: TokenPrices, tiers: tuple[PriceTier, ...], context_tokens: int
) -> TokenPrices:
    """The rates of a call with `context_tokens` of context: each tier whose threshold it exceeds,
    from the lowest up, replaces the rates it sets, so the highest such tier wins."""
    rates = prices
    for tier in sorted(tiers, key=lambda t: t.above_tokens):
        if context_tokens > tier.above_tokens:
            rates = tier.prices.over(rates)
    return rates


def cost_usd(info: ModelInfo, usage: Usage) -> float:
    """Dollars for one call: input, output, cache reads and cache writes at their rates.

    The tier is chosen by the call's context (input + cache read + cache write, Usage.context_tokens).
    Cache writes with a 1-hour lifetime (`cache_write_1h_tokens`, part of `cache_write_tokens`) cost
    the 1-hour rate where the model has one. Reasoning tokens are part of `output_tokens`, as OpenAI
    and Anthropic report them: where the model has a reasoning rate they cost it instead of the
    output rate, never both. Missing cache rates fall back to the input rate (a missing 1-hour
    rate to the cache write rate); a missing input/output rate counts as 0.
    """
    rates = rates_for(info.prices, info.price_tiers, usage.context_tokens)
    input_rate = rates.input or 0.0
    output_rate = rates.output or 0.0
    cache_read_rate = rates.cache_read if rates.cache_read is not None else input_rate
    cache_write_rate = rates.cache_write if rates.cache_write is not None else input_rate
    cache_write_1h_rate = (
        rates.cache_write_1h if rates.cache_write_1h is not None else cache_write_rate
    )
    reasoning = (
        min(usage.reasoning_tokens, usage.output_tokens) if rates.reasoning is not None else 0
    )
    written_1h = min(usage.cache_write_1h_tokens, usage.cache_write_tokens)
    return (
        usage.input_tokens * input_rate
        + (usage.output_tokens - reasoning) * output_rate
        + reasoning * (rates.reasoning or 0.0)
        + usage.cache_read_tokens * cache_read_rate
        + (usage.cache_write_tokens - written_1h) * cache_write_rate
        + written_1h * cache_write_1h_rate
    )


def call_cost_usd(info: ModelInfo, usage: Usage, parts: Iterable[Part]) -> float:
    """Dollars for a call with every sampling iteration it was billed for (a provider's
    compaction is billed apart from the reply: core.usage.accounting.billed_usages), each priced at
    the tier its own context reaches."""
    compaction = provider_compaction(parts)
    return sum(cost_usd(info, u) for u in billed_usages(usage, compaction))
