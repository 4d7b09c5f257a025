"""What one provider call costs, in US dollars, from a model's per-token prices and its usage."""

from __future__ import annotations

from tokend.core.catalog import ModelInfo, TokenPrices
from tokend.core.types import Usage

TIER_THRESHOLD_TOKENS = 200_000
"""Above this many context tokens in one call (input + cache), the `_above_200k_tokens` rates apply."""


def cost_usd(info: ModelInfo, usage: Usage) -> float:
    """Dollars for one call: input, output, cache reads and cache writes at their rates.

    When the call's context (input + cache tokens) exceeds 200,000 and the model has an
    above-200k tier, each tier rate replaces its base rate (a missing tier rate keeps the base).
    Missing cache rates fall back to the input rate; a missing input/output rate counts as 0.
    Reasoning tokens are taken to be part of `output_tokens`, as OpenAI and Anthropic report them.
    """
    rates = info.prices
    if info.prices_above_200k is not None and usage.context_tokens > TIER_THRESHOLD_TOKENS:
        tier = info.prices_above_200k
        rates = TokenPrices(
            *(t if t is not None else b for t, b in zip(_fields(tier), _fields(rates), strict=True))
        )
    input_rate = rates.input or 0.0
    return (
        usage.input_tokens * input_rate
        + usage.output_tokens * (rates.output or 0.0)
        + usage.cache_read_tokens
        * (rates.cache_read if rates.cache_read is not None else input_rate)
        + usage.cache_write_tokens
        * (rates.cache_write if rates.cache_write is not None else input_rate)
    )


def _fields(p: TokenPrices) -> tuple[float | None, ...]:
    return (p.input, p.output, p.cache_read, p.cache_write)
