"""A session's messages are read in one query, their values as the driver gives them
(adapters/store/message_read.py; issue 22: the first `context/assemble` after a restart reads
the whole live context, and SQLAlchemy's typed processing of every row was most of it).

Oracles: the messages as they were written, and the statements the database was sent (counted
with SQLAlchemy's cursor event), on SQLite and on PostgreSQL."""

from __future__ import annotations

import gc
import sys
from dataclasses import replace
from datetime import datetime, timedelta

from sqlalchemy import event

from tests.store.conftest import at, session_info
from tokend.adapters.store import SqlStore, message_read
from tokend.core.types import (
    Message,
    StoredPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)


def _messages(session_id: str, count: int) -> list[Message]:
    out = []
    for i in range(count):
        if i % 2:
            parts = (
                StoredPart(f"p{i}a", TextPart('naïve ✓ "quoted"\n'), tokens=7),
                StoredPart(f"p{i}b", ToolCallPart(f"c{i}", "Bash", {"n": i, "x": [1, None]})),
            )
            usage = Usage(100 + i, 20, reasoning_tokens=5, cache_read_tokens=7 * i)
            message = Message(
                f"m{i:03d}", session_id, "assistant", parts, at(i), model="gpt-4o",
                usage=usage, cost_usd=0.001 * i, completed_at=at(i + 0.5),
            )  # fmt: skip
        else:
            part = ToolResultPart(f"c{i - 1}", "Bash", f"output {i}\n" * 3)
            message = Message(
                f"m{i:03d}", session_id, "tool", (StoredPart(f"p{i}", part, 9),), at(i)
            )
        out.append(message)
    return out


def test_the_live_context_is_read_in_one_query_as_it_was_written(store: SqlStore) -> None:
    store.create_session(session_info("s1"))
    sent = _messages("s1", 40)
    for message in sent:
        store.append_message(message)
    store.parts.mark_parts_compacted(["p4"], at(100))
    store.parts.set_part_tokens({"p4": 3})
    statements: list[str] = []

    def seen(conn, cursor, statement, *args) -> None:
        statements.append(statement)

    event.listen(store.engine, "before_cursor_execute", seen)
    try:
        loaded = store.messages.load_messages("s1")
    finally:
        event.remove(store.engine, "before_cursor_execute", seen)
    reading = [s for s in statements if "FROM messages" in s or "FROM parts" in s]
    assert len(reading) == 1  # main: two (the parts, then the messages)
    expected = list(sent)
    pruned = StoredPart("p4", sent[4].parts[0].part, 3, at(100))
    expected[4] = replace(sent[4], parts=(pruned,))
    assert loaded == expected
    assert all(m.created_at.tzinfo is not None for m in loaded)


def test_the_collector_makes_no_pass_while_the_rows_become_messages(store: SqlStore) -> None:
    """Each pass of the cyclic collector walks every object the daemon holds; a read of a
    session's rows makes tens of thousands that all stay (oracle: gc.callbacks)."""
    store.create_session(session_info("s1"))
    for message in _messages("s1", 600):
        store.append_message(message)
    passes: list[int] = []

    def seen(phase: str, info: dict) -> None:
        if phase == "start":
            passes.append(info["generation"])

    gc.collect()
    gc.callbacks.append(seen)
    try:
        loaded = store.messages.load_messages("s1")
    finally:
        gc.callbacks.remove(seen)
    assert len(loaded) == 600
    # The youngest generation's pass put off meanwhile may come as the collector is back on;
    # main: 14 passes while the rows were read.
    assert len(passes) <= 1 and set(passes) <= {0}, passes
    assert gc.isenabled()


class _CountedTime(datetime):
    """datetime, counting the datetimes the read builds from a column's value."""

    built = 0

    @classmethod
    def fromisoformat(cls, text: str) -> _CountedTime:
        _CountedTime.built += 1
        return super().fromisoformat(text)

    def replace(self, *args, **kwargs):  # type: ignore[no-untyped-def, override]
        _CountedTime.built += 1
        return super().replace(*args, **kwargs)


def test_each_stored_time_becomes_one_datetime(store: SqlStore, monkeypatch) -> None:
    """SQLite keeps a time as UTC text with no zone: main 1db3331 parsed it, then built a second
    datetime with the zone (`replace(tzinfo=UTC)`, ten times the parse's cost; 15,000 times in
    a 10,000-message session's first read), 2 per time here. Now the text is read with its zone:
    one. PostgreSQL's driver builds them itself (none here). Oracle: the times written."""
    store.create_session(session_info("s1"))
    sent = _messages("s1", 40)
    for message in sent:
        store.append_message(message)
    store.parts.mark_parts_compacted(["p4"], at(100))
    times = [m.created_at for m in sent] + [m.completed_at for m in sent if m.completed_at]
    times.append(at(100))  # the pruned part's
    monkeypatch.setattr(message_read, "datetime", _CountedTime)
    loaded = store.messages.load_messages("s1")
    monkeypatch.undo()
    assert _CountedTime.built <= len(times), (_CountedTime.built, len(times))
    read = [m.created_at for m in loaded] + [m.completed_at for m in loaded if m.completed_at]
    read.append(loaded[4].parts[0].compacted_at)
    assert read == times
    assert all(t is not None and t.utcoffset() == timedelta(0) for t in read)


class _Counted:
    """Calls of a class's own `__init__`, counted while patched in."""

    def __init__(self, cls: type, monkeypatch) -> None:  # type: ignore[no-untyped-def]
        self.calls = 0
        init = cls.__init__

        def counted(obj, *args, **kwargs):  # type: ignore[no-untyped-def]
            self.calls += 1
            init(obj, *args, **kwargs)

        monkeypatch.setattr(cls, "__init__", counted)


def _sqlalchemy_frames(store: SqlStore, session_id: str) -> tuple[list[Message], int]:
    """A read of the live context and the Python frames of SQLAlchemy's entered meanwhile."""
    entered = [0]

    def seen(frame, event_name, _arg):  # type: ignore[no-untyped-def]
        if event_name == "call" and "sqlalchemy" in frame.f_code.co_filename:
            entered[0] += 1

    store.messages.load_messages(session_id)  # its statements compiled before
    sys.setprofile(seen)
    try:
        loaded = store.messages.load_messages(session_id)
    finally:
        sys.setprofile(None)
    return loaded, entered[0]


def test_a_read_builds_messages_and_stored_parts_without_their_init(
    store: SqlStore, monkeypatch
) -> None:
    """A restarted daemon's first `context/assemble` at 10,000 messages built each Message,
    StoredPart, text part and Usage through its frozen dataclass `__init__` (one
    `object.__setattr__` a field: 1.2 and 0.5 us for the first two); now their fields are set
    by their slots (adapters/store/slot_builders.py),
    and the driver's rows are read without a SQLAlchemy Row over each one (its Python frames
    do not grow with the rows: main c84769f entered 3 more for each 1,000 rows more). Oracle: the
    messages as written (equal, and of the same classes)."""
    store.create_session(session_info("s1"))
    store.create_session(session_info("s2"))
    sent = _messages("s1", 40)
    for message in sent:
        store.append_message(message)
    for message in _messages("s2", 1_500):  # 2,250 rows: three partitions of the read
        parts = tuple(replace(sp, id=f"s2{sp.id}") for sp in message.parts)
        store.append_message(replace(message, id=f"s2{message.id}", parts=parts))
    counted = [_Counted(cls, monkeypatch) for cls in (Message, StoredPart, TextPart, Usage)]
    loaded = store.messages.load_messages("s1")
    # main c84769f: 40 Messages, 60 StoredParts, 20 TextParts and 20 Usages
    assert [c.calls for c in counted] == [0, 0, 0, 0]
    assert loaded == sent
    assert [type(m) for m in loaded] == [Message] * 40
    assert {type(sp) for m in loaded for sp in m.parts} == {StoredPart}
    monkeypatch.undo()
    few, frames_few = _sqlalchemy_frames(store, "s1")
    many, frames_many = _sqlalchemy_frames(store, "s2")
    assert (len(few), len(many)) == (40, 1_500)
    assert frames_many == frames_few  # main c84769f: 6 more for 2,250 rows than for 60
