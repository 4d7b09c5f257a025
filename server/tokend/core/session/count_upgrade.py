"""A big message appended with its estimate gets its exact count (core.session.changes.CountsUpgraded):
the message's parts and its count take the exact figures. When the message is after the last
provider call, what was added since moves by the difference; before it, the provider's figure
already holds it and the gauge stays. A message that left the window (compacted, rewound) or
whose results were pruned meanwhile is left as it is: no new version."""

from __future__ import annotations

from dataclasses import replace

from tokend.core.session.changes import CountsUpgraded, GrowReply
from tokend.core.session.data import SessionData
from tokend.core.session.reply_growth import grown


def edited(data: SessionData, change: GrowReply | CountsUpgraded) -> SessionData:
    """A message of the window changed after its append: grown (core.session.reply_growth) or
    counted exactly."""
    if isinstance(change, GrowReply):
        return grown(data, change)
    return upgraded(data, change)


def upgraded(data: SessionData, change: CountsUpgraded) -> SessionData:
    """`data` after `change` (the message is no longer pending either way)."""
    pending = data.pending_exact - {change.message_id}
    index = data.log.index_of(change.message_id)
    old = data.messages[index] if index is not None else None
    if (
        index is None
        or old is None
        or len(old.parts) != len(change.tokens)
        or any(sp.compacted_at is not None for sp in old.parts)
    ):
        return replace(data, pending_exact=pending)
    parts = tuple(replace(sp, tokens=t) for sp, t in zip(old.parts, change.tokens, strict=True))
    message = replace(old, parts=parts)
    delta = change.total - data.message_tokens[old.id]
    anchor = data.anchor
    added = data.added
    # Added since the last call: its message is not at or after this one (or there is none).
    if anchor is None or data.log.index_of(anchor.call.message_id, start=index) is None:
        added = replace(added, tokens=added.tokens + delta)
    return replace(
        data,
        log=data.log.replaced({index: (message, change.total)}),
        added=added,
        pending_exact=pending,
        version=data.version + 1,
    )
