"""Queries and row <-> domain conversions behind SqlStore (module functions on an ORM Session)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import CursorResult, bindparam, case, func, insert, select, update
from sqlalchemy.orm import Session
from sqlalchemy.sql import Executable
from ulid import ULID

from tokend.adapters.store import blobs
from tokend.adapters.store.codec import part_to_json, usage_to_json
from tokend.adapters.store.dialect import insert_for
from tokend.adapters.store.message_read import read_messages
from tokend.adapters.store.models import (
    Base,
    MessageRow,
    PartRow,
    SessionRow,
    TokenCacheRow,
    ToolOutputRow,
    UtcDateTime,
    table_of,
)
from tokend.core.errors import ChangedElsewhere, SessionNotFound
from tokend.core.types import Message, StoredMessage, StoredPart

# A store's read or write transaction (SqlStore's), as its role objects are handed it.
Transaction = Callable[[], AbstractContextManager[Session]]


class ReadsAndWrites:
    """A role of a store's that both reads and writes, on the store's transactions."""

    def __init__(self, reading: Transaction, writing: Transaction) -> None:
        self._reading = reading
        self._writing = writing


IN_CHUNK = 500  # ids per IN (...) list: well under every database's bound-parameter limit

# Statements of the append path, built once (building them per call costs more than running them).
_sessions, _messages = table_of(SessionRow), table_of(MessageRow)
_stamp = bindparam("stamp", type_=UtcDateTime())
# Moves updated_at forward to :stamp (never back) on a live session; rowcount 0: none such.
# The row's gauge state goes with a message written (a change's commit writes it again).
BUMP_LIVE_SESSION = (
    update(_sessions)
    .where(_sessions.c.id == bindparam("session_id"), _sessions.c.deleted_at.is_(None))
    .values(
        updated_at=case((_sessions.c.updated_at < _stamp, _stamp), else_=_sessions.c.updated_at),
        gauge_state=None,
    )
)
LAST_SEQ = select(func.max(_messages.c.seq)).where(_messages.c.session_id == bindparam("sid"))
INSERT_MESSAGE = insert(_messages)
# Compare-and-set of a session's version; rowcount 0: another process moved it (or no session).
MOVE_VERSION = (
    update(_sessions)
    .where(_sessions.c.id == bindparam("session_id"), _sessions.c.version == bindparam("expected"))
    .values(version=bindparam("new"))
)
STORED_MESSAGE = select(_messages.c.session_id, _messages.c.version, _messages.c.tokens).where(
    _messages.c.id == bindparam("message_id")
)
INSERT_PARTS = insert(table_of(PartRow))


def move_version(session: Session, session_id: str, expected: int, new: int) -> None:
    """Move the session's stored version from `expected` to `new` (locking its row until the
    transaction ends); ChangedElsewhere, with the stored version, when it is not `expected`."""
    moved = cast(
        CursorResult[Any],
        session.execute(MOVE_VERSION, {"session_id": session_id, "expected": expected, "new": new}),
    )
    if moved.rowcount == 1:
        return
    current = session.scalar(select(_sessions.c.version).where(_sessions.c.id == session_id))
    if current is None:
        raise SessionNotFound(f"session {session_id} not found")
    raise changed_elsewhere(session_id, current, expected)


def changed_elsewhere(session_id: str, current: int, expected: int) -> ChangedElsewhere:
    """The error of a compare-and-set that found the session at `current`, not `expected`."""
    return ChangedElsewhere(
        f"session {session_id} is at version {current}, not {expected}: it was changed by "
        "another daemon sharing the database; fetch budget/snapshot and retry",
        {"currentVersion": int(current)},
    )


def mark_parts(session: Session, part_ids: Sequence[str], at: datetime) -> None:
    """Set compacted_at on the parts not marked yet (the first prune time stays)."""
    for chunk in chunks(part_ids):
        session.execute(
            update(PartRow)
            .where(PartRow.id.in_(chunk), PartRow.compacted_at.is_(None))
            .values(compacted_at=at)
            .execution_options(synchronize_session=False)
        )


def stored_message(session: Session, message_id: str) -> StoredMessage | None:
    """Where a stored message is and what its append answered; None when not stored."""
    row = session.execute(STORED_MESSAGE, {"message_id": message_id}).first()
    if row is None:
        return None
    return StoredMessage(str(row[0]), row[1], row[2])


def upsert(
    session: Session, model: type[Base], values: list[dict[str, Any]], update_columns: Sequence[str]
) -> Executable:
    """INSERT ... ON CONFLICT (primary key) DO UPDATE of `update_columns`."""
    table = table_of(model)
    statement = insert_for(session, table).values(values)
    result: Executable = statement.on_conflict_do_update(
        index_elements=[c.name for c in table.primary_key.columns],
        set_={name: statement.excluded[name] for name in update_columns},
    )
    return result


def new_id() -> str:
    """A fresh ULID string (26 chars, sortable by creation time)."""
    return str(ULID())


def chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), IN_CHUNK):
        yield items[start : start + IN_CHUNK]


def live(session: Session, session_id: str, *, lock: bool = False) -> SessionRow | None:
    row = session.get(SessionRow, session_id, with_for_update=lock)
    return None if row is None or row.deleted_at is not None else row


def require_live(
    session: Session, session_id: str, *, lock: bool = False, deleted_too: bool = False
) -> None:
    """SessionNotFound unless the session exists and (unless `deleted_too`) is not deleted."""
    if deleted_too:
        if session.get(SessionRow, session_id, with_for_update=lock) is None:
            raise SessionNotFound(f"session {session_id} not found")
        return
    if live(session, session_id, lock=lock) is None:
        raise SessionNotFound(f"session {session_id} not found")


def existing_counts(session: Session, keys: Sequence[str]) -> dict[str, int]:
    """token_cache rows for `keys` (key -> tokens); absent keys are left out."""
    existing: dict[str, int] = {}
    for chunk in chunks(keys):
        query = select(TokenCacheRow.key, TokenCacheRow.tokens).where(TokenCacheRow.key.in_(chunk))
        existing.update(session.execute(query).all())
    return existing


def message_columns(message: Message) -> dict[str, Any]:
    """The message row's columns its Message holds as they are (INSERT_MESSAGE adds the ids,
    the seq and the bookkeeping of the insert at hand)."""
    return {
        "role": message.role,
        "model": message.model,
        "usage": usage_to_json(message.usage),
        "cost_usd": message.cost_usd,
        "summary": message.summary,
        "created_at": message.created_at,
        "completed_at": message.completed_at,
    }


def part_rows(message_id: str, parts: Sequence[StoredPart]) -> list[dict[str, Any]]:
    return [
        {
            "id": stored.id or new_id(),
            "message_id": message_id,
            "idx": idx,
            "kind": stored.part.kind,
            "data": part_to_json(stored.part),
            "tokens": stored.tokens,
            "compacted_at": stored.compacted_at,
        }
        for idx, stored in enumerate(parts)
    ]


def load_from(
    session: Session,
    session_id: str,
    *,
    from_seq: int = 0,
    live: bool = False,
    after_version: int | None = None,
) -> list[Message]:
    """Messages with seq >= from_seq, oldest first, with their parts: one query.
    With `live`, only the live context: the messages no summary covers and no rewind took out,
    the live summary (there is at most one) first. With `after_version`, only messages whose
    append made a later version."""
    in_range: tuple[Any, ...] = (MessageRow.session_id == session_id, MessageRow.seq >= from_seq)
    if after_version is not None:
        in_range = (*in_range, MessageRow.version > after_version)
    if live:
        in_range = (*in_range, MessageRow.compacted_at.is_(None))
    messages = read_messages(session, session_id, in_range)
    if live:
        # The summary stands for what came before its tail: it leads the window.
        summaries = [m for m in messages if m.summary]
        messages = summaries[-1:] + [m for m in messages if not m.summary]
    return messages


# -- tool outputs kept whole by a gate ---------------------------------------------------------


def insert_tool_outputs(session: Session, session_id: str, outputs: Mapping[str, str]) -> None:
    """Keep each output once per session (content-addressed: the same ref is the same text)."""
    table = table_of(ToolOutputRow)
    refs = list(outputs)
    existing: set[str] = set()
    for chunk in chunks(refs):
        existing.update(
            session.scalars(
                select(table.c.ref).where(table.c.session_id == session_id, table.c.ref.in_(chunk))
            )
        )
    now = datetime.now(UTC)
    fresh = [
        {"session_id": session_id, "ref": ref, "chars": len(text), "created_at": now, "text": text}
        if not blobs.kept_in_chunks(text)
        else {  # a long text: in chunks (blobs.py), the row says only how long it is
            "session_id": session_id,
            "ref": ref,
            "chars": blobs.put_blob(session, ref, text),
            "created_at": now,
            "text": "",
        }
        for ref, text in outputs.items()
        if ref not in existing
    ]
    if fresh:
        session.execute(insert(table), fresh)


def tool_output_slice(
    session: Session, session_id: str, ref: str, offset: int, length: int
) -> tuple[str, int] | None:
    """(the characters [offset, offset + length) of an output, its length), read by the
    database (substr counts characters), so a 100 MB output is never loaded whole."""
    row = session.execute(
        select(func.substr(ToolOutputRow.text, offset + 1, length), ToolOutputRow.chars).where(
            ToolOutputRow.session_id == session_id, ToolOutputRow.ref == ref
        )
    ).first()
    if row is not None and not row[0] and row[1] and offset < row[1]:  # kept in chunks
        return blobs.read_slice(session, ref, offset, length), row[1]
    return None if row is None else (row[0] or "", row[1])
