"""RenderCache.json_text: the JSON text of a wire message it rendered is kept and given back
while that rendering stands; a re-rendered message (its parts changed), a copy the assembly
made, or a message the cache never rendered is written afresh. The oracle: json.dumps of the
wire message in hand."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from tokend.core.render_cache import RenderCache
from tokend.core.types import Message, StoredPart, TextPart, ToolCallPart

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _message(text: str) -> Message:
    parts = (StoredPart("p1", TextPart(text), 3), StoredPart("p2", ToolCallPart("c1", "Bash", {})))
    return Message("m1", "s1", "assistant", parts, AT)


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_json_text_follows_the_rendering(fmt):
    cache = RenderCache()
    (wire,) = cache.render_all([_message("naïve ✓ 😀")], fmt)
    text = cache.json_text(wire)
    assert text == json.dumps(wire, allow_nan=False)
    assert cache.json_text(wire) is text  # kept, not written again
    (again,) = cache.render_all([_message("naïve ✓ 😀")], fmt)
    assert again is wire and cache.json_text(again) is text
    (changed,) = cache.render_all([_message("pruned")], fmt)  # same id, other parts
    assert changed is not wire
    assert cache.json_text(changed) == json.dumps(changed) != text
    copy = {**changed, "extra": 1}  # e.g. a block marked with cache_control
    assert cache.json_text(copy) == json.dumps(copy)
    cache.clear()
    assert cache.json_text(changed) == json.dumps(changed)


def test_json_text_refuses_nan():
    cache = RenderCache()
    message = Message(
        "m1", "s1", "assistant", (StoredPart("p", ToolCallPart("c", "T", {"x": float("nan")})),), AT
    )
    (wire,) = cache.render_all([message], "anthropic")  # tool_use input stays an object
    with pytest.raises(ValueError):
        cache.json_text(wire)
