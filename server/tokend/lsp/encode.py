"""Big messages to the client encoded a piece at a time, beside the event loop.

`json.dumps` writes a whole string in one C call, holding the interpreter lock: an 8 MB
string (a `context/assemble` with an 8 MB `system`, a file's unsaved text) took 54 ms, every
connection of the daemon waiting. A message is first looked at (`is_small`, on the loop, a few
microseconds for the usual reply); a small one is encoded as before. A big one is encoded by
`encode_message` in a worker thread: each long string in slices of PIECE_CHARS and each
container with many values one value at a time, so that no single call holds the interpreter
for more than about a millisecond and the loop gets it back within the interpreter's switch
interval. The bytes are those `json.dumps(message, allow_nan=False)` writes (ASCII, ", " and
": " separators).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

PIECE_CHARS = 128 << 10  # characters of a long string escaped per call
SMALL_CHARS = 64 << 10  # a message holding fewer characters of strings than this, and
SMALL_VALUES = 2_000  # fewer values than this, is encoded at once

Serialize = Callable[[Any], Any]
"""What json.dumps's `default` does: an object it cannot write (attrs) as JSON values."""

_escape: Callable[[str], str] = json.encoder.encode_basestring_ascii
_PLAIN = (str, int, float, bool, type(None))


def is_small(value: Any, serialize: Serialize) -> bool:
    """Whether `value` holds fewer than SMALL_VALUES values and SMALL_CHARS characters of
    strings: looked at until either is passed, so never more than SMALL_VALUES steps."""
    values, chars = 0, 0
    stack = [value]
    while stack:
        item = stack.pop()
        values += 1
        if values > SMALL_VALUES:
            return False
        if isinstance(item, str):
            chars += len(item)
            if chars > SMALL_CHARS:
                return False
        elif isinstance(item, dict):
            stack.extend(item.values())
            chars += sum(len(k) for k in item if isinstance(k, str))
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif not isinstance(item, _PLAIN):
            stack.append(serialize(item))
    return chars <= SMALL_CHARS


def encode_message(value: Any, serialize: Serialize) -> bytes:
    """`value` as `json.dumps(value, default=serialize, allow_nan=False).encode()` writes it,
    built from small pieces (call it off the loop). ValueError for NaN or Infinity."""
    out: list[str] = []
    _pieces(value, serialize, out)
    return "".join(out).encode("ascii")


def _pieces(value: Any, serialize: Serialize, out: list[str]) -> None:
    if isinstance(value, str):
        if len(value) <= PIECE_CHARS:
            out.append(_escape(value))
            return
        out.append('"')
        for start in range(0, len(value), PIECE_CHARS):
            out.append(_escape(value[start : start + PIECE_CHARS])[1:-1])
        out.append('"')
    elif isinstance(value, _PLAIN):
        out.append(json.dumps(value, allow_nan=False))
    elif not isinstance(value, dict | list | tuple):
        _pieces(serialize(value), serialize, out)
    elif is_small(value, serialize):
        out.append(json.dumps(value, default=serialize, allow_nan=False))
    elif isinstance(value, dict):
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            out.append(", " if i else "")
            _pieces(_key(key), serialize, out)
            out.append(": ")
            _pieces(item, serialize, out)
        out.append("}")
    else:
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(", ")
            _pieces(item, serialize, out)
        out.append("]")


def _key(key: Any) -> str:
    """A dict key as json.dumps writes it: strings as they are, numbers and the constants as
    their JSON text."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool) or key is None:
        return json.dumps(key)
    if isinstance(key, int | float):
        return json.dumps(key, allow_nan=False)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
