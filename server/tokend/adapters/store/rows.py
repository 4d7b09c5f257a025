"""Queries and row <-> domain conversions behind SqlStore (module functions on an ORM Session)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import bindparam, case, func, insert, select, update
from sqlalchemy.orm import Session
from ulid import ULID

from tokend.adapters.store.codec import part_from_json, part_to_json, usage_from_json
from tokend.adapters.store.models import (
    MessageRow,
    PartRow,
    SessionRow,
    TokenCacheRow,
    UtcDateTime,
    table_of,
)
from tokend.core.errors import SessionNotFound
from tokend.core.types import Message, SessionInfo, StoredPart

IN_CHUNK = 500  # ids per IN (...) list: well under every database's bound-parameter limit

# Statements of the append path, built once (building them per call costs more than running them).
_sessions, _messages = table_of(SessionRow), table_of(MessageRow)
_stamp = bindparam("stamp", type_=UtcDateTime())
# Moves updated_at forward to :stamp (never back) on a live session; rowcount 0: none such.
BUMP_LIVE_SESSION = (
    update(_sessions)
    .where(_sessions.c.id == bindparam("session_id"), _sessions.c.deleted_at.is_(None))
    .values(
        updated_at=case((_sessions.c.updated_at < _stamp, _stamp), else_=_sessions.c.updated_at)
    )
)
LAST_SEQ = select(func.max(_messages.c.seq)).where(
    _messages.c.session_id == bindparam("session_id")
)
INSERT_MESSAGE = insert(_messages)
INSERT_PARTS = insert(table_of(PartRow))


def new_id() -> str:
    """A fresh ULID string (26 chars, sortable by creation time)."""
    return str(ULID())


def chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), IN_CHUNK):
        yield items[start : start + IN_CHUNK]


def live(session: Session, session_id: str, *, lock: bool = False) -> SessionRow | None:
    row = session.get(SessionRow, session_id, with_for_update=lock)
    return None if row is None or row.deleted_at is not None else row


def require_live(session: Session, session_id: str) -> None:
    if live(session, session_id) is None:
        raise SessionNotFound(f"session {session_id} not found")


def existing_counts(session: Session, keys: Sequence[str]) -> dict[str, int]:
    """token_cache rows for `keys` (key -> tokens); absent keys are left out."""
    existing: dict[str, int] = {}
    for chunk in chunks(keys):
        query = select(TokenCacheRow.key, TokenCacheRow.tokens).where(TokenCacheRow.key.in_(chunk))
        existing.update(session.execute(query).all())
    return existing


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


def load_from(session: Session, session_id: str, *, from_seq: int) -> list[Message]:
    """Messages with seq >= from_seq, oldest first, with their parts: exactly two queries."""
    in_range = (MessageRow.session_id == session_id, MessageRow.seq >= from_seq)
    part_rows = session.execute(
        select(
            PartRow.message_id,
            PartRow.id,
            PartRow.kind,
            PartRow.data,
            PartRow.tokens,
            PartRow.compacted_at,
        )
        .join(MessageRow, PartRow.message_id == MessageRow.id)
        .where(*in_range)
        .order_by(MessageRow.seq, PartRow.idx)
    )
    parts_of: defaultdict[str, list[StoredPart]] = defaultdict(list)
    for message_id, part_id, kind, data, tokens, compacted_at in part_rows:
        parts_of[message_id].append(
            StoredPart(part_id, part_from_json(kind, data), tokens, compacted_at)
        )
    message_rows = session.execute(
        select(
            MessageRow.id,
            MessageRow.role,
            MessageRow.created_at,
            MessageRow.model,
            MessageRow.usage,
            MessageRow.cost_usd,
            MessageRow.summary,
            MessageRow.completed_at,
        )
        .where(*in_range)
        .order_by(MessageRow.seq)
    )
    return [
        Message(
            id=message_id,
            session_id=session_id,
            role=role,  # type: ignore[arg-type]  # written from a Role
            parts=tuple(parts_of.get(message_id, ())),
            created_at=created_at,
            model=model,
            usage=usage_from_json(usage),
            cost_usd=cost_usd,
            summary=summary,
            completed_at=completed_at,
        )
        for message_id, role, created_at, model, usage, cost_usd, summary, completed_at in message_rows
    ]


def session_info(row: SessionRow) -> SessionInfo:
    return SessionInfo(
        id=row.id,
        model=row.model,
        created_at=row.created_at,
        updated_at=row.updated_at,
        title=row.title,
        workspace_uri=row.workspace_uri,
        parent_id=row.parent_id,
        context_window=row.context_window,
        compacted_at=row.compacted_at,
        deleted_at=row.deleted_at,
        extra=dict(row.extra or {}),
    )
