"""A session's JSON columns (each part's data, each reply's usage) are decoded a partition of
rows at a time (adapters/store/message_read.py; issue 22: the first `context/assemble` after a
restart reads the whole live context). Main 3342e99 decoded each value with its own call:
json's raw_decode on SQLite, psycopg's loader (json.loads, in Python) on PostgreSQL, 15,000
calls for the scale bench's 10,000 messages.

Oracles: the messages as they were written, and the calls counted into the decoders the read
can use (the standard library's JSONDecoder, which psycopg's loader uses too, and orjson), on
SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import math

import orjson
import pytest

from tests.store.conftest import at, session_info
from tokend.adapters.store import SqlStore, message_read
from tokend.core.types import Message, StoredPart, TextPart, ToolCallPart, Usage


def _messages(session_id: str, count: int, call_input: object) -> list[Message]:
    out = []
    for i in range(count):
        if i % 2:
            call = ToolCallPart(f"c{i}", "Bash", call_input if i == 7 else {"n": i})
            parts = (
                StoredPart(f"{session_id}-p{i}a", TextPart(f"é {i} ✓"), 3),
                StoredPart(f"{session_id}-p{i}b", call),
            )
            usage = Usage(100 + i, 20, cache_read_tokens=7 * i)
            message = Message(
                f"{session_id}-m{i:04d}",
                session_id,
                "assistant",
                parts,
                at(i),
                usage=usage,
                cost_usd=0.5,
            )
        else:
            text = TextPart(f'{i}: "quoted"\n')
            message = Message(
                f"{session_id}-m{i:04d}",
                session_id,
                "user",
                (StoredPart(f"{session_id}-p{i}", text, 5),),
                at(i),
            )
        out.append(message)
    return out


class _Calls:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        raw_decode, loads = json.JSONDecoder.raw_decode, orjson.loads

        def counted_raw_decode(decoder: json.JSONDecoder, *args: object, **kw: object) -> object:
            self.count += 1
            return raw_decode(decoder, *args, **kw)  # type: ignore[arg-type]

        def counted_loads(*args: object) -> object:
            self.count += 1
            return loads(*args)  # type: ignore[arg-type]

        monkeypatch.setattr(json.JSONDecoder, "raw_decode", counted_raw_decode)
        monkeypatch.setattr(orjson, "loads", counted_loads)


def test_a_reads_json_values_are_decoded_a_partition_at_a_time(
    store: SqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2,400 messages, 4,800 JSON values (3,600 parts' data, 1,200 usages): main made a
    decoder call per value (4,796 calls more than a 2-message session's read on SQLite, 5,995
    on PostgreSQL); now two calls a partition of rows (3,600 rows: 4 partitions)."""
    store.create_session(session_info("small"))
    for message in _messages("small", 2, {"n": 7}):
        store.append_message(message)
    store.create_session(session_info("s1"))
    sent = _messages("s1", 2_400, {"n": 7})
    for message in sent:
        store.append_message(message)
    calls = _Calls(monkeypatch)
    store.messages.load_messages("small")
    fixed, calls.count = calls.count, 0  # the session row's own columns, whatever its length
    loaded = store.messages.load_messages("s1")
    monkeypatch.undo()
    rows = sum(len(m.parts) for m in sent)
    partitions = math.ceil(rows / message_read.ROWS_AT_ONCE)
    assert calls.count - fixed <= 2 * partitions, (calls.count, fixed, rows)
    assert loaded == sent


@pytest.mark.parametrize(
    "call_input",
    [
        {"big": 2**70},  # beyond 64 bits: orjson refuses it, json reads it
        {"lone": "\ud800"},  # a lone surrogate, stored escaped
        {"same": 1, "nested": [{"a": None, "b": [1.5, -0.0, "x"]}]},
    ],
)
def test_values_a_batch_cannot_read_are_read_one_by_one(
    store: SqlStore, call_input: object
) -> None:
    """A partition whose batch orjson refuses is decoded value by value, as main did: the same
    messages either way (oracle: the messages written)."""
    store.create_session(session_info("s1"))
    sent = _messages("s1", 30, call_input)
    for message in sent:
        store.append_message(message)
    loaded = store.messages.load_messages("s1")
    assert loaded == sent
    assert loaded[7].parts[1].part == ToolCallPart("c7", "Bash", call_input)
