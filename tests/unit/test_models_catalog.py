"""The model catalog on litellm's real JSON: windows, tokenizers, prices, spellings, overrides."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokend.adapters.catalog_source import LitellmEntries, load_catalog
from tokend.adapters.tokenizers import VOCABULARIES
from tokend.core.errors import InvalidParams, UnknownModel
from tokend.core.models.catalog import (
    ENCODINGS,
    Catalog,
    ModelInfo,
    PriceTier,
    TokenPrices,
    parse_litellm_entry,
    with_context_window,
)
from tokend.core.models.names import CLAUDE_FAMILIES
from tokend.core.models.traits import tokenizer_for
from tokend.core.types import Usage
from tokend.core.usage.pricing import cost_usd


@pytest.fixture(scope="module")
def litellm() -> object:
    entries = LitellmEntries().get()
    assert entries, "the model catalog JSON was not found: run scripts/bootstrap (installs litellm)"
    return entries


@pytest.fixture(scope="module")
def catalog(litellm: object) -> Catalog:
    return Catalog(litellm)  # type: ignore[arg-type]


def test_gpt_4o_window_output_and_tokenizer(catalog: Catalog) -> None:
    info = catalog.get("gpt-4o")
    assert (info.context_window, info.max_output_tokens) == (128_000, 16_384)
    assert info.effective_input_tokens == 128_000 - 16_384
    assert info.tokenizer == "o200k_base"
    assert info.provider == "openai"
    assert info.supports_prompt_caching


@pytest.mark.parametrize(
    ("name", "tokenizer"),
    [
        ("gpt-4", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("gpt-4.1", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("o1", "o200k_base"),
        ("o3", "o200k_base"),
        ("o4-mini", "o200k_base"),
        ("claude-sonnet-4-5", "claude-v3"),
        ("claude-opus-4-7", "claude-v4.7"),
        ("claude-sonnet-5", "claude-v4.8"),
        ("claude-mythos-preview", None),  # no generation in the name: the estimate
        ("gemini-2.5-pro", None),
        ("deepseek-chat", None),
    ],
)
def test_tokenizer_of_catalog_models(catalog: Catalog, name: str, tokenizer: str | None) -> None:
    assert catalog.get(name).tokenizer == tokenizer


@pytest.mark.parametrize(
    ("name", "tokenizer"),
    [
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-4-32k", "cl100k_base"),
        ("gpt-35-turbo", "cl100k_base"),
        ("gpt-4o-2024-08-06", "o200k_base"),
        ("chatgpt-4o-latest", "o200k_base"),
        ("azure/gpt-4o-mini", "o200k_base"),
        ("ft:gpt-4o-mini:acme::abc", "o200k_base"),
        ("gpt-5.1-codex", "o200k_base"),
        ("o1-mini", "o200k_base"),
        ("omni-moderation", None),
        ("gpt-oss-120b", None),
        ("claude-opus-4-6", "claude-v3"),
    ],
)
def test_tokenizer_by_family(name: str, tokenizer: str | None) -> None:
    assert tokenizer_for(name) == tokenizer


def test_claude_opus_4_6_is_listed_at_one_million_and_a_session_can_use_200k(
    catalog: Catalog,
) -> None:
    listed = catalog.get("claude-opus-4-6")
    assert listed.context_window == 1_000_000
    standard = with_context_window(listed, 200_000)
    assert standard.context_window == 200_000
    assert standard.effective_input_tokens == 200_000 - listed.max_output_tokens
    assert standard.prices == listed.prices
    assert catalog.get("claude-opus-4-6").context_window == 1_000_000  # catalog unchanged


@pytest.mark.parametrize("window", [0, -5, True, 1.5])
def test_a_session_window_must_be_a_positive_token_count(catalog: Catalog, window: object) -> None:
    with pytest.raises(InvalidParams):
        with_context_window(catalog.get("gpt-4o"), window)  # type: ignore[arg-type]


def test_claude_sonnet_4_5_prices(catalog: Catalog) -> None:
    info = catalog.get("claude-sonnet-4-5")
    assert info.prices == TokenPrices(
        input=3e-06, output=1.5e-05, cache_read=3e-07, cache_write=3.75e-06, cache_write_1h=6e-06
    )
    assert info.price_tiers == ()
    assert (info.context_window, info.max_output_tokens) == (200_000, 64_000)


def test_cost_of_a_claude_call_computed_by_hand(catalog: Catalog) -> None:
    usage = Usage(
        input_tokens=1000, output_tokens=500, cache_read_tokens=2000, cache_write_tokens=4000
    )
    # 1000 * $3/M + 500 * $15/M + 2000 * $0.30/M + 4000 * $3.75/M
    expected = 0.003 + 0.0075 + 0.0006 + 0.015
    assert cost_usd(catalog.get("claude-sonnet-4-5"), usage) == pytest.approx(expected)


def test_cost_above_200k_context_uses_the_tier_rates(catalog: Catalog) -> None:
    gemini = catalog.get("gemini-2.5-pro")
    small = Usage(input_tokens=100_000, output_tokens=1000)
    assert cost_usd(gemini, small) == pytest.approx(100_000 * 1.25e-6 + 1000 * 1e-5)
    large = Usage(input_tokens=150_000, output_tokens=1000, cache_read_tokens=60_000)
    # context 210,000 > 200,000: $2.50/M input, $15/M output, $0.25/M cache read
    expected = 150_000 * 2.5e-6 + 1000 * 1.5e-5 + 60_000 * 2.5e-7
    assert cost_usd(gemini, large) == pytest.approx(expected)


def test_cache_tokens_without_a_cache_price_cost_the_input_price(catalog: Catalog) -> None:
    gpt4 = catalog.get("gpt-4")
    assert gpt4.prices.cache_read is None
    usage = Usage(input_tokens=0, output_tokens=0, cache_read_tokens=1000)
    assert cost_usd(gpt4, usage) == pytest.approx(1000 * 3e-05)


def test_reasoning_is_stripped_where_the_provider_drops_it(catalog: Catalog) -> None:
    assert catalog.get("o3").strips_reasoning  # OpenAI reasoning model
    assert not catalog.get("gpt-4o").strips_reasoning  # no reasoning at all
    assert catalog.get("claude-sonnet-4-5").strips_reasoning  # Anthropic drops old thinking
    assert not catalog.get("claude-opus-4-5").strips_reasoning  # ...unless the model preserves it


@pytest.mark.parametrize(
    ("spelling", "resolved"),
    [
        ("anthropic/claude-opus-4-5", "claude-opus-4-5"),
        ("openrouter/anthropic/claude-opus-4-5", "claude-opus-4-5"),
        ("claude-opus-4-5-20251101", "claude-opus-4-5-20251101"),
        ("claude-opus-4-6-20991231", "claude-opus-4-6"),
        ("Claude-Opus-4-5", "claude-opus-4-5"),
        ("GPT-4o", "gpt-4o"),
        ("anthropic/claude-opus-4.5", "claude-opus-4-5"),
        ("qwen-max", "dashscope/qwen-max"),
    ],
)
def test_common_spellings_resolve(catalog: Catalog, spelling: str, resolved: str) -> None:
    assert catalog.get(spelling).name == resolved


def test_an_undated_name_finds_the_newest_dated_entry() -> None:
    entry = {"mode": "chat", "max_input_tokens": 1000, "max_output_tokens": 100}
    catalog = Catalog(
        {"acme-1-20240101": entry, "acme-1-20250101": {**entry, "max_input_tokens": 2000}}
    )
    assert catalog.get("acme-1").name == "acme-1-20250101"


def test_unknown_model_says_how_to_declare_it(catalog: Catalog) -> None:
    with pytest.raises(UnknownModel) as raised:
        catalog.get("claude-opuss-4-6")
    message = raised.value.message
    assert '[models."claude-opuss-4-6"]' in message
    assert "~/.config/tokend/config.toml" in message and ".tokend.toml" in message
    assert "context_window" in message and "max_output_tokens" in message
    assert raised.value.code == -33002
    assert "claude-opus-4-6" in raised.value.data["suggestions"]


def test_workspace_override_beats_user_beats_catalog(litellm: object) -> None:
    user = {"claude-sonnet-4-5": {"context_window": 150_000, "max_output_tokens": 20_000}}
    workspace = {"anthropic/claude-sonnet-4-5": {"context_window": 100_000}}
    catalog = Catalog(litellm, [user, workspace])  # type: ignore[arg-type]
    info = catalog.get("claude-sonnet-4-5")
    assert (info.context_window, info.max_output_tokens) == (100_000, 20_000)
    assert info.prices.input == 3e-06  # catalog value kept
    assert catalog.get("anthropic/claude-sonnet-4-5") == info
    dated = catalog.get("claude-sonnet-4-5-20250929")  # the dated variant follows its family
    assert (dated.context_window, dated.max_output_tokens) == (100_000, 20_000)
    assert catalog.warnings == ()


def test_a_config_table_declares_a_new_model(litellm: object) -> None:
    table = {
        "context_window": 32_768,
        "max_output_tokens": 4096,
        "tokenizer": "cl100k_base",
        "input_cost_per_token": 1e-06,
        "output_cost_per_token": 2e-06,
    }
    catalog = Catalog(litellm, [{"local/my-llm": table}])  # type: ignore[arg-type]
    info = catalog.get("local/my-llm")
    assert (info.context_window, info.max_output_tokens, info.tokenizer) == (
        32_768,
        4096,
        "cl100k_base",
    )
    assert cost_usd(info, Usage(input_tokens=1000, output_tokens=1000)) == pytest.approx(0.003)
    assert catalog.get("LOCAL/MY-LLM") == info


def test_invalid_override_values_are_reported_and_ignored(litellm: object) -> None:
    layer = {
        "gpt-4o": {"context_window": -1, "max_output_tokens": "lots", "colour": "blue"},
        "nameless-window": {"max_output_tokens": 1000},
    }
    catalog = Catalog(litellm, [layer])  # type: ignore[arg-type]
    assert catalog.get("gpt-4o").context_window == 128_000
    assert len(catalog.warnings) == 4
    assert any("colour" in w and "not a known key" in w for w in catalog.warnings)
    assert "nameless-window" not in catalog


def test_overriding_a_tier_price_keeps_the_other_rates(litellm: object) -> None:
    layer = {"gemini-2.5-pro": {"output_cost_per_token_above_200k_tokens": 2e-05}}
    info = Catalog(litellm, [layer]).get("gemini-2.5-pro")  # type: ignore[arg-type]
    tier = TokenPrices(input=2.5e-06, output=2e-05, cache_read=2.5e-07, cache_write=2.5e-07)
    assert info.price_tiers == (PriceTier(200_000, tier),)


def test_an_override_adds_a_tier_the_catalog_lacks(litellm: object) -> None:
    layer = {"gpt-4o": {"input_cost_per_token_above_100k_tokens": 5e-06}}
    info = Catalog(litellm, [layer]).get("gpt-4o")  # type: ignore[arg-type]
    assert info.price_tiers == (PriceTier(100_000, TokenPrices(input=5e-06)),)
    assert info.prices.input == 2.5e-06  # the base rate is kept


@pytest.mark.parametrize("spelling", ["o200k", "O200K_BASE", "gpt2", 200])
def test_an_unknown_tokenizer_override_is_reported_and_the_catalog_value_kept(
    spelling: object,
) -> None:
    user = {"models": {"gpt-4o": {"tokenizer": spelling, "context_window": 100_000}}}
    catalog = load_catalog(user, {})  # as production builds it: tokenizers tokend can load
    info = catalog.get("gpt-4o")
    assert info.tokenizer == "o200k_base"
    assert info.context_window == 100_000  # the table's valid keys still apply
    (warning,) = catalog.warnings
    assert repr(spelling) in warning and '"cl100k_base"' in warning and '"o200k_base"' in warning


def test_a_valid_or_empty_tokenizer_override_applies(litellm: object) -> None:
    layer = {"gpt-4o": {"tokenizer": "cl100k_base"}, "claude-opus-4-6": {"tokenizer": ""}}
    catalog = Catalog(litellm, [layer])  # type: ignore[arg-type]
    assert catalog.get("gpt-4o").tokenizer == "cl100k_base"
    assert catalog.get("claude-opus-4-6").tokenizer is None  # "" means the estimate
    assert catalog.warnings == ()


def test_a_new_model_with_an_unknown_tokenizer_gets_its_family_default(litellm: object) -> None:
    layer = {"gpt-4o-acme": {"context_window": 64_000, "tokenizer": "o200k"}}
    catalog = Catalog(litellm, [layer])  # type: ignore[arg-type]
    assert catalog.get("gpt-4o-acme").tokenizer == "o200k_base"
    assert len(catalog.warnings) == 1 and "o200k" in catalog.warnings[0]


def test_every_tokenizer_the_catalog_assigns_can_be_loaded() -> None:
    assert ENCODINGS == set(VOCABULARIES) | set(CLAUDE_FAMILIES)


def test_parse_keeps_only_chat_models_with_an_input_limit() -> None:
    assert parse_litellm_entry("e", {"mode": "embedding", "max_input_tokens": 8191}) is None
    assert parse_litellm_entry("c", {"mode": "chat", "max_tokens": 4096}) is None
    info = parse_litellm_entry("c", {"mode": "chat", "max_input_tokens": 8192, "max_tokens": 4096})
    assert info is not None and info.max_output_tokens == 4096


@given(window=st.integers(1, 10_000_000), output=st.integers(0, 10_000_000))
def test_effective_input_is_never_negative_nor_above_the_window(window: int, output: int) -> None:
    info = ModelInfo("m", None, context_window=window, max_output_tokens=output)
    assert 0 <= info.effective_input_tokens <= window


@given(
    counts=st.tuples(*[st.integers(0, 400_000)] * 4),
    extra_output=st.integers(1, 10_000),
)
def test_more_output_never_costs_less(counts: tuple[int, int, int, int], extra_output: int) -> None:
    base, tier = TokenPrices(1e-6, 5e-6, 1e-7, 2e-6), TokenPrices(2e-6, 1e-5, None, None)
    info = ModelInfo(
        "m", None, 1_000_000, 1000, prices=base, price_tiers=(PriceTier(200_000, tier),)
    )
    usage = Usage(counts[0], counts[1], cache_read_tokens=counts[2], cache_write_tokens=counts[3])
    more = Usage(
        counts[0],
        counts[1] + extra_output,
        cache_read_tokens=counts[2],
        cache_write_tokens=counts[3],
    )
    assert 0 <= cost_usd(info, usage) < cost_usd(info, more)


def test_a_model_name_over_256_characters_names_no_model_and_gets_no_suggestions() -> None:
    """An 8 MB `model` cost session/create 3 s on the event loop: each "provider/" segment
    was another spelling to try, and difflib compared it with every catalog name."""
    from tokend.core.models.names import ModelNames

    names = ModelNames()
    names.add("gpt-4o", "openai")
    prefixed = "x/" * 200 + "gpt-4o"  # 406 characters
    assert names.resolve("x/gpt-4o") == "gpt-4o"
    assert names.resolve(prefixed) is None
    assert names.close_matches("gpt-4o" + " " * 256) == []
    assert names.close_matches("gpt-4") == ["gpt-4o"]
