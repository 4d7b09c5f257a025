"""Found: imported `redacted_thinking` was stored under a key the renderer never read, so the
block vanished from every Anthropic assembly (and Anthropic then rejects the turn)."""

from __future__ import annotations

from datetime import UTC, datetime

from tokend.core.assembly.wire_formats import render_message
from tokend.core.transcripts.events import TranscriptMessage, parse_transcript
from tokend.core.types import Message, StoredPart


def test_an_imported_redacted_thinking_block_goes_back_to_anthropic_as_sent():
    record = {
        "type": "assistant",
        "uuid": "u1",
        "requestId": "r1",
        "message": {
            "id": "m1",
            "model": "claude-opus-4-6",
            "content": [
                {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
                {"type": "text", "text": "Done."},
            ],
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
    }
    events = parse_transcript([record])
    message = next(e for e in events if isinstance(e, TranscriptMessage))
    stored = Message(
        id="m",
        session_id="s",
        role="assistant",
        parts=tuple(StoredPart(f"p{i}", part) for i, part in enumerate(message.parts)),
        created_at=datetime.now(UTC),
    )
    wire = render_message(stored, "anthropic")
    assert wire[0]["content"][0] == {
        "type": "redacted_thinking",
        "data": "EmwKAhgBEgy3va3pzix/LafPsn4a",
    }
    assert all("thinking" not in str(m) for m in render_message(stored, "openai"))
