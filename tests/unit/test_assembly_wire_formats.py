"""Stored messages as OpenAI / Anthropic requests: the shapes a provider accepts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.assembly.wire_formats import (
    WIRE_FORMATS,
    WireFormat,
    WireMessage,
    render_message,
    split_system_blocks,
)
from tokend.core.assembly.wire_join import CONVERSATION_START, UNANSWERED_TOOL_CALL, Joiner
from tokend.core.counting.render import PRUNED_TOOL_RESULT, SUMMARY_HEADER
from tokend.core.types import (
    CompactionPart,
    FilePart,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    StoredPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

T0 = datetime(2025, 1, 1, tzinfo=UTC)
PRUNED_AT = datetime(2025, 1, 2, tzinfo=UTC)


def msg(mid: str, role: Any, *parts: Part | StoredPart, summary: bool = False) -> Message:
    stored = tuple(
        p if isinstance(p, StoredPart) else StoredPart(f"{mid}.{i}", p, tokens=10)
        for i, p in enumerate(parts)
    )
    return Message(mid, "s1", role, stored, T0, summary=summary)


def join(messages: list[Message], fmt: WireFormat) -> tuple[list[dict[str, Any]], list[str]]:
    """The conversation as assembly builds it (Anthropic's summaries go to the system field,
    which this helper leaves out: see join_with_system)."""
    return join_with_system(messages, fmt)[1:]


def join_with_system(
    messages: list[Message], fmt: WireFormat
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    joiner = Joiner(fmt)
    system: list[dict[str, Any]] = []
    for message in messages:
        blocks, wires = split_system_blocks(render_message(message, fmt), fmt)
        system.extend(blocks)
        for wire in wires:
            joiner.add(wire)
    return system, joiner.finish(), joiner.warnings


# --- a strategy for conversations as agents store them (used by test_assembly_assemble too) ---------


@st.composite
def histories(draw: st.DrawFn, max_turns: int = 6) -> list[Message]:
    """Turns of user text, assistant steps with reasoning/text/tool calls; results inline
    (OpenCode), in "tool" messages (Claude Code), missing (interrupted) or orphaned."""
    messages: list[Message] = []
    ids = iter(range(10**6))

    def part(p: Part, compacted: bool = False) -> StoredPart:
        tokens = draw(st.integers(0, 3000))
        return StoredPart(f"p{next(ids)}", p, tokens, PRUNED_AT if compacted else None)

    def add(role: Any, parts: list[StoredPart], summary: bool = False) -> None:
        messages.append(Message(f"m{next(ids)}", "s1", role, tuple(parts), T0, summary=summary))

    if draw(st.booleans()):
        add("assistant", [part(CompactionPart("summary of earlier work"))], summary=True)
    for _ in range(draw(st.integers(0, max_turns))):
        extra = draw(st.sampled_from(["", "image", "file"]))
        user = [part(TextPart(draw(st.sampled_from(["fix it", "go on", " "]))))]
        if extra == "image":
            user.append(part(ImagePart("image/png", "iVBORw0KGgo=")))
        elif extra == "file":
            user.append(part(FilePart("src/app.py")))
        add("user", user)
        for _ in range(draw(st.integers(0, 3))):
            said: list[StoredPart] = []
            thinking = draw(st.sampled_from(["none", "plain", "signed", "redacted"]))
            if thinking != "none":
                meta = {
                    "plain": None,
                    "signed": {"anthropic": {"signature": "sig"}},
                    "redacted": {"anthropic": {"redactedData": "xyz"}},
                }[thinking]
                said.append(part(ReasoningPart("let me think", meta)))
            if draw(st.booleans()):
                said.append(part(TextPart("I will look.")))
            results: list[StoredPart] = []
            for _ in range(draw(st.integers(0, 2))):
                call_id = f"call{next(ids)}"
                mode = draw(st.sampled_from(["inline", "tool_message", "missing", "orphan"]))
                if mode != "orphan":
                    said.append(part(ToolCallPart(call_id, "read", {"path": "a.py"})))
                if mode != "missing":
                    is_error = draw(st.booleans())
                    result = ToolResultPart(call_id, "read", "contents", is_error)
                    results.append(part(result, compacted=draw(st.booleans())))
            inline = draw(st.booleans())
            add("assistant", said + (results if inline else []))
            if results and not inline:
                add("tool", results)
    return messages


# --- what a provider would reject ---------------------------------------------------------


def shape_problems(messages: Sequence[WireMessage], fmt: WireFormat) -> list[str]:
    """What a provider would reject in `messages` (empty: the shape is valid)."""
    return _anthropic_problems(messages) if fmt == "anthropic" else _openai_problems(messages)


def _anthropic_problems(messages: Sequence[WireMessage]) -> list[str]:
    problems: list[str] = []
    if messages and messages[0]["role"] != "user":
        problems.append("the first message is not from the user")
    previous_uses: set[str] = set()
    for i, message in enumerate(messages):
        role, content = message["role"], message["content"]
        if i and role == messages[i - 1]["role"]:
            problems.append(f"messages {i - 1} and {i} have the same role")
        if not content:
            problems.append(f"message {i} is empty")
        kinds = [b["type"] for b in content]
        answered = {b["tool_use_id"] for b in content if b["type"] == "tool_result"}
        if role == "user" and kinds[: len(answered)] != ["tool_result"] * len(answered):
            problems.append(f"message {i}: tool results do not come first")
        if answered - previous_uses:
            problems.append(f"message {i}: tool results without a preceding tool use")
        if role == "user" and previous_uses - answered:
            problems.append(f"message {i}: tool uses of message {i - 1} left unanswered")
        bad = (
            {"tool_use", "thinking", "redacted_thinking"}
            if role == "user"
            else {"tool_result", "image"}
        )
        if bad & set(kinds):
            problems.append(f"message {i}: {role} message holds {sorted(bad & set(kinds))}")
        if any(b["type"] == "text" and not b["text"].strip() for b in content):
            problems.append(f"message {i}: blank text block")
        previous_uses = {b["id"] for b in content if b["type"] == "tool_use"}
    if previous_uses:
        problems.append("the last message has unanswered tool uses")
    return problems


def _openai_problems(messages: Sequence[WireMessage]) -> list[str]:
    problems: list[str] = []
    awaiting: set[str] = set()
    for i, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            if message["tool_call_id"] not in awaiting:
                problems.append(f"message {i}: tool result answers no open tool call")
            awaiting.discard(message["tool_call_id"])
            continue
        if awaiting:
            problems.append(f"message {i}: tool calls {sorted(awaiting)} left unanswered")
        awaiting = set()
        if role not in ("system", "user", "assistant"):
            problems.append(f"message {i}: unknown role {role!r}")
        if not message.get("content") and not message.get("tool_calls"):
            problems.append(f"message {i} is empty")
        for call in message.get("tool_calls") or ():
            awaiting.add(call["id"])
            try:
                json.loads(call["function"]["arguments"])
            except (ValueError, TypeError):
                problems.append(f"message {i}: tool call arguments are not JSON")
    if awaiting:
        problems.append(f"tool calls {sorted(awaiting)} left unanswered at the end")
    return problems


# --- examples -----------------------------------------------------------------------------


def test_openai_assistant_step_with_tool_call_and_result():
    history = [
        msg("u", "user", TextPart("read a.py")),
        msg(
            "a",
            "assistant",
            ReasoningPart("hidden thoughts"),
            TextPart("Reading."),
            ToolCallPart("c1", "read", {"path": "a.py"}),
            ToolResultPart("c1", "read", "print(1)"),
            TextPart("It prints 1."),
        ),
    ]
    messages, warnings = join(history, "openai")
    assert messages == [
        {"role": "user", "content": "read a.py"},
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path":"a.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "print(1)"},
        {"role": "assistant", "content": "It prints 1."},
    ]
    assert warnings == []
    assert "hidden thoughts" not in json.dumps(messages)


def test_openai_user_image_is_a_data_url_and_file_a_text_mention():
    (wire,) = render_message(
        msg(
            "u", "user", TextPart("what is this"), ImagePart("image/png", "AAAA"), FilePart("x.py")
        ),
        "openai",
    )
    assert wire["content"] == [
        {"type": "text", "text": "what is this"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "text", "text": "[file: x.py]"},
    ]


def test_anthropic_thinking_tool_use_and_error_result_in_a_user_message():
    history = [
        msg("u", "user", TextPart("run it")),
        msg(
            "a",
            "assistant",
            ReasoningPart("plan", {"anthropic": {"signature": "SIG"}}),
            ReasoningPart("", {"anthropic": {"redactedData": "ENC"}}),
            ToolCallPart("c1", "bash", {"cmd": "make"}),
        ),
        msg("t", "tool", ToolResultPart("c1", "bash", "make: error", is_error=True)),
        msg("u2", "user", TextPart("why?")),
    ]
    messages, warnings = join(history, "anthropic")
    assert messages == [
        {"role": "user", "content": [{"type": "text", "text": "run it"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "plan", "signature": "SIG"},
                {"type": "redacted_thinking", "data": "ENC"},
                {"type": "tool_use", "id": "c1", "name": "bash", "input": {"cmd": "make"}},
            ],
        },
        {
            "role": "user",  # the tool message and the next user message are merged
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "c1",
                    "content": "make: error",
                    "is_error": True,
                },
                {"type": "text", "text": "why?"},
            ],
        },
    ]
    assert warnings == []


def test_pruned_results_and_summaries_render_as_the_user_and_model_will_see_them():
    pruned = StoredPart("r", ToolResultPart("c1", "read", "x" * 5000), 1200, PRUNED_AT)
    history = [
        msg("s", "assistant", CompactionPart("We fixed the parser."), summary=True),
        msg("a", "assistant", ToolCallPart("c1", "read", {}), pruned),
    ]
    for fmt in WIRE_FORMATS:
        system, messages, _ = join_with_system(history, fmt)
        text = json.dumps(messages)
        assert PRUNED_TOOL_RESULT in text and "xxxx" not in text
        # The summary is never the user's: a system message (OpenAI) or block (Anthropic),
        # marked as tokend's.
        said = messages[0] if fmt == "openai" else system[0]
        assert fmt == "anthropic" or said["role"] == "system"
        summary_text = said["content"] if fmt == "openai" else said["text"]
        assert summary_text.startswith(SUMMARY_HEADER) and "We fixed the parser." in summary_text
        assert all(
            "We fixed the parser." not in json.dumps(m) for m in messages if m["role"] == "user"
        )


def test_missing_and_orphan_results_are_repaired_with_warnings():
    history = [
        msg("u", "user", TextPart("go")),
        msg("a", "assistant", ToolCallPart("lost", "bash", {"cmd": "sleep 99"})),
        msg("t", "tool", ToolResultPart("ghost", "read", "stray output")),
        msg("u2", "user", TextPart("you were interrupted")),
    ]
    for fmt in WIRE_FORMATS:
        messages, warnings = join(history, fmt)
        text = json.dumps(messages)
        assert UNANSWERED_TOOL_CALL in text and "stray output" in text
        assert any("lost" in w for w in warnings) and any("ghost" in w for w in warnings)
        assert shape_problems(messages, fmt) == []


def test_anthropic_conversation_starting_with_the_assistant_gets_a_user_stub():
    messages, warnings = join([msg("a", "assistant", TextPart("Hello"))], "anthropic")
    assert messages[0] == {
        "role": "user",
        "content": [{"type": "text", "text": CONVERSATION_START}],
    }
    assert warnings


def test_rendering_does_not_mutate_for_memoization():
    history = [msg("u", "user", TextPart("a")), msg("u2", "user", TextPart("b"))]
    rendered = [render_message(m, "anthropic") for m in history]
    before = json.dumps(rendered)
    joiner = Joiner("anthropic")
    for wires in rendered:
        for wire in wires:
            joiner.add(wire)
    assert len(joiner.finish()) == 1
    assert json.dumps(rendered) == before


def test_shape_checker_catches_what_providers_reject():
    bad_anthropic = [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "x", "name": "n", "input": {}}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "  "}]},
    ]
    problems = shape_problems(bad_anthropic, "anthropic")
    assert any("first message" in p for p in problems)
    assert any("same role" in p for p in problems)
    assert any("blank" in p for p in problems)
    bad_openai = [{"role": "tool", "tool_call_id": "x", "content": "y"}]
    assert shape_problems(bad_openai, "openai")


# --- properties ---------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(histories(), st.sampled_from(WIRE_FORMATS))
def test_any_stored_history_becomes_a_valid_request(history, fmt):
    messages, _ = join(history, fmt)
    assert shape_problems(messages, fmt) == []
    if fmt == "anthropic":
        uses = [b["id"] for m in messages for b in m["content"] if b["type"] == "tool_use"]
        results = [
            b["tool_use_id"] for m in messages for b in m["content"] if b["type"] == "tool_result"
        ]
        assert sorted(uses) == sorted(results)
