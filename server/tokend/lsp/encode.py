"""Big messages to the client encoded a piece at a time, beside the event loop.

A message is first looked at (`is_small`, on the loop, a few microseconds for the usual
reply); a small one is encoded as before. A big one (a `context/assemble` with an 8 MB
`system`, a file's unsaved text: json.dumps held the interpreter 54 ms for 8 MB, every
connection of the daemon waiting) is encoded by `encode_message` in a worker thread, a piece
at a time (core/json_text.py), so that the loop gets the interpreter back within its switch
interval. The bytes are those `json.dumps(message, allow_nan=False)` writes (ASCII, ", " and
": " separators).
"""

from __future__ import annotations

from typing import Any

from tokend.core.json_text import Serialize, dumps, is_small

__all__ = ["encode_message", "is_small"]


def encode_message(value: Any, serialize: Serialize) -> bytes:
    """`value` as `json.dumps(value, default=serialize, allow_nan=False).encode()` writes it,
    built from small pieces (call it off the loop). ValueError for NaN or Infinity."""
    return dumps(value, serialize).encode("ascii")
