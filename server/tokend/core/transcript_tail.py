"""Following a transcript while its agent writes it: what can be imported now, and where an
earlier import stopped. Pure: records in, decisions out (core.transcript parses them).

Claude Code writes one provider response as several `assistant` records, one per content block,
each when the block is complete, and may write tool results between them. tokend makes one
message of a response, so it imports a response once it has ended. A response has ended when a
record after its last block shows the model stopped:

- an `assistant` record of another response (the next call was sent after this one ended);
- a user prompt: a `user` record that holds no tool result;
- a `system` record (`compact_boundary`, `stop_hook_summary`, `turn_duration`, ...).

Until then its records, and everything after its first record, wait (`settled_count`). The last
reply of a turn may have nothing after it until the next prompt, so a follower also imports the
whole file once it has been quiet for a while; a block written after that is not lost: it is
imported as a continuation of the message (`resume_after`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokend.core.transcript import TranscriptEvent, TranscriptMessage


def settled_count(records: Sequence[Mapping[str, Any]]) -> int:
    """How many leading records hold only ended responses: all of them, or those before the
    first record of the last response when nothing after it shows that it ended."""
    open_from: int | None = None  # index of the first record of the response still open
    open_key: tuple[str, str | None] | None = None
    for index, record in enumerate(records):
        if record.get("isSidechain") is True:
            continue  # a sub-agent's traffic: another context window
        kind = record.get("type")
        if kind == "assistant":
            key = _response_key(record)
            if key != open_key:
                open_key, open_from = key, index
            elif open_from is None:  # a block of a response thought ended: it is open again
                open_from = _first_index(records, key)
        elif open_from is not None and _ends_response(record):
            open_from = None
    return len(records) if open_from is None else open_from


def _first_index(records: Sequence[Mapping[str, Any]], key: tuple[str, str | None]) -> int:
    return next(
        i
        for i, r in enumerate(records)
        if r.get("type") == "assistant" and r.get("isSidechain") is not True
        if _response_key(r) == key
    )


def _response_key(record: Mapping[str, Any]) -> tuple[str, str | None]:
    """(message.id, requestId): what the records of one provider response share."""
    message = record.get("message") or {}
    message_id = message.get("id") if isinstance(message, Mapping) else None
    return (str(message_id or record.get("uuid")), record.get("requestId"))


def _ends_response(record: Mapping[str, Any]) -> bool:
    kind = record.get("type")
    if kind == "system":
        return True
    if kind != "user":
        return False  # progress, file-history-snapshot, queue-operation: bookkeeping
    message = record.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, list):
        return True
    return not any(isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content)


@dataclass(frozen=True)
class Resume:
    """What to append after an earlier import: first the blocks its last message gained since
    (None when it gained none), then the events that came after it."""

    continuation: TranscriptMessage | None
    events: Sequence[TranscriptEvent]


def resume_after(
    events: Sequence[TranscriptEvent],
    last_uuid: str | None,
    last_parts: int | None,
    reply: tuple[str | None, int | None] | None = None,
) -> Resume | None:
    """The events after the message `last_uuid` (all of them when None). `reply` is the last
    assistant message imported and how many parts it had then (None: `last_uuid` with
    `last_parts`; parts None: all it has now): a response imported before it ended may have
    gained blocks since, even when tool results were imported after it, and those blocks come
    first. None when no message has `last_uuid` any more: the transcript was rewritten."""
    if not last_uuid:
        return Resume(None, events)
    reply_uuid, reply_parts = reply if reply is not None else (last_uuid, last_parts)
    grown: TranscriptMessage | None = None
    for index, event in enumerate(events):
        if not isinstance(event, TranscriptMessage):
            continue
        if reply_uuid and event.uuid == reply_uuid and reply_parts is not None:
            if len(event.parts) > reply_parts:
                grown = TranscriptMessage(
                    event.role, event.parts[reply_parts:], event.uuid, at=event.at
                )
        if event.uuid == last_uuid:
            return Resume(grown, events[index + 1 :])
    return None
