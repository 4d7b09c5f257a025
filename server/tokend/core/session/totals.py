"""A session's lifetime sums over its provider calls (core.budget.snapshot.Totals), moved on by a call
and by a call's usage reported again (core.usage_correction)."""

from __future__ import annotations

from dataclasses import replace

from tokend.core.budget.snapshot import Totals
from tokend.core.types import Usage


def add_usage(totals: Totals, usage: Usage) -> Totals:
    """`totals` after one more call, of `usage`."""
    return replace(
        totals,
        calls=totals.calls + 1,
        input_tokens=totals.input_tokens + usage.input_tokens,
        output_tokens=totals.output_tokens + usage.output_tokens,
        reasoning_tokens=totals.reasoning_tokens + usage.reasoning_tokens,
        cache_read_tokens=totals.cache_read_tokens + usage.cache_read_tokens,
        cache_write_tokens=totals.cache_write_tokens + usage.cache_write_tokens,
    )


def replace_usage(totals: Totals, before: Usage, after: Usage) -> Totals:
    """`totals` with one call's usage `before` replaced by `after` (as many calls)."""
    return replace(
        totals,
        input_tokens=totals.input_tokens - before.input_tokens + after.input_tokens,
        output_tokens=totals.output_tokens - before.output_tokens + after.output_tokens,
        reasoning_tokens=totals.reasoning_tokens - before.reasoning_tokens + after.reasoning_tokens,
        cache_read_tokens=totals.cache_read_tokens
        - before.cache_read_tokens
        + after.cache_read_tokens,
        cache_write_tokens=totals.cache_write_tokens
        - before.cache_write_tokens
        + after.cache_write_tokens,
    )
