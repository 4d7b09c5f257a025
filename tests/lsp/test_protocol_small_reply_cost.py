"""What the usual small reply costs on the event loop (lsp/connection.py, core/json_text.py).

Found (issue 18's figures): `budget/snapshot`'s round trip was 1.15-1.40x the tree before the
reshape. Every reply was copied whole by pygls's converter (its JsonRPCResponseMessage
unstructured through cattrs, though a typed handler's result is plain JSON already), then
walked by `is_small` (issue 17: is it big enough to be encoded beside the loop?), then
encoded. Judged without a clock: the converter's calls per reply, what the walk allocates, and
that the bytes on the wire are those json.dumps writes of the reply pygls would have sent.
"""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types
from pygls.lsp.server import LanguageServer

from tokend.core import json_text
from tokend.lsp.protocol import TokendProtocol, shared_converter

SNAPSHOT: dict[str, Any] = {
    "sessionId": "01M8DHEH9MSN84882NFND3AYFJ",
    "model": "gpt-4o",
    "contextWindow": 128000,
    "maxOutputTokens": 16384,
    "usedTokens": 123,
    "usedPercentage": 0.1,
    "estimated": True,
    "breakdown": [{"category": "messages", "tokens": 123, "basis": "exact"}],
    "cost": {"totalUsd": 0, "byModel": {}},
    "time": {"wallMs": 54, "apiMs": None},
    "lastCall": None,
    "warnings": [],
}


class _Writer:
    def __init__(self) -> None:
        self.frames: list[bytes] = []

    def write(self, frame: bytes) -> None:
        self.frames.append(frame)

    def write_later(self, pending: Any) -> None:
        raise AssertionError("a small reply went to a thread")


def _protocol() -> tuple[TokendProtocol, _Writer, list[Any]]:
    """A connection's protocol writing to a daemon-like writer; the converter's calls."""
    server = LanguageServer(
        "test", "0", protocol_cls=TokendProtocol, converter_factory=shared_converter
    )
    protocol = server.protocol
    writer = _Writer()
    protocol.set_writer(writer)
    converted: list[Any] = []
    convert = protocol._serialize_message

    def counting(value: Any) -> Any:
        converted.append(value)
        return convert(value)

    protocol._serialize_message = counting  # type: ignore[method-assign]
    return protocol, writer, converted


def _body(frame: bytes) -> bytes:
    return frame.partition(b"\r\n\r\n")[2]


def test_a_plain_result_is_sent_without_being_copied_by_the_converter() -> None:
    protocol, writer, converted = _protocol()
    protocol._send_response(7, result=SNAPSHOT)
    assert converted == []  # main: the whole reply, copied through cattrs
    [frame] = writer.frames
    expected = json.dumps({"id": 7, "jsonrpc": "2.0", "result": SNAPSHOT}).encode()
    assert _body(frame) == expected  # the text pygls's route wrote, key for key
    assert f"Content-Length: {len(expected)}\r\n".encode() in frame


def test_an_attrs_result_is_converted_once_and_written_as_pygls_wrote_it() -> None:
    protocol, writer, converted = _protocol()
    result = types.InitializeResult(
        capabilities=types.ServerCapabilities(hover_provider=True),
        server_info=types.ServerInfo(name="tokend", version="1"),
    )
    protocol._send_response("a", result=result)
    assert len(converted) == 1
    as_pygls = shared_converter().unstructure(
        {"id": "a", "jsonrpc": "2.0", "result": result}, unstructure_as=dict[str, Any]
    )
    [frame] = writer.frames
    assert json.loads(_body(frame)) == as_pygls
    assert json.loads(_body(frame))["result"]["serverInfo"] == {"name": "tokend", "version": "1"}


def test_a_null_result_is_written() -> None:
    protocol, writer, _ = _protocol()
    protocol._send_response(3, result=None)
    assert _body(writer.frames[0]) == b'{"id": 3, "jsonrpc": "2.0", "result": null}'


def test_a_long_list_is_judged_big_without_being_walked() -> None:
    """Its values are counted before they are looked at: nothing is copied aside (main put
    every one of them on its stack first: 8 MB for a million)."""
    values = list(range(1_000_000))
    tracemalloc.start()
    try:
        small = json_text.is_small({"files": values}, repr)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not small
    assert peak < 100_000


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=5)
        | st.tuples(children, children)
        | st.dictionaries(st.text(max_size=4) | st.integers(), children, max_size=5)
    ),
    max_leaves=30,
)


def _totals(value: Any) -> tuple[int, int]:
    """(values, characters of strings and string keys) of `value`: the oracle."""
    if isinstance(value, str):
        return 1, len(value)
    if isinstance(value, dict):
        inner = [_totals(v) for v in value.values()]
        keys = sum(len(k) for k in value if isinstance(k, str))
        return 1 + sum(v for v, _ in inner), keys + sum(c for _, c in inner)
    if isinstance(value, list | tuple):
        inner = [_totals(v) for v in value]
        return 1 + sum(v for v, _ in inner), sum(c for _, c in inner)
    return 1, 0


@settings(max_examples=300, deadline=None)
@given(value=json_values, most_values=st.integers(1, 40), most_chars=st.integers(0, 40))
def test_small_is_fewer_values_and_characters_than_the_bounds(
    value: Any, most_values: int, most_chars: int
) -> None:
    values, chars = _totals(value)
    old = json_text.SMALL_VALUES, json_text.SMALL_CHARS
    json_text.SMALL_VALUES, json_text.SMALL_CHARS = most_values, most_chars
    try:
        got = json_text.is_small(value, repr)
    finally:
        json_text.SMALL_VALUES, json_text.SMALL_CHARS = old
    assert got == (values <= most_values and chars <= most_chars)
