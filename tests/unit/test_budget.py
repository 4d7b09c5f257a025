"""Budget targets and autocompact threshold: the documented rules, then properties."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tokend.core.budget.limits import (
    BudgetConfig,
    CompactionConfig,
    autocompact_threshold,
    history_summary_target_tokens,
    input_room_tokens,
    output_reserve_tokens,
    repo_map_target_tokens,
)
from tokend.core.models.catalog import ModelInfo

GPT_4O = ModelInfo("gpt-4o", "openai", context_window=128_000, max_output_tokens=16_384)
GPT_4 = ModelInfo("gpt-4", "openai", context_window=8192, max_output_tokens=4096)
OPUS_200K = ModelInfo(
    "claude-opus-4-6", "anthropic", context_window=200_000, max_output_tokens=128_000
)
GPT_5_SPLIT = ModelInfo("gpt-5", "openai", 400_000, 128_000, input_limit=272_000)


def test_documented_defaults() -> None:
    budget, compaction = BudgetConfig(), CompactionConfig()
    assert (budget.output_reserve_cap, budget.safety_margin_ratio) == (32_000, 0.05)
    assert (budget.repo_map_min_tokens, budget.repo_map_max_tokens) == (1024, 4096)
    assert (budget.history_summary_min_tokens, budget.history_summary_max_tokens) == (1024, 8192)
    assert (compaction.auto, compaction.reserved, compaction.prune) == (True, None, True)
    assert compaction.protected_tools == ("skill",)
    assert (compaction.prune_protect_tokens, compaction.prune_minimum_tokens) == (40_000, 20_000)


def test_output_reserve_is_the_max_output_capped_at_32k() -> None:
    assert output_reserve_tokens(GPT_4O) == 16_384
    assert output_reserve_tokens(OPUS_200K) == 32_000
    unknown_output = ModelInfo("x", None, context_window=100_000, max_output_tokens=0)
    assert output_reserve_tokens(unknown_output) == 32_000
    assert output_reserve_tokens(OPUS_200K, BudgetConfig(output_reserve_cap=8000)) == 8000


def test_aider_repo_map_and_history_targets() -> None:
    assert repo_map_target_tokens(GPT_4O, has_chat_files=True) == 4096  # 16,000 clamped
    assert repo_map_target_tokens(GPT_4O, has_chat_files=False) == 8192  # doubled without files
    assert repo_map_target_tokens(GPT_4, has_chat_files=True) == 1024  # 8192 / 8
    assert history_summary_target_tokens(GPT_4O) == 8000  # 128,000 / 16
    assert history_summary_target_tokens(GPT_4) == 1024  # 512 clamped up
    assert history_summary_target_tokens(OPUS_200K) == 8192  # 12,500 clamped down


def test_autocompact_threshold_follows_opencode() -> None:
    assert autocompact_threshold(GPT_4O) == 128_000 - 16_384
    assert autocompact_threshold(OPUS_200K) == 200_000 - 32_000
    assert autocompact_threshold(GPT_5_SPLIT) == 272_000 - 20_000  # input limit - buffer
    small_output = ModelInfo("m", None, 400_000, 8000, input_limit=272_000)
    assert autocompact_threshold(small_output) == 272_000 - 8000  # min(20,000, max output)


def test_configured_reserved_replaces_the_buffer() -> None:
    reserved = CompactionConfig(reserved=50_000)
    assert autocompact_threshold(GPT_5_SPLIT, reserved) == 272_000 - 50_000
    assert autocompact_threshold(OPUS_200K, reserved) == 200_000 - 50_000


models = st.builds(
    ModelInfo,
    name=st.just("m"),
    provider=st.none(),
    context_window=st.integers(1, 2_000_000),
    max_output_tokens=st.integers(0, 300_000),
    input_limit=st.none() | st.integers(1, 2_000_000),
)
configs = st.builds(
    BudgetConfig,
    output_reserve_cap=st.integers(1, 200_000),
    safety_margin_ratio=st.floats(0, 0.49),
)


@given(info=models, reserved=st.none() | st.integers(0, 3_000_000), cfg=configs)
def test_threshold_is_below_the_window(
    info: ModelInfo, reserved: int | None, cfg: BudgetConfig
) -> None:
    threshold = autocompact_threshold(info, CompactionConfig(reserved=reserved), cfg)
    assert 0 <= threshold < info.context_window


@given(info=models, has_chat_files=st.booleans())
def test_targets_stay_within_their_clamps(info: ModelInfo, has_chat_files: bool) -> None:
    assert 1024 <= repo_map_target_tokens(info, has_chat_files) <= 4096 * 2
    assert 1024 <= history_summary_target_tokens(info) <= 8192


def test_input_room_is_the_window_less_the_reply_and_for_estimates_the_margin():
    # By hand: 128,000 - 16,384 (max output, under the 32,000 cap) = 111,616 when counted
    # exactly; less ceil(5% of 128,000) = 6,400 when estimated.
    assert input_room_tokens(GPT_4O, exact=True) == 111_616
    assert input_room_tokens(GPT_4O) == 105_216
    tiny = ModelInfo("t", None, context_window=1_000, max_output_tokens=990)
    assert input_room_tokens(tiny) == 1_000 - 990 - 50  # no room: negative, not clamped
