"""One big JSON string of a request, decoded as it arrives into a private file (bigframes.py).

`StringDecoder` is fed the raw bytes of a string's content as they are read, from just after its
opening quote. It decodes them with the JSON decoder's own C string scanner, a piece (up to
DECODE_PIECE_BYTES) per call, each piece cut where that scanner would agree: never inside a
UTF-8 sequence or an escape, never between the two escapes of a surrogate pair
(`_whole_units_end`: a few `rfind`s at the piece's end; an exact regex when those find no cut).
So the text, its
length and its sha256 are those of `json.loads` on the whole body; the scanner also finds where
the string ends, with no Python step per escape. A piece costs about a millisecond.

The text goes to a `SpoolFile` (private, unlinked) as UTF-8, and comes back as a `SpooledText`
(a core KeptText) that knows its length, sha256, first and last characters, and reads its pieces
(at most DECODE_PIECE_CHARS characters each) from the file on demand.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from json import decoder as json_decoder
from typing import IO

from tokend.core.text_chunks import KeptText

DECODE_PIECE_BYTES = 256 << 10  # raw bytes decoded in one call (a millisecond or so)
DECODE_PIECE_CHARS = 1 << 20  # the file's pieces, read back one at a time: this many characters
KEEP_EDGE_CHARS = 64 << 10  # the first and last characters kept in memory (previews)
_MAX_ESCAPE = 12  # the longest escape that must not be cut: a surrogate pair, \uD8xx\uDCxx
_MIN_PIECE_BYTES = 2 * (_MAX_ESCAPE + 4)  # a piece always has room for a whole unit
_MAX_RUNS_TRIED = 8  # cuts tried at escapes before the exact (slower) search

# Whole units of a JSON string's raw content from a cut: plain bytes, a simple escape, a \u
# escape (a high surrogate only with its low partner, or before something that cannot be one).
# Where the match stops is a place both halves decode exactly as the whole would.
_WHOLE_UNITS = re.compile(
    rb"""(?:
        [^\\]++
      | \\["\\/bfnrt]
      | \\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}
      | \\u[dD][89abAB][0-9a-fA-F]{2}(?=[^\\]|\\[^u]|\\u(?![dD][c-fC-F])[0-9a-fA-F]{4})
      | \\u(?![dD][89abAB])[0-9a-fA-F]{4}
    )*+""",
    re.VERBOSE,
)
_HIGH_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")
_BACKSLASH = ord("\\")
# The JSON decoder's own string scanner (C): what json.loads decodes each string with.
_scanstring: Callable[[str, int, bool], tuple[str, int]] = json_decoder.scanstring  # type: ignore[attr-defined]


class NotJson(Exception):
    """A big string is not valid JSON text; the message says how, never with its bytes."""


class SpoolFile:
    """A private, already unlinked temporary file: written in order, read at offsets from any
    thread (pread); closed when the last text kept in it is gone."""

    def __init__(self) -> None:
        self._file: IO[bytes] = tempfile.TemporaryFile()  # 0600, no name on Linux
        self.size = 0

    def append(self, data: bytes) -> int:
        offset = self.size
        os.pwrite(self._file.fileno(), data, offset)
        self.size += len(data)
        return offset

    def read(self, offset: int, length: int) -> bytes:
        return os.pread(self._file.fileno(), length, offset)

    def close(self) -> None:
        self._file.close()


class SpooledText(KeptText):
    """A string of a request kept in a SpoolFile, in pieces of (offset, bytes, characters)."""

    _file: SpoolFile
    _pieces: list[tuple[int, int, int]]
    _head: str
    _tail: str

    @classmethod
    def make(
        cls,
        file: SpoolFile,
        pieces: list[tuple[int, int, int]],
        ref: str,
        head: str,
        tail: str,
    ) -> SpooledText:
        chars = sum(n for _, _, n in pieces)
        text = cls(f"[a {chars:,}-character string kept in a file: {ref}]")
        text._file, text._pieces, text.chars, text.ref = file, pieces, chars, ref
        text._head, text._tail = head, tail
        return text

    @property
    def utf8_bytes(self) -> int:
        return sum(size for _, size, _ in self._pieces)

    def head(self, chars: int) -> str:
        if chars <= len(self._head) or len(self._head) == self.chars:
            return self._head[:chars]
        out, have = [], 0
        for piece in self.pieces():
            out.append(piece)
            have += len(piece)
            if have >= chars:
                break
        return "".join(out)[:chars]

    def tail(self, chars: int) -> str:
        if chars <= len(self._tail) or len(self._tail) == self.chars:
            return self._tail[-chars:] if chars else ""
        out: list[str] = []
        have = 0
        for offset, size, count in reversed(self._pieces):
            out.append(self._read(offset, size))
            have += count
            if have >= chars:
                break
        return "".join(reversed(out))[-chars:]

    def pieces(self) -> Iterator[str]:
        for offset, size, _ in self._pieces:
            yield self._read(offset, size)

    def _read(self, offset: int, size: int) -> str:
        return self._file.read(offset, size).decode("utf-8", "surrogatepass")


class StringDecoder:
    """One big string's raw JSON content in, decoded text out to the file.

    `feed` takes the bytes that follow what it had (from just after the opening quote), and
    decodes the longest prefix of them that ends where JSON's decoder would agree (see
    `_whole_units_end`) with the C string scanner, in one call per piece; the rest waits for the
    next piece. When the string's closing quote is in what it decoded, `feed` says where."""

    def __init__(self, file: SpoolFile) -> None:
        self._file = file
        self._carry = b""  # raw bytes after the last cut: an escape or a character in two
        self._sha = hashlib.sha256()
        self._pieces: list[tuple[int, int, int]] = []
        self._head = ""
        self._tail = ""

    def feed(self, data: bytes | bytearray, pos: int = 0) -> int | None:
        """Decode what of `data[pos:]` can be; the index in `data` just after the string's
        closing quote once it is found (the rest is not the string's), else None."""
        carried = len(self._carry)
        buf = self._carry + data[pos:] if carried else bytes(data[pos:])
        start = 0
        while start < len(buf):
            end = min(len(buf), start + max(DECODE_PIECE_BYTES, _MIN_PIECE_BYTES))
            cut = _whole_units_end(buf, start, end)
            if cut == start:
                if end - start <= _MAX_ESCAPE + 4:
                    break  # an escape or a character continues in the next piece
                cut = _utf8_start(buf, start, end)  # no whole unit in so many: not JSON
            closed = self._decode(buf, start, cut)
            if closed is not None:
                return _after(pos, closed - carried)
            start = cut
        self._carry = buf[start:]
        if b'"' in self._carry:  # the closing quote may be in what is left: try it whole
            closed = self._try_carry()
            if closed is not None:
                return _after(pos, start + closed - carried)
        return None

    def _decode(self, buf: bytes, start: int, cut: int) -> int | None:
        """Decode buf[start:cut] (whole units) and write it; if the string closes in it, the
        index in `buf` just after its closing quote."""
        raw = buf[start:cut]
        try:
            content = raw.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError as exc:
            raise NotJson(f"not UTF-8 ({exc.reason})") from None
        try:
            text, end = _scanstring(content + '"', 0, True)
        except ValueError as exc:
            raise NotJson(f"not JSON ({getattr(exc, 'msg', 'a bad string')})") from None
        if end <= len(content):  # the closing quote is in this piece
            closed_at = start + len(content[:end].encode("utf-8", "surrogatepass"))
            self._write(text, None)
            return closed_at
        self._write(text, None if b"\\" in raw else raw)  # no escape: the bytes are the text
        return None

    def _try_carry(self) -> int | None:
        """The carry decoded whole if the string's closing quote is in it (then the index
        after it), else None and the carry is kept as it is."""
        whole = _utf8_start(self._carry, 0, len(self._carry))
        try:
            content = self._carry[:whole].decode("utf-8", "surrogatepass")
            text, end = _scanstring(content + '"', 0, True)
        except ValueError:  # cut short: an escape or a character continues in the next piece
            return None
        if end > len(content):
            return None
        self._write(text, None)
        closed_at = len(content[:end].encode("utf-8", "surrogatepass"))
        self._carry = b""
        return closed_at

    def _write(self, text: str, data: bytes | None) -> None:
        """Append `text` to the file (`data`: its UTF-8 bytes, if already at hand)."""
        if not text:
            return
        if data is None:
            data = text.encode("utf-8", "surrogatepass")
        self._sha.update(data)
        offset = self._file.append(data)
        pieces = self._pieces
        if pieces and pieces[-1][2] + len(text) <= DECODE_PIECE_CHARS:  # contiguous: one piece
            first, size, chars = pieces[-1]
            pieces[-1] = (first, size + len(data), chars + len(text))
        else:
            pieces.append((offset, len(data), len(text)))
        if len(self._head) < KEEP_EDGE_CHARS:
            self._head += text[: KEEP_EDGE_CHARS - len(self._head)]
        if len(text) >= KEEP_EDGE_CHARS:
            self._tail = text[-KEEP_EDGE_CHARS:]
        else:
            self._tail = (self._tail + text)[-KEEP_EDGE_CHARS:]

    def finish(self) -> SpooledText:
        """The text, once the closing quote was found (what is carried is not the string's)."""
        ref = "sha256:" + self._sha.hexdigest()
        return SpooledText.make(self._file, self._pieces, ref, self._head, self._tail)


def _after(pos: int, offset: int) -> int:
    """pos + offset: where the closing quote's next byte is in the piece being fed. Only a body
    that is not JSON can have it before `pos` (an escape cut short, a quote in it)."""
    if offset < 0:
        raise NotJson("not JSON (a string ends inside an escape)")
    return pos + offset


def _whole_units_end(buf: bytes, start: int, end: int) -> int:
    """A cut in buf[start:end], as late as cheaply found, such that buf[start:cut] is whole
    units of a JSON string's content (`start` is one): never inside a UTF-8 sequence or an
    escape, never between the two escapes of a surrogate pair. Bytes past a closing quote may
    be cut anywhere: decoding stops at the quote."""
    cut = _utf8_start(buf, start, end)
    if buf.rfind(b"\\", max(start, cut - 6), cut) == -1:
        return cut  # no escape can cover the six bytes before the cut
    # A backslash not preceded by one starts an escape, and so does every second one of the
    # run it begins: cut at the last of those, unless a high surrogate's escape comes before it.
    limit = cut
    for _ in range(_MAX_RUNS_TRIED):
        last = buf.rfind(b"\\", start, limit)
        if last == -1:
            return limit
        first = last
        if first > start and buf[first - 1] == _BACKSLASH:
            first = start + len(buf[start:last].rstrip(b"\\"))
        cut = first + ((last + 1 - first) & ~1)
        if cut > first or not _HIGH_SURROGATE_ESCAPE.fullmatch(buf, max(start, first - 6), first):
            if cut > start:
                return cut
        if first == start:
            break
        limit = first
    found = _WHOLE_UNITS.match(buf, start, end)
    return _utf8_start(buf, start, found.end()) if found else start


def _utf8_start(buf: bytes, start: int, end: int) -> int:
    """`end`, or the start of the UTF-8 sequence it would cut (never before `start`)."""
    for back in range(1, 5):
        i = end - back
        if i < start:
            return end
        byte = buf[i]
        if byte < 0x80:
            return end
        if byte >= 0xC0:  # a lead byte: 2, 3 or 4 bytes long
            size = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return end if back >= size else i
    return end  # not UTF-8: decoding says so
