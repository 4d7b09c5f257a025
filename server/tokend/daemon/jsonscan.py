"""A JSON-RPC message's top-level "id" and "method", found without keeping the message.

A request too large to accept, or a reply too large to send, still deserves an answer to its
own id. `TopLevelFields` reads a JSON object in chunks, skipping each string with one regex call
and tracking only nesting, and records the top-level `id` (an integer or a string) and `method`
(a string). It keeps a few hundred bytes whatever the size of the body, and stops reading as
soon as it knows what it needs (`wants_more`).

`nesting_exceeds` tells a body nested too deep for tokend without parsing it, and
`shallow_top_level` reads such a body's top level (its id and method) without parsing the rest.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

MAX_CAPTURE_BYTES = 256  # a top-level key, a method name or an id longer than this is ignored

# The rest of a string from just after its opening quote: stops at the closing quote, or at a
# backslash that ends the chunk (its escaped byte is in the next chunk), or at the chunk's end.
STRING_REST = re.compile(rb'(?:[^"\\]++|\\.)*+', re.DOTALL)
_STRUCTURAL = re.compile(rb'["{}\[\]:,]')
_OPENERS = frozenset(b"{[")
_CLOSERS = frozenset(b"}]")
_QUOTE, _COLON, _COMMA, _BACKSLASH = ord('"'), ord(":"), ord(","), ord("\\")
_NOT_BRACKET_OR_QUOTE = bytes(b for b in range(256) if b not in b'{}[]"')
_SQUARE = bytes.maketrans(b"{}", b"[]")


class TopLevelFields:
    """Feed a JSON object's bytes with `feed`; read `msg_id`, `method` and `is_response`."""

    def __init__(self) -> None:
        self.msg_id: int | str | None = None
        self.method: str | None = None
        self.is_response = False  # a top-level "result" or "error" key was seen
        self.finished = False  # the object closed, or the body is not an object
        self._depth = 0
        self._in_string = False
        self._escape_pending = False
        self._capture: bytearray | None = None  # the string or scalar being read at depth 1
        self._expecting_key = True
        self._key: bytes | None = None

    @property
    def wants_more(self) -> bool:
        """False once `id` and `method` are known, or `id` of a response, or the end is read."""
        if self.finished:
            return False
        return self.msg_id is None or (self.method is None and not self.is_response)

    def feed(self, data: bytes) -> None:
        pos, end = 0, len(data)
        while pos < end and not self.finished:
            pos = self._string(data, pos) if self._in_string else self._outside(data, pos)

    def _string(self, data: bytes, pos: int) -> int:
        if self._escape_pending:
            self._escape_pending = False
            self._keep(data[pos : pos + 1])
            pos += 1
        stop = STRING_REST.match(data, pos).end()  # type: ignore[union-attr]  # `*` always matches
        if self._capture is not None:
            self._keep(data[pos:stop])
        if stop == len(data):
            return stop
        if data[stop] == _BACKSLASH:  # the chunk ends inside an escape
            self._keep(b"\\")
            self._escape_pending = True
            return stop + 1
        self._in_string = False
        if self._depth == 1:
            self._string_done()
        return stop + 1

    def _outside(self, data: bytes, pos: int) -> int:
        found = _STRUCTURAL.search(data, pos)
        stop = found.start() if found else len(data)
        if self._depth == 1 and not self._expecting_key and self._capture is not None:
            self._keep(data[pos:stop])  # a number, true, false or null
        if found is None:
            return stop
        char = data[stop]
        if self._depth == 0:
            if char != ord("{"):
                self.finished = True  # not a JSON object: nothing to find
            self._depth = 1
            return stop + 1
        if char == _QUOTE:
            self._in_string = True
            if self._depth == 1:
                self._capture = bytearray()
        elif char in _OPENERS:
            if self._depth == 1:
                self._capture = None  # the value is an array or an object
            self._depth += 1
        elif char in _CLOSERS:
            self._depth -= 1
            if self._depth == 1:
                self._capture = None
            elif self._depth == 0:
                self._value_done()
                self.finished = True
        elif self._depth == 1 and char == _COLON:
            self._expecting_key = False
            self._capture = bytearray()
        elif self._depth == 1 and char == _COMMA:
            self._value_done()
            self._expecting_key = True
        return stop + 1

    def _keep(self, data: bytes) -> None:
        if self._capture is None:
            return
        if len(self._capture) + len(data) > MAX_CAPTURE_BYTES:
            self._capture = None
            return
        self._capture += data

    def _string_done(self) -> None:
        text = _decode_string(self._capture)
        self._capture = None
        if self._expecting_key:
            self._key = text.encode() if text is not None else None
            self.is_response = self.is_response or self._key in (b"result", b"error")
            return
        if self._key == b"id" and text is not None:
            self.msg_id = text
        elif self._key == b"method" and text is not None:
            self.method = text
        self._key = None  # the value is read: a comma follows

    def _value_done(self) -> None:
        """A scalar value at depth 1 ends (at a comma or the closing brace)."""
        scalar, self._capture = self._capture, None
        if self._key == b"id" and scalar is not None and scalar.strip():
            value = _decode_scalar(bytes(scalar))
            if isinstance(value, int) and not isinstance(value, bool):
                self.msg_id = value
        self._key = None


def _decode_string(raw: bytearray | None) -> str | None:
    if raw is None:
        return None
    try:
        value = json.loads(b'"' + bytes(raw) + b'"')
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _decode_scalar(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def top_level_fields(body: bytes) -> TopLevelFields:
    """The fields of a whole body (stops early once they are known)."""
    fields = TopLevelFields()
    for start in range(0, len(body), 1 << 16):
        if not fields.wants_more:
            break
        fields.feed(body[start : start + (1 << 16)])
    return fields


def nesting_exceeds(body: bytes, max_depth: int) -> bool:
    """True if the JSON text `body` nests arrays and objects more than `max_depth` levels
    (the top-level value is level 1), told before anything is parsed and at C speed: escapes
    and then strings are dropped, the brackets left are made one kind, and the deepest point
    of their running sum is taken (numpy). Parsing such a body instead costs the loop far more
    (a recursion error, then a Python scan of every byte for the request's id: 0.3 s for
    256 KiB). A body that is not JSON may pass: the parser refuses it."""
    if body.count(b"{") + body.count(b"[") <= max_depth:
        return False
    if b"\\" in body:  # after these two, every quote left opens or closes a string
        body = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    brackets = body.translate(_SQUARE, _NOT_BRACKET_OR_QUOTE).replace(b'""', b"")
    if b'"' in brackets:  # strings holding brackets: keep what is between them
        brackets = b"".join(brackets.split(b'"')[::2])
    brackets = brackets.replace(b"[]", b"")  # the innermost pairs: often most of them
    if len(brackets) <= max_depth:
        return False
    steps = 92 - np.frombuffer(brackets, np.uint8).astype(np.int32)  # "[" 91: +1, "]" 93: -1
    return int(np.cumsum(steps).max()) + 1 > max_depth


def shallow_top_level(body: bytes) -> dict[str, Any] | None:
    """The top-level object of the JSON text `body` with each array or object value replaced by
    0 (None if that is not a JSON object): a message too deep to parse still shows its `id` and
    `method`, wherever they are, at C speed (numpy) and without recursion."""
    plain = body
    if b"\\" in plain:  # escapes blanked, same length: every quote left is a string's
        plain = plain.replace(b"\\\\", b"__").replace(b'\\"', b"__")
    raw = np.frombuffer(plain, np.uint8)
    outside = np.cumsum(raw == ord('"')) % 2 == 0  # the closing quote counts as outside
    opens = ((raw == ord("{")) | (raw == ord("["))) & outside
    closes = ((raw == ord("}")) | (raw == ord("]"))) & outside
    depth = np.cumsum(opens.astype(np.int32) - closes.astype(np.int32))
    nested_open = opens & (depth == 2)
    keep = (depth <= 1) & ~(closes & (depth == 1)) | nested_open
    shallow = np.where(nested_open, np.uint8(ord("0")), np.frombuffer(body, np.uint8))[keep]
    try:
        value = json.loads(shallow.tobytes())
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
