"""A stored message that changed after its append, in the change's transaction: a reply that
grew (core.session.changes.GrowReply) gets its new parts after its own and takes the new usage, cost
and count; a message counted exactly (core.session.changes.CountsUpgraded) takes its parts' counts and
its count."""

from __future__ import annotations

from sqlalchemy import bindparam, update
from sqlalchemy.orm import Session

from tokend.adapters.store import rows
from tokend.adapters.store.codec import usage_to_json
from tokend.adapters.store.models import MessageRow, PartRow, table_of
from tokend.core.commit import SessionCommit
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


def rewrite_message(session: Session, session_id: str, commit: SessionCommit) -> None:
    """The message `commit` grew or recounted, if any."""
    if commit.grown is not None:
        grow_message(session, session_id, *commit.grown)
    if commit.recounted is not None:
        recount_message(session, session_id, *commit.recounted)


def recount_message(session: Session, session_id: str, message: Message, tokens: int) -> None:
    """`message` with its parts' counts as they are now; `tokens` its count as sent."""
    session.execute(
        update(MessageRow)
        .where(MessageRow.id == message.id, MessageRow.session_id == session_id)
        .values(tokens=tokens)
        .execution_options(synchronize_session=False)
    )
    table = table_of(PartRow)
    statement = (
        update(table).where(table.c.id == bindparam("part_id")).values(tokens=bindparam("n"))
    )
    session.execute(statement, [{"part_id": sp.id, "n": sp.tokens} for sp in message.parts])
