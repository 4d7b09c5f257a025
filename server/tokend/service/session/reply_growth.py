"""A reply imported while it streamed, grown since, applied to its session through its owner like
any change (core.session.changes.GrowReply): the follower imports an agent's reply as soon as it sees
its first record, and the reply's later blocks and newest usage as they come."""

from __future__ import annotations

from collections.abc import Sequence

from tokend.core.session.changes import GrowReply
from tokend.core.types import Part, StoredPart, Usage
from tokend.core.usage.pricing import call_cost_usd
from tokend.service.session.ports import SessionService
from tokend.service.session.sessions import new_id


async def grow_reply(
    service: SessionService, session_id: str, message_id: str, parts: Sequence[Part], usage: Usage
) -> bool:
    """Append `parts` to the message `message_id` (a provider call's reply), give its call
    `usage` (priced and counted as an append prices and counts the whole message) and tell
    the session's listeners. False when nothing changed, or the message left the window."""
    state = service.sessions.state(session_id)
    if not state.data.log.filled:  # a lazily loaded session's bodies, read beside the loop
        await service.workers.run(state.data.log.read)
    data = state.data
    index = data.log.index_of(message_id)
    message = None if index is None else data.messages[index]
    if message is None or message.usage is None or (message.usage == usage and not parts):
        return False
    whole = [*(sp.part for sp in message.parts), *parts]
    counts = await service.workers.run(
        lambda: service.models.counter(data.model).count_parts("assistant", whole)
    )
    added = tuple(
        StoredPart(id=new_id(), part=p, tokens=t)
        for p, t in zip(parts, counts.tokens[len(message.parts) :], strict=True)
    )
    priced = service.prep.priced_model(data, message.model)  # the model append priced it with
    change = GrowReply(message_id, added, counts, usage, call_cost_usd(priced, usage, whole))
    applied = await state.apply_async(change, None, service.workers.submit)
    service.listeners.announce(change, applied)
    return True
