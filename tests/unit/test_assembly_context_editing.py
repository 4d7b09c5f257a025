"""core.assembly.context_editing and core.models.provider_features: the edits as Anthropic documents them
(the expected objects are written out from its context editing page, not built by the code),
the models it lists, and the warnings when an edit is not sent."""

from __future__ import annotations

from tokend.core.assembly.context_editing import (
    ContextEditingConfig,
    provider_clears,
    provider_edits,
)
from tokend.core.models.provider_features import CONTEXT_EDITING, TASK_BUDGETS


def test_the_defaults_are_anthropics() -> None:
    edits = provider_edits(
        ContextEditingConfig(enabled=True), None, "claude-sonnet-4-6", "anthropic"
    )
    assert edits.warning is None
    assert edits.beta == "context-management-2025-06-27"
    assert edits.context_management == {
        "edits": [
            {
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "input_tokens", "value": 100_000},
                "keep": {"type": "tool_uses", "value": 3},
            }
        ]
    }


def test_every_option_and_the_thinking_edit_first() -> None:
    cfg = ContextEditingConfig(
        enabled=True,
        trigger_tokens=30_000,
        keep_tool_uses=0,
        clear_at_least_tokens=5_000,
        exclude_tools=("web_search", "memory"),
        clear_tool_inputs=True,
        keep_all_thinking=True,
    )
    got = provider_edits(cfg, None, "claude-opus-4-8", "anthropic").context_management
    assert got == {
        "edits": [
            {"type": "clear_thinking_20251015", "keep": "all"},
            {
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "input_tokens", "value": 30_000},
                "keep": {"type": "tool_uses", "value": 0},
                "clear_at_least": {"type": "input_tokens", "value": 5_000},
                "exclude_tools": ["web_search", "memory"],
                "clear_tool_inputs": True,
            },
        ]
    }
    turns = ContextEditingConfig(enabled=True, keep_thinking_turns=2)
    first = provider_edits(turns, None, "claude-opus-4-8", "anthropic").context_management
    assert first is not None
    assert first["edits"][0] == {
        "type": "clear_thinking_20251015",
        "keep": {"type": "thinking_turns", "value": 2},
    }


def test_the_request_decides_over_the_setting() -> None:
    on, off = ContextEditingConfig(enabled=True), ContextEditingConfig()
    assert provider_edits(on, False, "claude-opus-4-8", "anthropic").context_management is None
    assert provider_edits(off, True, "claude-opus-4-8", "anthropic").context_management is not None
    assert provider_edits(off, None, "claude-opus-4-8", "anthropic") == provider_edits(
        off, False, "claude-opus-4-8", "anthropic"
    )


def test_not_sent_where_anthropic_does_not_take_it_and_the_warning_says_why() -> None:
    on = ContextEditingConfig(enabled=True)
    openai = provider_edits(on, None, "claude-opus-4-8", "openai")
    assert openai.context_management is None
    assert openai.warning is not None and "openai" in openai.warning
    other = provider_edits(on, None, "gpt-4o", "anthropic")
    assert other.context_management is None and other.beta is None
    assert other.warning is not None and "gpt-4o is not among the models" in other.warning
    assert provider_clears(on, "claude-opus-4-8") and not provider_clears(on, "gpt-4o")
    assert not provider_clears(ContextEditingConfig(), "claude-opus-4-8")


def test_the_listed_models_in_any_spelling() -> None:
    for name in (
        "claude-haiku-4-5",
        "claude-haiku-4-5-20251001",
        "anthropic/claude-sonnet-4-5",
        "Claude-Opus-4-6",
        "claude-opus-4-6[1m]",
        "claude-opus-4-5-20251101",
        "claude-mythos-preview",
    ):
        assert CONTEXT_EDITING.supports(name), name
    for name in ("claude-opus-4-1-20250805", "claude-3-7-sonnet", "gpt-4o", "claude-opus-4-9"):
        assert not CONTEXT_EDITING.supports(name), name
    assert TASK_BUDGETS.supports("claude-opus-4-7-20260416")
    assert not TASK_BUDGETS.supports("claude-sonnet-4-6")  # context editing yes, task budgets no
