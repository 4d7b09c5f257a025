"""What a growing Claude Code transcript lets a follower import, on the real transcripts."""

from __future__ import annotations

import json

import pytest

from tests.conftest import BIG_SESSION, session_file
from tokend.core.transcript import ProviderCall, TranscriptMessage, parse_transcript
from tokend.core.transcript_tail import resume_after, settled_count


def _records(name: str) -> list[dict]:
    path = BIG_SESSION if name == "big" else session_file(name)
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _assistant_blocks(record: dict) -> tuple[str, int]:
    return record["message"]["id"], len(record["message"]["content"])


@pytest.mark.parametrize("name", ["short.jsonl", "tool_heavy.jsonl", "big"])
def test_a_settled_prefix_never_cuts_a_response(name):
    """Whatever the prefix written so far, the response the settled records end with has all
    its blocks: every assistant record of it in the whole file is inside the prefix."""
    records = _records(name)
    for written in range(len(records) + 1):
        settled = settled_count(records[:written])
        assert 0 <= settled <= written
        inside = {r["message"]["id"] for r in records[:settled] if r.get("type") == "assistant"}
        later = {r["message"]["id"] for r in records[settled:] if r.get("type") == "assistant"}
        assert not inside & later, f"a response is split at record {settled} of {written}"


def test_the_whole_file_settles_once_the_turn_ends():
    """The big session ends with stop-hook records: nothing is left waiting."""
    records = _records("big")
    assert records[-1]["type"] == "system"
    assert settled_count(records) == len(records)


def test_a_reply_still_streaming_waits_with_the_tool_results_after_it():
    records = _records("short.jsonl")
    first_reply = next(i for i, r in enumerate(records) if r.get("type") == "assistant")
    # the prompt, then the reply's blocks written so far and the tool results between them
    streaming = [r for r in records[: first_reply + 4]]
    assert settled_count(streaming) == first_reply


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
