"""render_message of the usual message, a user's or an assistant's text, makes few calls: the
first `context/assemble` after a restart renders every message of the history (10,000 in the
scale bench), so each call there is paid 10,000 times. Counted with sys.setprofile (the Python
functions entered, generators included), not timed. Oracle for the wire messages: what the
provider's API takes, written out in the test."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from tokend.core.assembly.wire_formats import render_message
from tokend.core.types import Message, StoredPart, TextPart, ToolResultPart

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _entered(call: Callable[[], Any]) -> tuple[Any, int]:
    """(what `call` gave, how many Python functions and generators it entered)."""
    entered = [0]

    def seen(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            entered[0] += 1

    sys.setprofile(seen)
    try:
        result = call()
    finally:
        sys.setprofile(None)
    return result, entered[0] - 1  # not `call` itself


def _text(role: str, text: str) -> Message:
    return Message("m1", "s1", role, (StoredPart("p1", TextPart(text), 5),), AT)  # type: ignore[arg-type]


EXPECTED = {
    ("user", "openai"): ({"role": "user", "content": "hi"},),
    ("assistant", "openai"): ({"role": "assistant", "content": "hi"},),
    ("user", "anthropic"): ({"role": "user", "content": [{"type": "text", "text": "hi"}]},),
    ("assistant", "anthropic"): (
        {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
    ),
}


@pytest.mark.parametrize("role", ["user", "assistant"])
@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_a_text_message_renders_in_a_few_calls(role: str, fmt: str) -> None:
    """Main 1db3331 entered 7 to 16 functions (a user's text: 11 for openai, 16 for anthropic,
    an empty tool-results pass and empty generators among them; an assistant's 7 and 9); now
    at most 6."""
    message = _text(role, "hi")
    wires, entered = _entered(lambda: render_message(message, fmt))  # type: ignore[arg-type]
    assert wires == EXPECTED[role, fmt]
    assert entered <= 6, entered


def test_a_tool_result_still_leads_a_users_text() -> None:
    parts = (
        StoredPart("p1", TextPart("and then?"), 5),
        StoredPart("p2", ToolResultPart("c1", "Bash", "ok"), 3),
    )
    message = Message("m1", "s1", "user", parts, AT)
    assert render_message(message, "openai") == (
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "user", "content": "and then?"},
    )
    assert render_message(message, "anthropic") == (  # the Joiner merges the two
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "ok", "is_error": False}
            ],
        },
        {"role": "user", "content": [{"type": "text", "text": "and then?"}]},
    )


def _reference(role: str, text: str, fmt: str) -> tuple[dict[str, Any], ...]:
    """What the providers take for a message of one text (written out here): OpenAI a message
    of the text (a system message for a system's; the user's for a tool's), none when it is
    empty; Anthropic a text block of the user's or the assistant's, none when it is blank."""
    if fmt == "openai":
        said = {"user": "user", "tool": "user", "system": "system"}.get(role, "assistant")
        return ({"role": said, "content": text},) if text else ()
    said = "assistant" if role == "assistant" else "user"
    return ({"role": said, "content": [{"type": "text", "text": text}]},) if text.strip() else ()


@pytest.mark.parametrize("role", ["user", "assistant", "tool", "system"])
@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_a_message_of_one_text_renders_in_three_calls(role: str, fmt: str) -> None:
    """A restarted daemon's first `context/assemble` renders every message of the history;
    a message of one text part is built straight from its text: three functions entered, its
    speaker's and its wire message's (main c84769f: 6 for "hi" in both formats: the provider
    compaction looked for, the wire message emitted, its content made), the same messages."""
    for text in ("hi", "", "  \n", 'naïve ✓ "quoted"'):
        message = _text(role, text)
        wires, entered = _entered(lambda m=message: render_message(m, fmt))  # type: ignore[arg-type]
        assert wires == _reference(role, text, fmt), (role, text)
        assert entered <= 3, (role, text, entered)
