"""A session's messages with their parts in one query, built from the values the database
driver gives (issue 22: the first `context/assemble` after a restart reads the whole live
context). The columns are read as the driver returns them, not through SQLAlchemy's typed
result processing: SQLite gives JSON and times as text, PostgreSQL's driver as objects, and
both become the same Message values `rows.load_from` always gave (times aware, in UTC). The JSON
columns are read as their text on both and decoded a partition of rows at a time (`_values`)."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import CursorResult, Text, cast, select, type_coerce
from sqlalchemy.engine.cursor import CursorFetchStrategy
from sqlalchemy.orm import Session

from tokend.adapters.store.codec import PART_CLASSES
from tokend.adapters.store.models import MessageRow, PartRow, table_of
from tokend.adapters.store.slot_builders import positional
from tokend.core.types import Message, Part, StoredPart, TextPart, Usage

_m, _p = table_of(MessageRow), table_of(PartRow)
# Message(...) and StoredPart(...) without their __init__ (slot_builders: every field given)
_new_message, _new_part = positional(Message), positional(StoredPart)
_new_text, _new_usage = positional(TextPart), positional(Usage)  # and the usual part, a usage
_USAGE = [(f.name, f.default) for f in dataclasses.fields(Usage)]
_USAGE_NAMES = frozenset(name for name, _ in _USAGE)


def _raw(column: Any) -> Any:
    """The column as the driver gives it (no result processing)."""
    return type_coerce(column, Text)


MESSAGES_WITH_PARTS = select(
    _m.c.id,
    _m.c.role,
    _raw(_m.c.created_at),
    _m.c.model,
    cast(_m.c.usage, Text),  # the text: decoded a partition at a time (PostgreSQL's driver
    # decoded each value on its own, in Python)
    _m.c.cost_usd,
    _m.c.summary,
    _raw(_m.c.completed_at),
    _raw(_m.c.compacted_at),
    _m.c.compacted_by,
    _p.c.id,
    _p.c.kind,
    cast(_p.c.data, Text),
    _p.c.tokens,
    _raw(_p.c.compacted_at),
).select_from(_m.outerjoin(_p, _p.c.message_id == _m.c.id))


# The messages' own columns (MESSAGES_WITH_PARTS's first ten, in its order): a reply's call.
REPLIES = select(*MESSAGES_WITH_PARTS.selected_columns[:10]).where(_m.c.usage.is_not(None))


def read_replies(session: Session, session_id: str) -> list[Message]:
    """The session's messages that carry a usage, oldest first, without their parts (`parts`
    empty): one query of the messages table (call it with the collector paused)."""
    query = REPLIES.where(_m.c.session_id == session_id).order_by(_m.c.seq)
    result = session.connection().execute(query)
    return [
        _message((row, None, usage), [], session_id)
        for rows in result.partitions(ROWS_AT_ONCE)
        for row, usage in zip(rows, _values([r[4] for r in rows]), strict=True)
    ]


def read_messages(session: Session, session_id: str, where: Sequence[Any]) -> list[Message]:
    """The session's messages matching `where` (conditions on the messages table), oldest
    first, each with its parts in order: one query (call it with the collector paused:
    `collector_paused`)."""
    query = MESSAGES_WITH_PARTS.where(*where).order_by(_m.c.seq, _p.c.idx)
    result = session.connection().execute(query)
    return list(_messages(_with_json(_driver_rows(result)), session_id))


def _driver_rows(result: CursorResult[Any]) -> Iterator[Sequence[Sequence[Any]]]:
    """The result's rows ROWS_AT_ONCE at a time, as the driver's own tuples: the columns are
    read as the driver gives them (MESSAGES_WITH_PARTS), so SQLAlchemy's Row over each one was
    only a copy (10,000 of them at a 10,000-message read). Through SQLAlchemy's rows when its
    strategy fetches ahead of the cursor (rows it holds would be missed)."""
    if type(result.cursor_strategy) is not CursorFetchStrategy:
        yield from result.partitions(ROWS_AT_ONCE)
        return
    cursor, strategy = result.cursor, result.cursor_strategy
    try:
        while rows := cursor.fetchmany(ROWS_AT_ONCE):
            yield rows
    except Exception as exc:  # the driver's error, wrapped as SQLAlchemy's own fetch wraps it
        strategy.handle_exception(result, cursor, exc)
    finally:
        result.close()


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


def _with_json(
    partitions: Iterable[Sequence[Sequence[Any]]],
) -> Iterator[tuple[Sequence[Any], Any, Any]]:
    """Each row with its JSON columns' values (the part's data, the message's usage; None for
    NULL), decoded a partition at a time."""
    for rows in partitions:
        data, usages = _values([r[12] for r in rows]), _values([r[4] for r in rows])
        yield from zip(rows, data, usages, strict=True)


def _values(texts: list[str | None]) -> list[Any]:
    """The values of JSON texts (None for NULL) in one decoding: one call for them all, not one
    each (orjson; a 10,000-message read decoded 15,000 values one call each). A text it refuses
    (NaN, an integer beyond 64 bits, a lone surrogate) or a batch that is not one value a text
    (a text that is not a single JSON value) has each text decoded on its own, as before."""
    try:
        values = orjson.loads("[" + ",".join(["null" if t is None else t for t in texts]) + "]")
    except (orjson.JSONDecodeError, TypeError):
        values = None
    if not isinstance(values, list) or len(values) != len(texts):
        return [None if t is None else _json(t) for t in texts]
    return values


def _messages(rows: Iterable[tuple[Sequence[Any], Any, Any]], session_id: str) -> Iterable[Message]:
    """Rows with their decoded JSON (`_with_json`), grouped into messages."""
    head: tuple[Sequence[Any], Any, Any] | None = None
    parts: list[StoredPart] = []
    for got in rows:
        row = got[0]
        if head is None or row[0] != head[0][0]:
            if head is not None:
                yield _message(head, parts, session_id)
            head, parts = got, []
        if row[10] is not None:
            data = got[1]
            part: Part
            if row[11] == "text" and len(data) == 1 and "text" in data:  # TextPart(**data)
                part = _new_text(data["text"], "text")
            else:
                part = PART_CLASSES[row[11]](**data)
            pruned = None if row[14] is None else _time(row[14])
            parts.append(_new_part(row[10], part, row[13], pruned))
    if head is not None:
        yield _message(head, parts, session_id)


def _message(
    got: tuple[Sequence[Any], Any, Any], parts: list[StoredPart], session_id: str
) -> Message:
    """The message of a row (its columns in MESSAGES_WITH_PARTS's order, with its decoded
    usage), positional: a keyword call cost more than the rest of a row's decoding."""
    row, usage_json = got[0], got[2]
    usage = None if usage_json is None else _usage(usage_json)
    return _new_message(
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


def _usage(values: dict[str, Any]) -> Usage:
    """Usage(**values): by its slots when `values` names none but its fields and both the
    figures every usage has (as the store writes it), else by its constructor."""
    if values.keys() <= _USAGE_NAMES and "input_tokens" in values and "output_tokens" in values:
        get = values.get
        return _new_usage(*[get(name, default) for name, default in _USAGE])
    return Usage(**values)


_decoder = json.JSONDecoder()


def _json(value: Any) -> Any:
    """A JSON column's value on its own: its text (as the store wrote it: nothing before the
    value, so it is read from its first character), or the object a driver decoded."""
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
