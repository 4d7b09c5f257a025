"""What a growing Claude Code transcript lets a follower import, on the real transcripts."""

from __future__ import annotations

import json

from tests.conftest import BIG_SESSION, session_file
from tokend.core.transcripts.events import ProviderCall, TranscriptMessage, parse_transcript
from tokend.core.transcripts.tail import resume_after


def _records(name: str) -> list[dict]:
    path = BIG_SESSION if name == "big" else session_file(name)
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _assistant_blocks(record: dict) -> tuple[str, int]:
    return record["message"]["id"], len(record["message"]["content"])


def test_resuming_gives_the_blocks_a_message_gained_then_what_followed():
    records = _records("short.jsonl")
    events = parse_transcript(records)
    reply = next(e for e in events if isinstance(e, TranscriptMessage) and e.role == "assistant")
    assert len(reply.parts) > 2
    resume = resume_after(events, reply.uuid, 2)
    assert resume is not None and resume.continuation is not None
    assert resume.continuation.parts == reply.parts[2:]
    assert resume.events == events[events.index(reply) + 1 :]
    whole = resume_after(events, reply.uuid, None)
    assert whole is not None and whole.continuation is None


def test_a_rewritten_transcript_is_not_resumed():
    events = parse_transcript(_records("short.jsonl"))
    assert resume_after(events, "no-such-uuid", None) is None
    fresh = resume_after(events, None, None)
    assert fresh is not None and list(fresh.events) == events
    assert any(isinstance(e, ProviderCall) for e in fresh.events)
