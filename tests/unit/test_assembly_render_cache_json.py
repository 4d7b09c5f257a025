"""RenderCache.json_text: the JSON text of a wire message it rendered is kept and given back
while that rendering stands; a re-rendered message (its parts changed), a copy the assembly
made, or a message the cache never rendered is written afresh. The oracle: json.dumps of the
wire message in hand."""

from __future__ import annotations

import gc
import json
import random
from datetime import UTC, datetime

import pytest

from tokend.core.assembly.render_cache import RenderCache
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


def _messages(count: int, start: int = 0) -> list[Message]:
    return [
        Message(f"m{i}", "s1", "user", (StoredPart(f"p{i}", TextPart(f"turn {i} ✓"), 3),), AT)
        for i in range(start, start + count)
    ]


def test_join_json_reuses_the_last_join_as_far_as_the_same_messages_go():
    cache = RenderCache()
    history = _messages(5)
    wires = list(cache.render_all(history, "openai"))
    first = cache.join_json(wires)
    assert first == json.dumps(wires)
    # The same list again: the text kept, not a copy of 2.6 MB at 10,000 messages (main wrote
    # it again).
    assert cache.join_json(list(wires)) is first
    longer = list(cache.render_all([*history, *_messages(2, 5)], "openai"))
    assert longer[:5] == wires and cache.join_json(longer) == json.dumps(longer)
    marked = [*longer[:-1], {**longer[-1], "cache_control": {"type": "ephemeral"}}]
    assert cache.join_json(marked) == json.dumps(marked)  # a copy at the end
    changed = list(cache.render_all([_message("other"), *history[1:]], "openai"))
    assert cache.join_json(changed) == json.dumps(changed)  # the first one differs
    assert cache.join_json([]) == "[]" and cache.join_json(wires[:2]) == json.dumps(wires[:2])
    middle = [*longer[:3], {**longer[3]}, *longer[4:]]  # a copy inside (a marked block)
    assert cache.join_json(longer) == json.dumps(longer)
    assert cache.join_json(middle) == json.dumps(middle)
    assert cache.join_json(longer[:1]) == json.dumps(longer[:1])
    assert cache.join_json(longer) == json.dumps(longer)


def test_join_json_matches_json_dumps_whatever_the_lists():
    rng = random.Random(22)
    cache = RenderCache()
    pool = list(cache.render_all(_messages(30), "openai"))
    for _ in range(300):
        wires = pool[: rng.randrange(len(pool) + 1)]
        for _ in range(rng.randrange(3)):  # copies, inserted or replacing, as assembly makes
            at = rng.randrange(len(wires) + 1)
            copy = {"role": "system", "content": f"copy {rng.random()}"}
            wires = [*wires[:at], copy, *wires[at + rng.randrange(2) :]]
        assert cache.join_json(wires) == json.dumps(wires)


def test_join_json_of_no_messages_is_an_empty_array():
    """An assembly whose every message went elsewhere (an Anthropic handoff's summary goes to the
    system field) joins no wire message: its text is `[]`, on a new cache and after a clear, as
    json.dumps writes it (the merged main wrote nothing: `"messages": ,` and a client's parse
    failed, tests/e2e/test_compaction_record.py's handoff)."""
    cache = RenderCache()
    assert cache.join_json([]) == json.dumps([]) == "[]"
    cache.clear()
    assert cache.join_json([]) == "[]"


class _CountedEncoder(json.JSONEncoder):
    built = 0

    def __init__(self, *args: object, **kwargs: object) -> None:
        _CountedEncoder.built += 1
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]


def test_a_cold_join_builds_no_json_encoder_per_message(monkeypatch):
    """The first reply of a long session writes every message's text: json.dumps built a
    JSONEncoder (and its C encoder) for each one, 10,000 at 10,000 messages, about 30 ms before a
    byte was written (main 1db3331: 1,000 for these 1,000). Now none: one encoder made once
    writes them. The text is still json.dumps's (the oracle, written after the count)."""
    cache = RenderCache()
    wires = list(cache.render_all(_messages(1_000), "openai"))
    monkeypatch.setattr(json, "JSONEncoder", _CountedEncoder)
    joined = cache.join_json(wires)
    assert _CountedEncoder.built == 0
    monkeypatch.undo()
    assert joined == json.dumps(wires)


def test_a_cold_render_and_join_keep_two_tracked_objects_a_message():
    """A restarted daemon's first assembly renders and writes every message of the session:
    the cache kept, for each, its entry and its wire messages' tuple, and besides them a
    (wire, text) pair for every wire message, made when rendered and made again when written
    (main c84769f: 3,000 objects the collector tracks kept for these 1,000 messages, and a
    call of the cache's own per message and per wire message). Now the wire messages and
    their texts are kept in two dicts by id: 2,000. Counted with the collector off (nothing
    collected meanwhile); the text is still json.dumps's."""
    history = _messages(1_000)
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects())
        cache = RenderCache()
        wires = list(cache.render_all(history, "openai"))
        joined = cache.join_json(wires)
        kept = len(gc.get_objects()) - before
    finally:
        gc.enable()
    assert joined == json.dumps(wires)
    # the cache, its dicts and the lists joined: a handful beyond the two a message
    assert 2_000 <= kept < 2_050, kept
    assert [cache.json_text(w) for w in wires[:3]] == [json.dumps(w) for w in wires[:3]]
