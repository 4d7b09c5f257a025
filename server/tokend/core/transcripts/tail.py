"""Following a transcript while its agent writes it: where an earlier import stopped, and what
came since. Pure: records in, decisions out (core.transcripts.events parses them).

Claude Code writes one provider response as several `assistant` records, one per content block,
each when the block is complete (the usage of the last one is final: output_tokens grows while
it streams), and may write tool results between them. A follower imports a response as soon as
it sees its first record: the blocks written later are appended as a continuation of the
message, and the call's usage is corrected from the response's newest record (`resume_after`
finds both; service.usage_corrections applies the correction).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tokend.core.transcripts.events import ProviderCall, TranscriptEvent, TranscriptMessage


@dataclass(frozen=True)
class Resume:
    """What to append after an earlier import: first the blocks its last message gained since
    (None when it gained none), then the events that came after it. `call` is the provider
    call of the last reply imported as the transcript has it now (its usage grows while the
    reply streams), None when that reply is not found."""

    continuation: TranscriptMessage | None
    events: Sequence[TranscriptEvent]
    call: ProviderCall | None = None


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
    call: ProviderCall | None = None
    for index, event in enumerate(events):
        if not isinstance(event, TranscriptMessage):
            continue
        if reply_uuid and event.uuid == reply_uuid:
            before = events[index - 1] if index else None
            call = before if isinstance(before, ProviderCall) else None
            if reply_parts is not None and len(event.parts) > reply_parts:
                grown = TranscriptMessage(
                    event.role, event.parts[reply_parts:], event.uuid, at=event.at
                )
        if event.uuid == last_uuid:
            return Resume(grown, events[index + 1 :], call)
    return None
