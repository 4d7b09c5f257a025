"""Context assembly: order, token chunks, cache breakpoints, the limit and what to drop."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.assembly.assemble import CHUNKS, AssemblyRequest, assemble
from tokend.core.assembly.context_inputs import CountedText, ExampleTurn, FileText
from tokend.core.assembly.render_cache import RenderCache
from tokend.core.assembly.wire_formats import WIRE_FORMATS
from tokend.core.counting.render import PRUNED_TOOL_RESULT
from tokend.core.errors import ContextOverflow, InvalidParams
from tokend.core.types import StoredPart, TextPart, ToolCallPart, ToolResultPart

from .test_assembly_wire_formats import PRUNED_AT, histories, msg, shape_problems


def words(text: str) -> int:
    """A stand-in counter: one token per whitespace-separated word."""
    return len(text.split())


def conversation() -> list[Any]:
    return [
        msg("u1", "user", TextPart("first question")),
        msg("a1", "assistant", TextPart("first answer")),
        msg("u2", "user", TextPart("CURRENT please edit")),
        msg("a2", "assistant", ToolCallPart("c9", "edit", {"path": "x.py"})),
        msg("t2", "tool", ToolResultPart("c9", "edit", "CURRENT-RESULT applied")),
    ]


def full_request(fmt: Any = "openai", **changes: Any) -> AssemblyRequest:
    request = AssemblyRequest(
        format=fmt,
        limit_tokens=100_000,
        history=conversation(),
        system="SYSTEM you are helpful",
        tools=[{"name": "edit"}, {"name": "read"}],
        tools_tokens=120,
        examples=[ExampleTurn("user", "EXAMPLE q"), ExampleTurn("assistant", "EXAMPLE a")],
        read_only_files=[FileText("READONLY.md", "docs")],
        repo_map=CountedText("REPOMAP x.py: f()"),
        chat_files=[FileText("CHATFILE.py", "x = 1")],
        reminder=CountedText("REMINDER reply with diffs"),
        count=words,
    )
    return dataclasses.replace(request, **changes)


def positions(messages: Any, markers: list[str]) -> list[int]:
    text = json.dumps(messages)
    return [text.index(marker) for marker in markers]


@pytest.mark.parametrize("fmt", WIRE_FORMATS)
def test_context_is_laid_out_stable_prefix_first(fmt):
    assembly = assemble(full_request(fmt))
    order = ["EXAMPLE q", "READONLY.md", "REPOMAP", "first question", "CHATFILE.py"]
    order += ["CURRENT please", "CURRENT-RESULT", "REMINDER"]
    found = positions(assembly.messages, order)
    assert found == sorted(found)
    assert [name for name, _ in assembly.chunks] == list(CHUNKS)
    assert shape_problems(list(assembly.messages), fmt) == []
    if fmt == "openai":
        assert assembly.messages[0] == {"role": "system", "content": "SYSTEM you are helpful"}
    else:
        assert assembly.system is not None and assembly.system[0]["text"].startswith("SYSTEM")


def test_chunks_count_each_piece_once_and_add_up():
    assembly = assemble(full_request())
    chunks = dict(assembly.chunks)
    assert chunks["tools"] == 120
    assert chunks["system"] == 4
    assert chunks["current"] == 30  # user text, call and result: 10 cached tokens each
    assert chunks["history"] == 20
    assert chunks["reminder"] == 4
    assert sum(chunks.values()) == assembly.total_tokens


def test_pruned_results_count_as_the_placeholder():
    pruned = StoredPart("r", ToolResultPart("c1", "read", "big " * 900), 900, PRUNED_AT)
    history = [
        msg("u", "user", TextPart("a")),
        msg("a", "assistant", ToolCallPart("c1", "read", {}), pruned),
        msg("u2", "user", TextPart("b")),
    ]
    assembly = assemble(AssemblyRequest("openai", 10_000, history=history, count=words))
    assert dict(assembly.chunks)["history"] == 10 + 10 + words(PRUNED_TOOL_RESULT)
    assert PRUNED_TOOL_RESULT in json.dumps(assembly.messages)


def test_reminder_is_dropped_when_it_alone_would_overflow():
    fits = assemble(full_request()).total_tokens
    assembly = assemble(full_request(limit_tokens=fits - 1))
    assert dict(assembly.chunks)["reminder"] == 0
    assert "REMINDER" not in json.dumps(assembly.messages)
    assert any("reminder" in w for w in assembly.warnings)
    assert assembly.total_tokens <= fits - 1


def test_overflow_names_what_to_drop_with_token_figures():
    old_turn = msg("old", "user", StoredPart("p", TextPart("long chat"), 120_400))
    request = full_request(
        history=[old_turn, msg("now", "user", TextPart("now"))],
        chat_files=[FileText("x.py", "...", 8_200)],
        limit_tokens=50_000,
    )
    with pytest.raises(ContextOverflow) as raised:
        assemble(request)
    data = raised.value.data
    assert data is not None and data["limit"] == 50_000 and data["total"] > 50_000
    assert data["suggestions"][0] == "compact the session (history: 120,400 tokens)"
    assert "drop chat file x.py (8,200 tokens)" in data["suggestions"]


def test_overflow_says_when_the_current_message_alone_cannot_fit():
    current = msg("now", "user", StoredPart("p", TextPart("paste"), 70_000))
    with pytest.raises(ContextOverflow) as raised:
        assemble(full_request(history=[current], limit_tokens=60_000))
    assert "current message alone does not fit" in raised.value.message
    assert "70,000" in raised.value.message
    assert raised.value.data["suggestions"][0] == "shorten the current message (70,000 tokens)"


def test_missing_counts_without_a_counter_are_refused():
    uncounted = msg("u", "user", StoredPart("p", TextPart("hello"), None))
    with pytest.raises(InvalidParams):
        assemble(AssemblyRequest("openai", 1000, history=[uncounted], pruned_result_tokens=7))
    with pytest.raises(InvalidParams):
        assemble(AssemblyRequest("openai", 1000, system="hi", pruned_result_tokens=7))
    with pytest.raises(InvalidParams, match="unknown format 'gemini'"):
        assemble(AssemblyRequest("gemini", 1000, pruned_result_tokens=7))  # type: ignore[arg-type]


def test_anthropic_cache_breakpoints_sit_on_the_four_stable_ends():
    assembly = assemble(full_request("anthropic"))
    text = json.dumps([assembly.tools, assembly.system, assembly.messages])
    assert text.count('"cache_control"') == 4
    assert "cache_control" in assembly.tools[-1] and "cache_control" not in assembly.tools[0]
    assert [b.chunk for b in assembly.cache_breakpoints] == [
        "tools",
        "system",
        "repoMap",
        "history",
    ]
    history_end = assembly.cache_breakpoints[-1].message_index
    assert history_end is not None
    marked = [b for b in assembly.messages[history_end]["content"] if "cache_control" in b]
    assert marked == [
        {"type": "text", "text": "first answer", "cache_control": {"type": "ephemeral"}}
    ]


def test_cached_rendering_gives_the_same_request_and_follows_pruning():
    cache = RenderCache()
    first = assemble(full_request("anthropic", render_cache=cache))
    second = assemble(full_request("anthropic", render_cache=cache))
    assert first == second  # markers did not leak into the cache
    assert len(cache) == 5
    history = conversation()
    pruned_parts = (dataclasses.replace(history[4].parts[0], compacted_at=PRUNED_AT),)
    history[4] = dataclasses.replace(history[4], parts=pruned_parts)
    third = assemble(full_request("anthropic", render_cache=cache, history=history))
    assert PRUNED_TOOL_RESULT in json.dumps(third.messages)
    assert "CURRENT-RESULT" not in json.dumps(third.messages)


# --- properties ---------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    history=histories(),
    fmt=st.sampled_from(WIRE_FORMATS),
    slack=st.integers(-3_000, 3_000),
    reminder_tokens=st.integers(0, 2_000),
    file_tokens=st.lists(st.integers(0, 5_000), max_size=3),
    overhead=st.integers(0, 5),
)
def test_assembly_fits_adds_up_and_is_valid_or_overflows(
    history, fmt, slack, reminder_tokens, file_tokens, overhead
):
    request = AssemblyRequest(
        format=fmt,
        limit_tokens=0,
        history=history,
        system="sys",
        system_tokens=50,
        tools=[{"name": "read"}],
        tools_tokens=200,
        repo_map=CountedText("map", 300),
        chat_files=[FileText(f"f{i}.py", "x", t) for i, t in enumerate(file_tokens)],
        reminder=CountedText("remember", reminder_tokens),
        message_overhead=lambda m: overhead,
        pruned_result_tokens=8,
    )
    unlimited = assemble(dataclasses.replace(request, limit_tokens=10**12))
    reminder_cost = dict(unlimited.chunks)["reminder"]  # its tokens + message overhead
    limit = max(0, unlimited.total_tokens - reminder_cost + slack)  # around the edge
    request = dataclasses.replace(request, limit_tokens=limit)
    without_reminder = dataclasses.replace(request, reminder=None)
    try:
        assembly = assemble(request)
    except ContextOverflow as overflow:
        assert overflow.data is not None and overflow.data["total"] > limit
        with pytest.raises(ContextOverflow):  # the reminder was not what overflowed
            assemble(without_reminder)
        return
    assert sum(tokens for _, tokens in assembly.chunks) == assembly.total_tokens
    assert assembly.total_tokens <= limit
    reminder_sent = dict(assembly.chunks)["reminder"] > 0
    if not reminder_sent and reminder_cost:
        assert assemble(without_reminder).total_tokens + reminder_cost > limit
    assert shape_problems(list(assembly.messages), fmt) == []
    if fmt == "anthropic":
        blob = json.dumps([assembly.tools, assembly.system, assembly.messages])
        assert blob.count('"cache_control"') <= 4
