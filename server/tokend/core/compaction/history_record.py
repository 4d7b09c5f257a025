"""The record a compaction draws what must survive from: the session's whole stored history.

A summary stands for messages the store still holds (compaction and prunes keep the
originals). So the user's words and the artifact index are drawn from every stored message up
to the end of the summarized head, across every earlier window: before a foreign boundary (a
client's own compaction, e.g. Claude Code's compact_boundary imported from a transcript, or a
provider's compaction block), before tokend's own earlier summaries, before prunes. Never from
a summary's text: a foreign summary is kept as what it is (the agent's or provider's words,
`Record.foreign`), and tokend's own digest is merged only where the messages it stands for are
not in this session's store (a handoff child's first message). Rewound messages are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from tokend.core.compaction.digest import Digest, digest_from_json
from tokend.core.compaction.summary import KEEP_FOREIGN, digest_of, merge
from tokend.core.types import CompactionPart, Message

REWIND = "rewind"


@dataclass(frozen=True, slots=True)
class Record:
    """What the head stands for, oldest first."""

    messages: tuple[Message, ...]  # the original messages (no summaries, nothing rewound)
    digests: tuple[dict[str, object], ...]  # tokend digests whose originals are not stored
    foreign: tuple[str, ...]  # the texts of foreign summaries (clients', providers')
    earlier: int  # how many of `messages` were already out of the live context


def record_of(history: Sequence[Message], head: Sequence[Message]) -> Record:
    """The record of `head` (the messages a summary will replace) in `history` (every stored
    message of the session, oldest first): everything stored up to the head's last message,
    and any head message the store does not hold yet."""
    if not head:
        return Record((), (), (), 0)
    position = {m.id: i for i, m in enumerate(history)}
    ends = [position[m.id] for m in head if m.id in position]
    end = max(ends) + 1 if ends else 0
    stored = [m for m in history[:end] if m.compacted_by != REWIND]
    pending = [m for m in head if m.id not in position]
    covered = {m.compacted_by for m in history if m.compacted_by not in (None, REWIND)}
    live = {m.id for m in head}
    messages: list[Message] = []
    digests: list[dict[str, object]] = []
    foreign: list[str] = []
    earlier = 0
    for message in (*stored, *pending):
        summary = _summary_part(message)
        if message.summary and summary is not None and summary.digest is not None:
            if message.id not in covered:  # its originals are not in this store
                digests.append(summary.digest)
            continue
        if message.summary:
            if summary is not None and summary.summary.strip():
                foreign.append(summary.summary)
            continue
        provider = next(
            (
                sp.part
                for sp in message.parts
                if isinstance(sp.part, CompactionPart) and sp.part.provider is not None
            ),
            None,
        )
        if provider is not None and provider.summary.strip():
            foreign.append(provider.summary)
        messages.append(message)
        earlier += message.id not in live
    return Record(tuple(messages), tuple(digests), tuple(foreign), earlier)


def _summary_part(message: Message) -> CompactionPart | None:
    return next((sp.part for sp in message.parts if isinstance(sp.part, CompactionPart)), None)


def record_digest(record: Record) -> Digest:
    """The digest of `record`: the digests of messages not stored first, then what the stored
    originals say; the foreign summaries ride along as texts, never as the record."""
    previous: Digest | None = None
    for stored in record.digests:
        previous = merge(previous, digest_from_json(stored))
    digest = digest_of(record.messages, previous)
    return replace(digest, foreign=(*digest.foreign, *record.foreign)[-KEEP_FOREIGN:])
