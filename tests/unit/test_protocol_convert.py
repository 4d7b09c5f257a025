"""Wire -> domain conversion: every malformed part or usage gets a message naming the field."""

from __future__ import annotations

import pytest

from tokend.core.errors import InvalidParams
from tokend.core.types import ImagePart, ReasoningPart, ToolCallPart, ToolResultPart
from tokend.lsp import wire
from tokend.lsp.convert import from_wire_part, from_wire_role, from_wire_usage
from tokend.lsp.wire.message import UsageParams
from tokend.lsp.wire.session import SessionCreateParams


def test_each_part_kind_converts():
    call = from_wire_part({"type": "toolCall", "callId": "c1", "name": "bash", "input": [1, 2]}, 0)
    assert call == ToolCallPart("c1", "bash", [1, 2])
    result = from_wire_part(
        {"type": "toolResult", "callId": "c1", "name": "bash", "output": "ok", "isError": True}, 1
    )
    assert result == ToolResultPart("c1", "bash", "ok", True)
    thinking = from_wire_part(
        {"type": "reasoning", "text": "hm", "providerMetadata": {"signature": "s"}}, 2
    )
    assert thinking == ReasoningPart("hm", {"signature": "s"})
    image = from_wire_part({"type": "image", "mediaType": "image/png", "dataBase64": "aGVsbG8="}, 3)
    assert image == ImagePart("image/png", "aGVsbG8=")


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ("text", "must be an object"),
        ({"type": "video"}, "message.parts[4].type"),
        ({"type": "text"}, "'text'"),
        ({"type": "text", "text": 3}, "message.parts[4].text must be str"),
        ({"type": "toolCall", "callId": "c", "name": "n"}, "'input'"),
        (
            {"type": "toolResult", "callId": "c", "name": "n", "output": "o", "isError": "no"},
            "isError",
        ),
        ({"type": "image", "mediaType": "image/png", "dataBase64": "%%%"}, "not valid base64"),
        ({"type": "reasoning", "text": "t", "providerMetadata": []}, "providerMetadata"),
    ],
)
def test_a_malformed_part_names_what_is_wrong(raw, named):
    with pytest.raises(InvalidParams) as error:
        from_wire_part(raw, 4)
    assert named in error.value.message


def test_roles_and_usage_are_checked():
    with pytest.raises(InvalidParams, match="robot"):
        from_wire_role("robot")
    with pytest.raises(InvalidParams, match="negative"):
        from_wire_usage(UsageParams(input_tokens=5, output_tokens=-1))
    with pytest.raises(InvalidParams, match="reasoningTokens"):
        from_wire_usage(UsageParams(input_tokens=5, output_tokens=1, reasoning_tokens=2))
    usage = from_wire_usage(UsageParams(3, 41, 0, 11515, 13835))
    assert usage is not None and usage.context_tokens == 3 + 11515 + 13835


def test_params_errors_name_the_field():
    with pytest.raises(InvalidParams) as error:
        wire.from_wire(SessionCreateParams, {"model": "gpt-4o", "contextWindow": "big"})
    assert "contextWindow" in error.value.message
    with pytest.raises(InvalidParams, match="model"):
        wire.from_wire(SessionCreateParams, {})
    with pytest.raises(InvalidParams, match="must be an object"):
        wire.from_wire(wire.SessionIdParams, [1])
