"""What a call costs, on litellm's real catalog: tiers, 1-hour cache writes, reasoning rates.

Every expected figure is written out from the catalog's rates (dollars per token, quoted in the
comments as $/Mtok), not computed by the code under test.
"""

from __future__ import annotations

import pytest

from tokend.adapters.catalog_source import LitellmEntries
from tokend.core.models.catalog import Catalog, PriceTier, TokenPrices
from tokend.core.types import Usage
from tokend.core.usage.pricing import cost_usd


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    entries = LitellmEntries().get()
    assert entries, "the model catalog JSON was not found: run scripts/bootstrap (installs litellm)"
    return Catalog(entries)


def test_the_catalog_rates_these_tests_rely_on(catalog: Catalog) -> None:
    assert catalog.get("claude-opus-4-6").prices == TokenPrices(
        input=5e-06, output=2.5e-05, cache_read=5e-07, cache_write=6.25e-06, cache_write_1h=1e-05
    )
    assert catalog.get("gpt-5.4").price_tiers == (
        PriceTier(272_000, TokenPrices(input=5e-06, output=2.25e-05, cache_read=5e-07)),
    )
    assert catalog.get("dashscope/qwen-turbo").prices == TokenPrices(
        input=5e-08, output=2e-07, reasoning=5e-07
    )
    assert [t.above_tokens for t in catalog.get("kyma/qwen3.7-flash").price_tiers] == [
        32_000,
        256_000,
    ]


def test_one_hour_cache_writes_cost_the_one_hour_rate(catalog: Catalog) -> None:
    # The first call of the shared Claude Code session: all 8,037 written tokens with a 1-hour TTL.
    usage = Usage(
        input_tokens=3,
        output_tokens=10,
        cache_read_tokens=17_842,
        cache_write_tokens=8_037,
        cache_write_1h_tokens=8_037,
    )
    # 3 x $5 + 10 x $25 + 17,842 x $0.50 + 8,037 x $10 (per Mtok)
    # = $0.000015 + $0.000250 + $0.008921 + $0.080370 (at the 5-minute rate: $0.050231)
    assert cost_usd(catalog.get("claude-opus-4-6"), usage) == pytest.approx(0.089556)


def test_five_minute_and_one_hour_writes_each_cost_their_rate(catalog: Catalog) -> None:
    usage = Usage(
        input_tokens=0, output_tokens=0, cache_write_tokens=1_000, cache_write_1h_tokens=600
    )
    # 400 x $6.25 (5-minute) + 600 x $10 (1-hour) per Mtok
    assert cost_usd(catalog.get("claude-opus-4-6"), usage) == pytest.approx(0.0025 + 0.006)


def test_one_hour_writes_without_a_one_hour_rate_cost_the_cache_write_rate(
    catalog: Catalog,
) -> None:
    gemini = catalog.get("gemini-2.5-pro")  # no cache write rate at all below 200k: the input one
    usage = Usage(
        input_tokens=0, output_tokens=0, cache_write_tokens=1_000, cache_write_1h_tokens=1_000
    )
    assert cost_usd(gemini, usage) == pytest.approx(1_000 * 1.25e-06)


def test_the_272k_tier_applies_only_above_272k_of_context(catalog: Catalog) -> None:
    gpt = catalog.get("gpt-5.4")
    at = Usage(input_tokens=200_000, output_tokens=1_000, cache_read_tokens=72_000)  # 272,000
    # base: $2.50 input, $15 output, $0.25 cache read (per Mtok)
    assert cost_usd(gpt, at) == pytest.approx(
        200_000 * 2.5e-06 + 1_000 * 1.5e-05 + 72_000 * 2.5e-07
    )
    above = Usage(input_tokens=200_000, output_tokens=1_000, cache_read_tokens=72_001)
    # above 272k: $5 input, $22.50 output, $0.50 cache read
    assert cost_usd(gpt, above) == pytest.approx(
        200_000 * 5e-06 + 1_000 * 2.25e-05 + 72_001 * 5e-07
    )


def test_cache_writes_count_toward_the_tier_threshold(catalog: Catalog) -> None:
    sonnet = catalog.get("anthropic.claude-sonnet-4-5-20250929-v1:0")  # Bedrock, tiered at 200k
    usage = Usage(
        input_tokens=1_000,
        output_tokens=100,
        cache_read_tokens=150_000,
        cache_write_tokens=60_000,
        cache_write_1h_tokens=20_000,
    )
    # context 211,000 > 200k: $6 input, $22.50 output, $0.60 cache read, $7.50 5-minute writes,
    # $12 1-hour writes (cache_creation_input_token_cost_above_1hr_above_200k_tokens), per Mtok
    expected = (
        1_000 * 6e-06 + 100 * 2.25e-05 + 150_000 * 6e-07 + 40_000 * 7.5e-06 + 20_000 * 1.2e-05
    )
    assert cost_usd(sonnet, usage) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("context", "input_rate", "output_rate"),
    [
        (32_000, 4.35e-08, 1.886e-07),  # not above 32k: base
        (100_000, 1.35e-07, 5.4e-07),  # above 32k
        (256_001, 2.7e-07, 1.08e-06),  # above 256k: the highest tier wins
    ],
)
def test_the_highest_tier_exceeded_wins(
    catalog: Catalog, context: int, input_rate: float, output_rate: float
) -> None:
    usage = Usage(input_tokens=context, output_tokens=2_000)
    expected = context * input_rate + 2_000 * output_rate
    assert cost_usd(catalog.get("kyma/qwen3.7-flash"), usage) == pytest.approx(expected)


def test_reasoning_tokens_cost_the_reasoning_rate_once(catalog: Catalog) -> None:
    qwen = catalog.get("dashscope/qwen-turbo")
    usage = Usage(input_tokens=10_000, output_tokens=1_000, reasoning_tokens=600)
    # 10,000 x $0.05 + 400 visible output x $0.20 + 600 reasoning x $0.50 (per Mtok)
    assert cost_usd(qwen, usage) == pytest.approx(10_000 * 5e-08 + 400 * 2e-07 + 600 * 5e-07)


def test_without_a_reasoning_rate_reasoning_is_output(catalog: Catalog) -> None:
    o3 = catalog.get("o3")
    usage = Usage(input_tokens=1_000, output_tokens=1_000, reasoning_tokens=800)
    # $2 input, $8 output (reasoning included) per Mtok
    assert cost_usd(o3, usage) == pytest.approx(1_000 * 2e-06 + 1_000 * 8e-06)
