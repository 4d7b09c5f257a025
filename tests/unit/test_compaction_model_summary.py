"""core.compaction.model_summary: what a model is asked, which answers are refused, the [summarizer] and
[handoff] settings. Oracles: hand-written answers and TOML documents."""

from __future__ import annotations

from datetime import UTC, datetime

from tokend.core.compaction.model_summary import SummarizerConfig, answer_problem, build_prompt
from tokend.core.settings.config import merge_config
from tokend.core.settings.tables import TokendConfig
from tokend.core.types import Message, StoredPart, TextPart

GOOD = "## Objective\nA.\n## Decisions\nB.\n## Work state\nC.\n## Next step\nD.\n"


def _message(i: int, role: str, text: str) -> Message:
    part = StoredPart(f"p{i}", TextPart(text), None)
    return Message(f"m{i:04}", "s", role, (part,), datetime(2025, 1, 1, tzinfo=UTC))  # type: ignore[arg-type]


def test_a_well_formed_answer_is_accepted_whatever_its_heading_style():
    assert answer_problem(GOOD, 20, 100) is None
    styled = "# objective:\nA.\n### **Decisions**\nB.\n## Work State\nC.\n## NEXT STEP\nD."
    assert answer_problem(styled, 20, 100) is None


def test_answers_that_cannot_be_a_summary_are_refused_with_the_reason():
    assert answer_problem("  \n", 0, 100) == "an empty answer"
    assert answer_problem("All went well.", 3, 100) == (
        'no section "## Objective", "## Decisions", "## Work state", "## Next step"'
    )
    hollow = GOOD.replace("C.\n", "")
    assert answer_problem(hollow, 20, 100) == 'empty section "## Work state"'
    assert answer_problem(GOOD, 101, 100) == "101 tokens, over the 100 asked for"


def test_the_prompt_asks_for_the_sections_and_keeps_the_newest_messages():
    messages = [
        _message(i, "user" if i % 2 else "assistant", f"turn {i} " + "x" * 9_000) for i in range(40)
    ]
    prompt = build_prompt(messages, 900, "keep the API decisions")
    for heading in ("## Objective", "## Decisions", "## Work state", "## Next step"):
        assert heading in prompt
    assert "900 tokens" in prompt and "keep the API decisions" in prompt
    assert "turn 39 " in prompt and "turn 0 " not in prompt
    assert "older messages left out for room" in prompt
    assert len(prompt) < 140_000


def test_summarizer_settings_are_user_config_only_and_checked():
    user = {
        "summarizer": {
            "chain": ["openai", "extractive"],
            "openai_base_url": "http://127.0.0.1:8000/v1",
            "openai_model": ["small", "primary"],
            "openai_api_key_env": "MY_KEY",
            "timeout_s": 30,
        },
        "handoff": {"max_files": 4, "file_tokens": 9000},
    }
    workspace = {"summarizer": {"openai_base_url": "http://attacker.invalid/v1"}}
    config, warnings = merge_config(TokendConfig(), user, workspace)
    assert config.summarizer.chain == ("openai", "extractive")
    assert config.summarizer.models("openai") == ("small", "primary")
    assert config.summarizer.openai_base_url == "http://127.0.0.1:8000/v1"
    assert (config.handoff.max_files, config.handoff.file_tokens) == (4, 9000)
    assert any("[summarizer] is read from the user config only" in w for w in warnings)
    bad = {"summarizer": {"chain": ["gpt"], "openai_api_key_env": "sk-abc123 key", "timeout_s": 0}}
    config, warnings = merge_config(TokendConfig(), bad, {})
    assert config.summarizer == SummarizerConfig()
    assert len(warnings) == 3 and all("invalid" in w for w in warnings)
    one = merge_config(TokendConfig(), {"summarizer": {"anthropic_model": "m"}}, {})[0]
    assert one.summarizer.models("anthropic") == ("m",)
