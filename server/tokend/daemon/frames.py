"""LSP frames off a socket: headers checked strictly, bodies bounded, oversized bodies skipped.

A frame is header lines (`Content-Length: N`, optionally `Content-Type: ...`, each ending in
CRLF), an empty line, and N bytes of body. Anything else means the byte stream can no longer be
split into messages: `BrokenFraming`, after which the connection must close (a bad *body* in a
good frame is the dispatcher's business, and the connection lives on).

A body over SPOOL_ABOVE_BYTES (after authentication) is never held whole either: it is parsed
as it arrives (bigframes.py), its strings over 64 KiB going to a private temporary file, so
that a 100 MB tool output costs the daemon a few MB. Such a body may be up to
MAX_STREAMED_BYTES long, as long as what is left of it without those strings fits the limit.

A body over the limit is never held in memory: `read_frame` either stops (before
authentication: the caller closes) or reads it through in small pieces, keeping only its
top-level `id` and `method` so that the request can be answered with an error.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from tokend.daemon.bigframes import BodyScanner, SpooledStrings
from tokend.daemon.jsonscan import TopLevelFields

MAX_HEADER_LINES = 8
MAX_HEADER_LINE_BYTES = 1024
SKIP_PIECE_BYTES = 16 << 10  # an oversized body is read and scanned this much at a time
SPOOL_ABOVE_BYTES = 4 << 20  # a longer body is parsed as it arrives, big strings to a file
MAX_STREAMED_BYTES = 512 << 20  # the longest body read at all (its big strings in a file)
STREAM_PIECE_BYTES = 256 << 10

_HEADER_NAME = re.compile(rb"[A-Za-z0-9-]+")
_LENGTH = re.compile(rb"[0-9]{1,15}")


class BrokenFraming(Exception):
    """The stream is not LSP frames (any more); the message says how, never with its bytes."""


@dataclass(frozen=True)
class Body:
    """A frame's body; for a big one, the body without its big strings, and those strings."""

    data: bytes
    spooled: SpooledStrings | None = None


@dataclass(frozen=True)
class Oversized:
    """A frame whose body is over the limit: `skipped` if it was read through (and scanned)."""

    length: int
    limit: int
    skipped: bool
    msg_id: int | str | None = None
    method: str | None = None


async def read_frame(
    reader: asyncio.StreamReader,
    max_body_bytes: int,
    *,
    skip_oversized: bool,
    spool_above: int = SPOOL_ABOVE_BYTES,
    max_streamed_bytes: int = MAX_STREAMED_BYTES,
) -> Body | Oversized | None:
    """The next frame; None at a clean end of stream. Raises BrokenFraming. With
    `skip_oversized` (an authenticated connection), a body over `spool_above` is parsed as it
    arrives (see the module docstring)."""
    length = await _read_headers(reader)
    if length is None:
        return None
    if skip_oversized and spool_above < length <= max_streamed_bytes:
        return await _stream_body(reader, length, max_body_bytes)
    if length <= max_body_bytes:
        try:
            return Body(await reader.readexactly(length))
        except asyncio.IncompleteReadError:
            raise BrokenFraming("the stream ended inside a body") from None
    if not skip_oversized:
        return Oversized(length, max_body_bytes, skipped=False)
    fields = await _skip_body(reader, length)
    return Oversized(length, max_body_bytes, True, fields.msg_id, fields.method)


async def _read_headers(reader: asyncio.StreamReader) -> int | None:
    length: int | None = None
    for count in range(MAX_HEADER_LINES + 1):
        try:
            line = await reader.readline()
        except ValueError:  # a line over the stream's limit
            raise BrokenFraming("a header line is too long") from None
        if not line:
            if count == 0:
                return None
            raise BrokenFraming("the stream ended inside a header")
        if not line.endswith(b"\n") or len(line) > MAX_HEADER_LINE_BYTES:
            raise BrokenFraming("a header line is too long or cut")
        line = line.rstrip(b"\r\n")
        if not line:
            if length is None:
                raise BrokenFraming("a frame has no Content-Length header")
            return length
        name, colon, value = line.partition(b":")
        if not colon or not _HEADER_NAME.fullmatch(name):
            raise BrokenFraming("a line where a header was due is not `Name: value`")
        if name.lower() == b"content-length":
            if length is not None or not _LENGTH.fullmatch(value.strip()):
                raise BrokenFraming("Content-Length is repeated or not a number")
            length = int(value.strip())
    raise BrokenFraming(f"more than {MAX_HEADER_LINES} header lines")


async def _stream_body(reader: asyncio.StreamReader, length: int, limit: int) -> Body | Oversized:
    """Read a big body through a BodyScanner: its skeleton and spooled strings, or Oversized
    (read through, with its id and method) when the skeleton passes `limit`."""
    scanner = BodyScanner(limit)
    remaining = length
    while remaining:
        piece = await reader.read(min(remaining, STREAM_PIECE_BYTES))
        if not piece:
            raise BrokenFraming("the stream ended inside a body")
        remaining -= len(piece)
        scanner.feed(piece)
        await asyncio.sleep(0)  # other connections are served between the pieces
    if scanner.too_large:
        fields = scanner.fields
        return Oversized(length, limit, True, fields.msg_id, fields.method)
    return Body(bytes(scanner.skeleton), scanner.finish(length))


async def _skip_body(reader: asyncio.StreamReader, length: int) -> TopLevelFields:
    """Read `length` bytes and drop them, scanning them for the top-level id and method."""
    fields = TopLevelFields()
    remaining = length
    while remaining:
        piece = await reader.read(min(remaining, SKIP_PIECE_BYTES))
        if not piece:
            raise BrokenFraming("the stream ended inside a body")
        remaining -= len(piece)
        if fields.wants_more:
            fields.feed(piece)
        await asyncio.sleep(0)  # other connections are served between the pieces
    return fields
