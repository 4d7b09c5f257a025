"""A stored reply that grew (core.changes.GrowReply): its new parts are inserted after its own,
and its row takes the new usage, cost and count, in the change's transaction."""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.orm import Session

from tokend.adapters.store import rows
from tokend.adapters.store.codec import usage_to_json
from tokend.adapters.store.models import MessageRow
from tokend.core.types import Message


def grow_message(
    session: Session, session_id: str, message: Message, first_new: int, tokens: int
) -> None:
    """`message` as it is now; its parts from `first_new` on are not stored yet."""
    session.execute(
        update(MessageRow)
        .where(MessageRow.id == message.id, MessageRow.session_id == session_id)
        .values(usage=usage_to_json(message.usage), cost_usd=message.cost_usd, tokens=tokens)
        .execution_options(synchronize_session=False)
    )
    new = rows.part_rows(message.id, message.parts)[first_new:]
    if new:
        session.execute(rows.INSERT_PARTS, new)
