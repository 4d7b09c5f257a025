"""JSON text of big values written a piece at a time, so that no call holds the interpreter.

`json.dumps` writes a whole string in one C call, holding the interpreter lock: an 8 MB
string (a `context/assemble` with an 8 MB `system`, a file's unsaved text, a tool call's 8 MB
input) took 17-54 ms, every thread of the daemon and its event loop waiting. A value is first
looked at (`is_small`: a few microseconds for the usual one); a small one is written by
json.dumps at once. A big one is written by `dumps`: each long string in slices of PIECE_CHARS
and each container with many values one value at a time, so that no single call holds the
interpreter for more than about a millisecond and another thread gets it back within the
interpreter's switch interval. The text is the one `json.dumps(value, allow_nan=False)` writes
with the same `ensure_ascii` and separators (lsp/encode.py: the wire's frames; render.py: the
tool inputs a tokenizer sees).
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

_ESCAPE: dict[bool, Callable[[str], str]] = {
    True: json.encoder.encode_basestring_ascii,  # ensure_ascii
    False: json.encoder.encode_basestring,
}
_PLAIN = (str, int, float, bool, type(None))


def is_small(value: Any, serialize: Serialize) -> bool:
    """Whether `value` holds fewer than SMALL_VALUES values and SMALL_CHARS characters of
    strings: looked at until either is passed, so never more than SMALL_VALUES steps. A
    container's values are counted before they are looked at, and its strings and numbers
    read where they are (only containers and objects are put aside for later): the usual
    reply, a few dozen values, is looked at in a few microseconds."""
    values, chars = 1, 0
    stack = [value]
    while stack:
        item = stack.pop()  # a container or an object (or a string or number of unusual type)
        children: Any
        if isinstance(item, dict):
            children, chars = item.values(), chars + _key_chars(item)
        elif isinstance(item, list | tuple):
            children = item
        elif isinstance(item, str):
            chars += len(item)
            continue
        elif isinstance(item, _PLAIN):
            continue
        else:
            stack.append(serialize(item))
            values += 1
            continue
        values += len(children)
        if values > SMALL_VALUES or chars > SMALL_CHARS:
            return False
        for child in children:
            kind = type(child)
            if kind is str:
                chars += len(child)
            elif kind is not int and kind is not float and kind is not bool and child is not None:
                stack.append(child)
        if chars > SMALL_CHARS:
            return False
    return chars <= SMALL_CHARS


def _key_chars(item: dict[Any, Any]) -> int:
    """The characters of a dict's string keys (numbers and constants are keys too)."""
    try:
        return sum(map(len, item))
    except TypeError:  # a key that is not a string
        return sum(len(k) for k in item if isinstance(k, str))


def _encoder_made_once() -> Callable[[Any], str]:
    """`json.dumps(value, allow_nan=False)`'s text, written by one C encoder made here once:
    json.dumps builds a JSONEncoder and its C encoder at every call, about 3 us before the
    first byte, 30 ms over the first reply of a 10,000-message history (one call per message).
    No circular check (json.dumps's would raise ValueError; this one RecursionError): the
    values written this way are trees. json.dumps itself where CPython's C encoder is absent."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return lambda value: json.dumps(value, allow_nan=False)
    escape = json.encoder.encode_basestring_ascii  # C's, so the encoder takes its fast path
    encode = make(None, _unserializable, escape, None, ": ", ", ", False, False, False)
    return lambda value: "".join(encode(value, 0))


def _unserializable(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


small_dumps = _encoder_made_once()
"""`json.dumps(value, allow_nan=False)`, for the many small values of a reply (one C call
each: a big one holds the interpreter as long as json.dumps does; `dumps` writes it in pieces).
ValueError for NaN or Infinity."""


def dumps(
    value: Any,
    serialize: Serialize | None = None,
    *,
    ensure_ascii: bool = True,
    separators: tuple[str, str] = (", ", ": "),
) -> str:
    """`json.dumps(value, default=serialize, allow_nan=False, ensure_ascii=..., separators=...)`
    built from small pieces. ValueError for NaN or Infinity."""
    out: list[str] = []
    _Writer(serialize or _unserializable, ensure_ascii, separators, out).write(value)
    return "".join(out)


class _Writer:
    def __init__(
        self, serialize: Serialize, ensure_ascii: bool, separators: tuple[str, str], out: list[str]
    ) -> None:
        self.serialize, self.out = serialize, out
        self.escape = _ESCAPE[ensure_ascii]
        self.item, self.key = separators
        self.options: dict[str, Any] = {
            "default": serialize, "allow_nan": False, "ensure_ascii": ensure_ascii,
            "separators": separators,
        }  # fmt: skip

    def write(self, value: Any) -> None:
        out = self.out
        if isinstance(value, str):
            if len(value) <= PIECE_CHARS:
                out.append(self.escape(value))
                return
            out.append('"')
            for start in range(0, len(value), PIECE_CHARS):
                out.append(self.escape(value[start : start + PIECE_CHARS])[1:-1])
            out.append('"')
        elif isinstance(value, _PLAIN):
            out.append(json.dumps(value, **self.options))
        elif not isinstance(value, dict | list | tuple):
            self.write(self.serialize(value))
        elif is_small(value, self.serialize):
            out.append(json.dumps(value, **self.options))
        elif isinstance(value, dict):
            out.append("{")
            for i, (key, item) in enumerate(value.items()):
                if i:
                    out.append(self.item)
                self.write(_key(key))
                out.append(self.key)
                self.write(item)
            out.append("}")
        else:
            out.append("[")
            for i, item in enumerate(value):
                if i:
                    out.append(self.item)
                self.write(item)
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
