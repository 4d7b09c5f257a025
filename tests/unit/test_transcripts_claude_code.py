"""Claude Code transcript parsing on the real recorded sessions (counts checked by hand)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import session_file
from tokend.core.transcripts.events import (
    CompactionBoundary,
    ProviderCall,
    TranscriptMessage,
    parse_transcript,
    provider_calls,
)
from tokend.core.types import ReasoningPart, TextPart, ToolCallPart, ToolResultPart, Usage


def _session(name: str) -> list[str]:
    """The lines of a shared recorded session (a missing one FAILS the test, never skips)."""
    return session_file(name).read_text(encoding="utf-8").splitlines()


def _messages(events: list) -> list[TranscriptMessage]:
    return [event for event in events if isinstance(event, TranscriptMessage)]


def test_short_session_merges_one_response_written_as_five_records() -> None:
    events = parse_transcript(_session("short.jsonl"))

    kinds = [
        event.role if isinstance(event, TranscriptMessage) else type(event).__name__
        for event in events
    ]
    assert kinds == ["user", "ProviderCall", "assistant", "tool", "tool", "user"]
    call = events[1]
    assert isinstance(call, ProviderCall)
    # usage.cache_creation says all 13,835 written tokens have a 1-hour lifetime.
    assert call.usage == Usage(
        input_tokens=3,
        output_tokens=13,
        cache_read_tokens=11515,
        cache_write_tokens=13835,
        cache_write_1h_tokens=13835,
    )
    assert call.usage.context_tokens == 25353
    assert call.model == "claude-opus-4-6"
    assistant = events[2]
    assert [part.kind for part in assistant.parts] == [
        "text",
        "reasoning",
        "text",
        "toolCall",
        "toolCall",
    ]
    thinking = assistant.parts[1]
    assert isinstance(thinking, ReasoningPart)
    assert thinking.text.startswith("The user is having trouble starting their Phoenix server.")
    assert thinking.provider_metadata is not None and thinking.provider_metadata["signature"]
    bash = assistant.parts[3]
    assert bash == ToolCallPart(
        "toolu_0116Hyi5v8ut7Ffb7d8qV1Sc",
        "Bash",
        {"command": "mix phx.server 2>&1 | head -80", "timeout": 30000},
    )


def test_short_session_tool_results_carry_tool_name_and_error_flag() -> None:
    events = parse_transcript(_session("short.jsonl"))
    results = [part for m in _messages(events) if m.role == "tool" for part in m.parts]

    assert [(r.call_id, r.name, r.is_error) for r in results] == [
        ("toolu_0116Hyi5v8ut7Ffb7d8qV1Sc", "Bash", True),
        ("toolu_01FdQ8qTyVyZjE3Kw4dguQGx", "Glob", True),
    ]
    assert all(isinstance(r, ToolResultPart) and "rejected" in r.output for r in results)


def test_tool_heavy_session_counts_and_last_usage_wins() -> None:
    events = parse_transcript(_session("tool_heavy.jsonl"))
    calls = provider_calls(events)
    messages = _messages(events)

    assert len(calls) == 4
    assert [m.role for m in messages].count("user") == 7
    assert [m.role for m in messages].count("assistant") == 4
    assert [m.role for m in messages].count("tool") == 6
    # The last response was written as two records with output 25 then 173: the last one counts.
    assert calls[-1].usage == Usage(
        input_tokens=47,
        output_tokens=173,
        cache_read_tokens=26504,
        cache_write_tokens=1115,
        cache_write_1h_tokens=1115,
    )
    # ...and its two tool_use blocks, split by a tool result record, form one assistant message.
    last_assistant = [m for m in messages if m.role == "assistant"][-1]
    assert [part.kind for part in last_assistant.parts] == ["toolCall", "toolCall"]
    assert [m.meta for m in messages].count(True) == 1  # the local-command caveat is kept


def test_big_session_has_152_calls_and_one_compaction() -> None:
    events = parse_transcript(_session("258c7280-ae70-4798-800f-63464d01a85d.jsonl"))

    boundaries = [event for event in events if isinstance(event, CompactionBoundary)]
    assert [(b.pre_tokens, b.trigger) for b in boundaries] == [(167094, "auto")]
    assert boundaries[0].at is not None and boundaries[0].at.isoformat().startswith(
        "2026-02-11T21:18"
    )
    assert len(provider_calls(events)) == 152
    after = events[events.index(boundaries[0]) + 1]
    assert isinstance(after, TranscriptMessage) and after.compact_summary


def test_sidechains_bookkeeping_and_blank_lines_are_skipped() -> None:
    base = {"parentUuid": None, "sessionId": "s", "uuid": "u1"}
    lines = [
        json.dumps({**base, "type": "user", "message": {"role": "user", "content": "hi"}}),
        "",
        json.dumps({"type": "progress", "data": {}}),
        json.dumps(
            {
                **base,
                "type": "user",
                "isSidechain": True,
                "message": {"role": "user", "content": "sub-agent prompt"},
            }
        ),
        json.dumps({"type": "queue-operation", "operation": "enqueue", "content": "later"}),
    ]

    events = parse_transcript(lines)

    assert events == [TranscriptMessage(role="user", parts=(TextPart("hi"),), uuid="u1")]


def test_tool_result_given_as_text_blocks_is_joined() -> None:
    record = {
        "type": "user",
        "message": {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                }
            ],
        },
    }

    (message,) = parse_transcript([record])

    assert message.role == "tool"
    assert message.parts == (ToolResultPart(call_id="t1", name="", output="a\nb"),)


def test_malformed_line_names_its_line_number() -> None:
    with pytest.raises(ValueError, match="line 2"):
        parse_transcript(['{"type": "progress"}', "{not json"])


def _assistant_record(usage: dict[str, object]) -> dict[str, object]:
    message = {"id": "msg_1", "role": "assistant", "model": "claude-opus-4-6", "usage": usage}
    return {"type": "assistant", "requestId": "req_1", "uuid": "a1", "message": message}


@pytest.mark.parametrize(
    ("cache_creation", "written_1h"),
    [
        ({"ephemeral_5m_input_tokens": 300, "ephemeral_1h_input_tokens": 700}, 700),
        ({"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 0}, 0),
        (None, 0),  # older clients and other providers: no split reported
        ({"ephemeral_1h_input_tokens": 5000}, 1000),  # never more than the total written
    ],
)
def test_one_hour_cache_writes_are_the_1h_share_of_the_cache_writes(
    cache_creation: dict[str, int] | None, written_1h: int
) -> None:
    usage: dict[str, object] = {
        "input_tokens": 5,
        "output_tokens": 9,
        "cache_read_input_tokens": 2000,
        "cache_creation_input_tokens": 1000,
    }
    if cache_creation is not None:
        usage["cache_creation"] = cache_creation

    (call,) = provider_calls(parse_transcript([_assistant_record(usage)]))

    assert call.usage.cache_write_tokens == 1000
    assert call.usage.cache_write_1h_tokens == written_1h
    assert call.usage.context_tokens == 5 + 2000 + 1000
