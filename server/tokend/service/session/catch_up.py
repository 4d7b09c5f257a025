"""Catching up with changes other daemons made to a loaded session.

When the versions between ours and the stored one were all made by plain appends (one message
each, no compaction boundary, nothing pruned or rewound), the new messages are read and played
through `evolve` as loading plays them: the cost is the new messages, not the session. Anything
else (a prune, a summary, a provider's compaction, a rewind, a measured-context change) is a
whole reload, which is always right.
"""

from __future__ import annotations

from collections.abc import Callable

from tokend.core.ports import SessionMessages
from tokend.core.session.changes import AppendMessage
from tokend.core.session.data import SessionData
from tokend.core.session.evolve import evolve
from tokend.core.types import Message
from tokend.service.counting.counter import ModelCounter
from tokend.service.session.loading import with_row


def catch_up(
    messages: SessionMessages,
    data: SessionData,
    counter: ModelCounter,
    reload: Callable[[], SessionData],
) -> SessionData:
    """The session as stored now, from `data` (ours, possibly behind)."""
    info, fresh = messages.load_since(data.id, data.version)
    if info.version == data.version:
        return data
    if not _only_appends(fresh, info.version - data.version) or info.model != data.info.model:
        return reload()
    for message in fresh:
        counts = counter.stored_counts(message.role, message.parts)
        data = evolve(data, AppendMessage(message, counts, learn=False)).data
    return with_row(data, info)


def _only_appends(fresh: list[Message], versions: int) -> bool:
    return (
        versions > 0
        and len(fresh) == versions
        and all(
            not m.summary
            and m.compacted_at is None
            and all(sp.compacted_at is None and sp.part.kind != "compaction" for sp in m.parts)
            for m in fresh
        )
    )
