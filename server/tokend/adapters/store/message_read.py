"""A session's messages with their parts in one query, built from the values the database
driver gives (issue 22: the first `context/assemble` after a restart reads the whole live
context). The columns are read as the driver returns them, not through SQLAlchemy's typed
result processing: SQLite gives JSON and times as text, PostgreSQL's driver as objects, and
both become the same Message values `rows.load_from` always gave (times aware, in UTC)."""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from itertools import chain
from typing import Any

from sqlalchemy import Text, select, type_coerce
from sqlalchemy.orm import Session

from tokend.adapters.store.codec import PART_CLASSES
from tokend.adapters.store.models import MessageRow, PartRow, table_of
from tokend.core.types import Message, StoredPart, Usage

_m, _p = table_of(MessageRow), table_of(PartRow)


def _raw(column: Any) -> Any:
    """The column as the driver gives it (no result processing)."""
    return type_coerce(column, Text)


MESSAGES_WITH_PARTS = select(
    _m.c.id,
    _m.c.role,
    _raw(_m.c.created_at),
    _m.c.model,
    _raw(_m.c.usage),
    _m.c.cost_usd,
    _m.c.summary,
    _raw(_m.c.completed_at),
    _raw(_m.c.compacted_at),
    _m.c.compacted_by,
    _p.c.id,
    _p.c.kind,
    _raw(_p.c.data),
    _p.c.tokens,
    _raw(_p.c.compacted_at),
).select_from(_m.outerjoin(_p, _p.c.message_id == _m.c.id))


def read_messages(session: Session, session_id: str, where: Sequence[Any]) -> list[Message]:
    """The session's messages matching `where` (conditions on the messages table), oldest
    first, each with its parts in order: one query (call it with the collector paused:
    `collector_paused`)."""
    query = MESSAGES_WITH_PARTS.where(*where).order_by(_m.c.seq, _p.c.idx)
    result = session.connection().execute(query)
    return list(_messages(chain.from_iterable(result.partitions(ROWS_AT_ONCE)), session_id))


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off while a session's rows become objects: they are all kept, and
    each pass it made meanwhile walked every object the daemon holds (a 10,000-message read
    took about half as long without them, on a heap of 300,000 objects). On again after,
    unless it was off before (another read, on another thread, turns it on at its end)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


# Rows fetched at once: the driver builds them holding the interpreter, and the event loop
# waits meanwhile (10,000 at once held it tens of ms on the shared machine).
ROWS_AT_ONCE = 1_000


def _messages(rows: Iterable[Sequence[Any]], session_id: str) -> Iterable[Message]:
    head: Sequence[Any] | None = None
    parts: list[StoredPart] = []
    for row in rows:
        if head is None or row[0] != head[0]:
            if head is not None:
                yield _message(head, parts, session_id)
            head, parts = row, []
        if row[10] is not None:
            part = PART_CLASSES[row[11]](**_json(row[12]))
            pruned = None if row[14] is None else _time(row[14])
            parts.append(StoredPart(row[10], part, row[13], pruned))
    if head is not None:
        yield _message(head, parts, session_id)


def _message(row: Sequence[Any], parts: list[StoredPart], session_id: str) -> Message:
    """The message of a row (its columns in MESSAGES_WITH_PARTS's order), positional: a
    keyword call cost more than the rest of a row's decoding."""
    usage = None if row[4] is None else Usage(**_json(row[4]))
    return Message(
        row[0],  # id
        session_id,
        row[1],  # role
        tuple(parts),
        _time(row[2]),  # created_at, never NULL
        row[3],  # model
        usage,
        row[5],  # cost_usd
        bool(row[6]),  # summary
        None if row[7] is None else _time(row[7]),  # completed_at
        None if row[8] is None else _time(row[8]),  # compacted_at
        row[9],  # compacted_by
    )


_decoder = json.JSONDecoder()


def _json(value: Any) -> Any:
    """A JSON column's value: SQLite gives its text (as the store wrote it: nothing before
    the value, so it is read from its first character), PostgreSQL's driver the object."""
    if isinstance(value, str):
        try:
            return _decoder.raw_decode(value)[0]
        except ValueError:
            return json.loads(value)  # anything else a JSON text may be
    return value


def _time(value: Any) -> datetime:
    """A time column's value (not NULL), aware and in UTC. SQLite keeps UTC text with no
    zone: read with the zone written after it, one datetime built (`replace(tzinfo=UTC)`
    after the parse built two and cost ten times the parse); text with a zone of its own, and
    the driver's datetimes (PostgreSQL), are converted."""
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value + "+00:00")
        except ValueError:  # a zone of its own, or another form
            value = datetime.fromisoformat(value)
    at: datetime = value
    if at.tzinfo is None:
        return at.replace(tzinfo=UTC)
    return at.astimezone(UTC)
