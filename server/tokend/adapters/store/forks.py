"""A fork's copy of its parent's messages (SqlStore.fork_session): the messages up to a point,
their parts, and the tool outputs they refer to, under new ids in the child session."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from tokend.adapters.store.models import ToolOutputRow, table_of
from tokend.adapters.store.rows import (
    INSERT_MESSAGE,
    INSERT_PARTS,
    chunks,
    load_from,
    message_columns,
    new_id,
    part_rows,
)
from tokend.core.errors import InvalidParams
from tokend.core.types import Message, ToolResultPart


def copy_messages(
    session: Session, parent_id: str, child_id: str, through_message_id: str | None
) -> int:
    """Copy the parent's messages up to `through_message_id` into `child_id` (see
    SqlStore.fork_session); returns how many."""
    every = load_from(session, parent_id)
    copied = _copied(every, parent_id, through_message_id)
    new_ids = {m.id: new_id() for m in copied}
    seq_of = {m.id: i for i, m in enumerate(every, 1)}
    refs: set[str] = set()
    for message in copied:
        _insert_copy(session, message, child_id, seq_of[message.id], new_ids)
        refs.update(
            sp.part.ref
            for sp in message.parts
            if isinstance(sp.part, ToolResultPart) and sp.part.ref is not None
        )
    _copy_tool_outputs(session, parent_id, child_id, refs)
    return len(copied)


def _copied(every: list[Message], parent_id: str, through_message_id: str | None) -> list[Message]:
    """The parent's messages the child gets: all, or those up to `through_message_id` (and the
    live summary, when that message is live)."""
    if through_message_id is None:
        return every
    at = next((i for i, m in enumerate(every) if m.id == through_message_id), None)
    if at is None:
        raise InvalidParams(
            f"atMessageId {through_message_id} is not a message of session {parent_id}: "
            "session/messages lists them"
        )
    copied = every[: at + 1]
    if every[at].compacted_at is None:  # live: the child keeps the live summary too
        copied += [m for m in every[at + 1 :] if m.summary and m.compacted_at is None]
    return copied


def _insert_copy(
    session: Session, message: Message, child_id: str, seq: int, new_ids: dict[str, str]
) -> None:
    """One message and its parts, under new ids in the child; a compaction mark is kept when
    what it names was copied too (or it is a rewind's)."""
    marked = message.compacted_by
    keep_mark = marked == "rewind" or (marked is not None and marked in new_ids)
    session.execute(
        INSERT_MESSAGE,
        {
            "id": new_ids[message.id],
            "session_id": child_id,
            "seq": seq,
            **message_columns(message),
            "compacted_at": message.compacted_at if keep_mark else None,
            "compacted_by": new_ids.get(marked, marked) if keep_mark and marked else None,
        },
    )
    parts = [replace(sp, id=new_id()) for sp in message.parts]
    if parts:
        session.execute(INSERT_PARTS, part_rows(new_ids[message.id], parts))


def _copy_tool_outputs(
    session: Session, parent_id: str, child_id: str, refs: Iterable[str]
) -> None:
    """The parent's kept tool outputs named by `refs`, as the child's."""
    table = table_of(ToolOutputRow)
    for chunk in chunks(sorted(refs)):
        rows = session.execute(
            select(table.c.ref, table.c.text, table.c.chars, table.c.created_at).where(
                table.c.session_id == parent_id, table.c.ref.in_(chunk)
            )
        ).all()
        if rows:
            session.execute(
                insert(table),
                [
                    {"session_id": child_id, "ref": r, "text": t, "chars": c, "created_at": at}
                    for r, t, c, at in rows
                ],
            )
