"""Codex rollout files as Codex writes them -> the events tokend imports."""

from __future__ import annotations

import json

from tokend.core.transcripts.codex_rollout import parse_rollout, rollout_origin
from tokend.core.transcripts.events import CompactionBoundary, ProviderCall, TranscriptMessage
from tokend.core.types import ReasoningPart, TextPart, ToolCallPart, ToolResultPart, Usage

T = "2025-10-01T10:00:00.000Z"


def line(kind: str, payload: dict) -> dict:
    return {"timestamp": T, "type": kind, "payload": payload}


def token_count(last: dict, total: dict, window: int = 272_000) -> dict:
    info = {"total_token_usage": total, "last_token_usage": last, "model_context_window": window}
    return line("event_msg", {"type": "token_count", "info": info, "rate_limits": None})


def usage(input_: int, cached: int, output: int, reasoning: int) -> dict:
    return {
        "input_tokens": input_,
        "cached_input_tokens": cached,
        "output_tokens": output,
        "reasoning_output_tokens": reasoning,
        "total_tokens": input_ + output,
    }


CALL_1 = usage(5_000, 0, 300, 200)
CALL_2 = usage(5_600, 4_992, 90, 40)
ROLLOUT = [
    line("session_meta", {"id": "0199a", "timestamp": T, "cwd": "/work/app", "cli_version": "0.46.0"}),
    line("turn_context", {"cwd": "/work/app", "model": "gpt-5-codex", "effort": "medium"}),
    line("response_item", {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions>"}]}),
    line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run the tests"}]}),
    line("event_msg", {"type": "user_message", "message": "run the tests", "kind": "plain"}),
    line("event_msg", {"type": "token_count", "info": None, "rate_limits": None}),
    line("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Running tests**"}], "content": None, "encrypted_content": "gAAA"}),
    line("response_item", {"type": "function_call", "name": "shell", "arguments": json.dumps({"command": ["pytest", "-q"]}), "call_id": "call_1"}),
    token_count(CALL_1, CALL_1),
    token_count(CALL_1, CALL_1),  # the same totals again: a rate-limit update, not a call
    line("response_item", {"type": "function_call_output", "call_id": "call_1", "output": json.dumps({"output": "3 passed", "metadata": {"exit_code": 0}})}),
    line("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "All 3 tests pass."}]}),
    line("event_msg", {"type": "agent_message", "message": "All 3 tests pass."}),
    token_count(CALL_2, usage(10_600, 4_992, 390, 240)),
]  # fmt: skip


def test_a_rollout_becomes_calls_with_their_usage_then_messages():
    events = parse_rollout(ROLLOUT)
    kinds = [type(e).__name__ + ":" + getattr(e, "role", "") for e in events]
    assert kinds == [
        "TranscriptMessage:system",
        "TranscriptMessage:user",
        "ProviderCall:",
        "TranscriptMessage:assistant",
        "TranscriptMessage:tool",
        "ProviderCall:",
        "TranscriptMessage:assistant",
    ]
    first_call, tool_call_message, result = events[2], events[3], events[4]
    assert isinstance(first_call, ProviderCall) and first_call.model == "gpt-5-codex"
    # Codex's input includes the cached tokens and its output the reasoning ones
    assert first_call.usage == Usage(5_000, 300, reasoning_tokens=200)
    assert isinstance(events[5], ProviderCall)
    assert events[5].usage == Usage(608, 90, reasoning_tokens=40, cache_read_tokens=4_992)
    assert events[5].usage.context_tokens == 5_600
    assert isinstance(tool_call_message, TranscriptMessage)
    reasoning, call = tool_call_message.parts
    assert isinstance(reasoning, ReasoningPart) and reasoning.text == "**Running tests**"
    assert call == ToolCallPart("call_1", "shell", {"command": ["pytest", "-q"]})
    assert isinstance(result, TranscriptMessage)
    assert isinstance(result.parts[0], ToolResultPart) and result.parts[0].name == "shell"
    assert events[-1].parts == (TextPart("All 3 tests pass."),)  # type: ignore[union-attr]


def test_uuids_name_lines_so_a_reread_resumes_at_the_same_message():
    events = parse_rollout(ROLLOUT)
    uuids = [e.uuid for e in events if isinstance(e, TranscriptMessage)]
    assert uuids == ["line:3", "line:4", "line:7", "line:11", "line:12"]
    assert parse_rollout(ROLLOUT + ROLLOUT[3:4])[: len(events)] == events


def test_a_response_without_its_usage_yet_waits_while_the_file_grows():
    written = ROLLOUT[:-3]  # the assistant's text is not written yet, nor its usage
    growing = parse_rollout(ROLLOUT[:-2], final=False)
    assert [e.role for e in growing if isinstance(e, TranscriptMessage)] == [
        "system",
        "user",
        "assistant",
        "tool",
    ]
    assert len(parse_rollout(written, final=False)) == len(growing)
    finished = parse_rollout(ROLLOUT[:-2], final=True)  # a file no longer written: no usage
    assert isinstance(finished[-1], TranscriptMessage) and finished[-1].role == "assistant"


def test_tool_outputs_written_before_the_usage_follow_the_calls_message():
    reordered = [*ROLLOUT[:8], ROLLOUT[10], ROLLOUT[8]]
    events = parse_rollout(reordered, final=False)
    assert [type(e).__name__ for e in events[-3:]] == [
        "ProviderCall",
        "TranscriptMessage",
        "TranscriptMessage",
    ]
    assert events[-1].role == "tool"  # type: ignore[union-attr]


def test_a_compaction_starts_a_window_with_codex_summary():
    compacted = [*ROLLOUT, line("compacted", {"message": "We ran the tests; all pass."})]
    events = parse_rollout(compacted)
    assert isinstance(events[-2], CompactionBoundary)
    summary = events[-1]
    assert isinstance(summary, TranscriptMessage) and summary.compact_summary
    assert summary.parts == (TextPart("We ran the tests; all pass."),)


def test_the_origin_is_codex_session_folder_model_and_window():
    origin = rollout_origin(ROLLOUT)
    assert (origin.session_id, origin.cwd) == ("0199a", "/work/app")
    assert (origin.model, origin.context_window) == ("gpt-5-codex", 272_000)
