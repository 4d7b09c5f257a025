"""Budget partition and autocompact threshold: the documented rules, then properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokend.core.budget import (
    CATEGORIES,
    MEASURED_CATEGORIES,
    BudgetConfig,
    CompactionConfig,
    autocompact_threshold,
    history_summary_target_tokens,
    output_reserve_tokens,
    partition,
    repo_map_target_tokens,
)
from tokend.core.catalog import ModelInfo
from tokend.core.errors import ContextOverflow

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


def test_partition_grants_measured_sizes_and_gives_history_the_rest() -> None:
    measured = {
        "system": 2000, "tools": 5000, "memory": 1000, "repo_map": 6000,
        "chat_files": 10_000, "history": 90_000, "current": 500, "reminder": 100,
    }  # fmt: skip
    plan = partition(GPT_4O, BudgetConfig(), measured, has_chat_files=True)
    assert plan.allowance("output_reserve") == 16_384
    assert plan.allowance("safety_margin") == 6400
    assert plan.allowance("repo_map") == 4096 and plan.line("repo_map").over_tokens == 1904
    room = 128_000 - 16_384 - 6400 - 2000 - 5000 - 1000 - 4096 - 10_000
    assert plan.current_room_tokens == room
    assert plan.allowance("history") == room - 600
    assert plan.line("history").over_tokens == 90_000 - (room - 600)  # compaction needed
    assert plan.allotted_tokens == 128_000
    assert plan.overflow is None
    assert plan.fits(room - 100) and not plan.fits(room - 99)
    assert [line.category for line in plan.lines] == list(CATEGORIES)


def test_a_message_that_cannot_fit_says_what_to_drop() -> None:
    measured = {"system": 1000, "tools": 500, "chat_files": 2000, "current": 1000}
    plan = partition(GPT_4, BudgetConfig(), measured, has_chat_files=True)
    room = 8192 - 4096 - 410 - 1000 - 500 - 2000
    assert plan.current_room_tokens == room
    assert plan.overflow is not None
    assert plan.overflow.missing_tokens == 1000 - room
    assert "drop chat files (2,000 tokens)" in plan.overflow.suggestions
    assert (
        f"shorten the current message by at least {1000 - room:,} tokens"
        in plan.overflow.suggestions
    )
    error = plan.overflow.to_error()
    assert isinstance(error, ContextOverflow) and error.code == -32003
    assert error.data == {
        "total": 8192 - room + 1000,
        "limit": 8192,
        "suggestions": list(plan.overflow.suggestions),
    }


def test_an_unknown_category_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="histroy"):
        partition(GPT_4O, BudgetConfig(), {"histroy": 5}, has_chat_files=False)


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
sizes = st.fixed_dictionaries({c: st.integers(0, 3_000_000) for c in MEASURED_CATEGORIES})


@given(info=models, cfg=configs, measured=sizes, has_chat_files=st.booleans())
def test_allowances_are_never_negative_and_never_exceed_the_window(
    info: ModelInfo, cfg: BudgetConfig, measured: dict[str, int], has_chat_files: bool
) -> None:
    plan = partition(info, cfg, measured, has_chat_files)
    assert all(line.allowance_tokens >= 0 for line in plan.lines)
    assert plan.allotted_tokens <= info.context_window
    assert plan.allowance("repo_map") <= plan.repo_map_target_tokens
    assert (plan.overflow is None) == plan.fits(measured["current"])


@given(info=models, cfg=configs, measured=sizes, has_chat_files=st.booleans())
def test_when_it_fits_everything_but_history_gets_its_measured_size(
    info: ModelInfo, cfg: BudgetConfig, measured: dict[str, int], has_chat_files: bool
) -> None:
    plan = partition(info, cfg, measured, has_chat_files)
    fixed = ("system", "tools", "memory", "chat_files", "current", "reminder")
    wanted = sum(measured[c] for c in fixed) + min(
        measured["repo_map"], plan.repo_map_target_tokens
    )
    room = info.context_window - plan.allowance("output_reserve") - plan.allowance("safety_margin")
    if plan.overflow is None and wanted <= room:
        for category in fixed:
            assert plan.allowance(category) == measured[category]
        assert plan.allowance("repo_map") == min(measured["repo_map"], plan.repo_map_target_tokens)


@given(info=models, measured=sizes, n=st.integers(0, 3_000_000))
def test_a_shorter_message_fits_whenever_a_longer_one_does(
    info: ModelInfo, measured: dict[str, int], n: int
) -> None:
    plan = partition(info, BudgetConfig(), measured, has_chat_files=True)
    if plan.fits(n + 1):
        assert plan.fits(n)


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
