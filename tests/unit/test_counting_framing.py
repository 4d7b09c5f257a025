"""Chat framing and tool-definition arithmetic (pure; the count function is a stand-in)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tokend.core.counting.framing import (
    ANTHROPIC_TOOL_PROMPT_AUTO,
    ANTHROPIC_TOOL_PROMPT_FORCED,
    REPLY_PRIMING,
    message_overhead,
    openai_tool_lines,
    reply_priming,
    tool_schemas_tokens,
)


def words(text: str) -> int:
    """A stand-in tokenizer: one token per whitespace- or colon-separated word."""
    return len(text.replace(":", " ").split())


WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather.",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City and country."},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["location"],
        },
    },
}


def test_message_framing_follows_the_cookbook() -> None:
    assert message_overhead("user", "openai") == 3
    assert message_overhead("user", "openai", has_name=True) == 4
    assert REPLY_PRIMING == 3
    assert reply_priming("openai") == 3 and reply_priming("anthropic") == 0


def test_openai_tool_cost_uses_the_measured_constants() -> None:
    # 7 per function + "get_weather:Get the current weather" (5 words, final "." dropped)
    # + 3 for properties + (3 + "location:string:City and country" = 5) + enum (-3 + 2 * (3 + 1))
    # + (3 + "unit:string:" = 2) + 12 at the end.
    assert tool_schemas_tokens([WEATHER], words, "openai") == 7 + 5 + 3 + 8 + 5 + 5 + 12


def test_openai_tool_lines_drop_the_final_period_of_descriptions() -> None:
    texts = [text for _, text in openai_tool_lines([WEATHER])]
    assert "get_weather:Get the current weather" in texts
    assert "location:string:City and country" in texts


def test_anthropic_tools_cost_their_json_plus_the_tool_prompt() -> None:
    tool = {"name": "get_weather", "description": "Weather.", "input_schema": {"type": "object"}}
    as_json = json.dumps([tool], separators=(",", ":"))
    assert (
        tool_schemas_tokens([tool], len, "anthropic") == len(as_json) + ANTHROPIC_TOOL_PROMPT_AUTO
    )
    assert tool_schemas_tokens([tool], len, "anthropic", tool_choice="any") == (
        len(as_json) + ANTHROPIC_TOOL_PROMPT_FORCED
    )


def test_no_tools_cost_nothing() -> None:
    assert tool_schemas_tokens([], words, "openai") == 0
    assert tool_schemas_tokens([], words, "anthropic") == 0


names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12)
tool_strategy = st.builds(
    lambda name, desc, props: {
        "type": "function",
        "function": {
            "name": name,
            "description": desc,
            "parameters": {
                "type": "object",
                "properties": {p: {"type": "string", "description": d} for p, d in props.items()},
            },
        },
    },
    names,
    st.text(max_size=60),
    st.dictionaries(names, st.text(max_size=30), max_size=5),
)


@given(st.lists(tool_strategy, max_size=4), tool_strategy, st.sampled_from(["openai", "anthropic"]))
def test_another_tool_always_costs_more(
    tools: list[dict[str, Any]], extra: dict[str, Any], provider: str
) -> None:
    assert tool_schemas_tokens(tools + [extra], words, provider) > tool_schemas_tokens(
        tools, words, provider
    )


def test_anthropic_and_unknown_providers_get_the_measured_larger_framing() -> None:
    assert message_overhead("user", "anthropic") > message_overhead("user", "openai")
    assert message_overhead("tool", None) == message_overhead("tool", "anthropic")


def test_claude_request_frames_are_ctoks() -> None:
    # ctok's published measurements: the frame of each family's one-message request.
    from ctok.main import _family, _model

    from tokend.core.counting.framing import CLAUDE_REQUEST_FRAMES, claude_frame_delta

    versions = {"claude-v3": "3.0", "claude-v4.7": "4.7", "claude-v4.8": "4.8"}
    assert {f: _model(_family(v)).message_overhead for f, v in versions.items()} == (
        CLAUDE_REQUEST_FRAMES
    )
    assert [claude_frame_delta(f) for f in versions] == [0, 4, -1]
    assert claude_frame_delta(None) == claude_frame_delta("o200k_base") == 0
    assert reply_priming("anthropic", "claude-v4.7") == 4 and reply_priming("openai", "x") == 3
