"""LSP framing for the client library: `Content-Length: N\\r\\n\\r\\n` + a UTF-8 JSON body."""

from __future__ import annotations

import json
from typing import Any

MAX_HEADER_BYTES = 8 << 10


class FrameError(ValueError):
    """The daemon sent something that is not an LSP frame."""


def encode(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class FrameReader:
    """Bytes in, whole messages out (feed what the socket gave; take the complete messages)."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self._buffer += data
        messages: list[dict[str, Any]] = []
        while True:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buffer) > MAX_HEADER_BYTES:
                    raise FrameError("a frame header over 8 KiB")
                return messages
            length = _content_length(bytes(self._buffer[:end]))
            if len(self._buffer) < end + 4 + length:
                return messages
            body = bytes(self._buffer[end + 4 : end + 4 + length])
            del self._buffer[: end + 4 + length]
            messages.append(json.loads(body))


def _content_length(header: bytes) -> int:
    for line in header.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    raise FrameError(f"a frame without Content-Length: {header[:200]!r}")
