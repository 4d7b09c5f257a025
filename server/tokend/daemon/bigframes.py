"""Big frames, read as they arrive: big strings to a private file, the rest parsed as usual.

A body over frames.SPOOL_ABOVE_BYTES is never held whole. `BodyScanner` reads its bytes piece by
piece: everything outside strings, and every string of at most DIVERT_BYTES raw bytes, is kept
(the "skeleton"); a longer string is decoded as it arrives into a private temporary file (as
UTF-8), its length in characters, its sha256 and its first and last characters taken on the
way, and the skeleton gets a placeholder in its place. The skeleton is then parsed like any
body (dispatch.py), and `SpooledStrings.resolve` puts each placeholder back:

- a toolResult's `output` in `session/append` becomes a `SpooledText` (a core KeptText): the
  tool-output gate keeps a preview, and the store copies the rest from the file in pieces;
- any other is read back whole, and counts with the skeleton against the limit of a whole frame.

A big string is decoded by the JSON decoder's own C string scanner, a piece (up to
DECODE_PIECE_BYTES) per call, each piece cut where that scanner would agree: never inside a
UTF-8 sequence or an escape, never between the two escapes of a surrogate pair. So the text, its
length and its sha256 are those of `json.loads` on the whole body, and the scanner also finds
where the string ends (no Python step per escape). A piece costs about a millisecond, and the
reader lets the loop serve other connections between pieces (frames.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import secrets
import tempfile
from collections.abc import Callable, Iterator
from json import decoder as json_decoder
from typing import IO, Any

from tokend.core.text_chunks import KeptText
from tokend.daemon.jsonscan import STRING_REST, TopLevelFields

DIVERT_BYTES = 64 << 10  # a string longer than this (raw JSON bytes) goes to the file
DECODE_PIECE_BYTES = 256 << 10  # raw bytes decoded in one call (a millisecond or so)
DECODE_PIECE_CHARS = 1 << 20  # the file's pieces, read back one at a time: this many characters
KEEP_EDGE_CHARS = 64 << 10  # the first and last characters kept in memory (previews)
_MAX_ESCAPE = 12  # the longest escape that must not be cut: a surrogate pair, \uD8xx\uDCxx
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
_MARK = "\x00tokend-big-string:"


class BodyTooLarge(Exception):
    """The message without its tool outputs (or with strings read back) is over the limit."""


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


class _StringDecoder:
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
            end = min(len(buf), start + DECODE_PIECE_BYTES)
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


class BodyScanner:
    """Feed a body's bytes in order (`feed`), then `finish`: the skeleton and its big strings.

    At most `skeleton_limit` bytes of skeleton are kept; past that `too_large` is set, nothing
    more is kept or written, and only the top-level id and method are still looked for
    (`fields`).
    """

    def __init__(self, skeleton_limit: int) -> None:
        self.skeleton = bytearray()
        self.too_large = False
        self.fields = TopLevelFields()  # fed only once the skeleton is too large
        self.problem: str | None = None  # set when a big string is not valid JSON text
        self._limit = skeleton_limit
        self._nonce = secrets.token_hex(8)
        self._strings: list[SpooledText] = []
        self._file: SpoolFile | None = None
        self._in_string = False
        self._escape_pending = False
        self._raw = bytearray()  # the current string while it is short
        self._decoder: _StringDecoder | None = None

    def feed(self, data: bytes) -> None:
        pos, end = 0, len(data)
        while pos < end:
            if self._decoder is not None:  # inside a big string: the decoder finds its end
                closed = self._feed_decoder(data, pos)
                if closed is None:
                    return
                self._close_string()
                self._in_string, pos = False, closed
                continue
            if not self._in_string:
                quote = data.find(b'"', pos)
                if quote == -1:
                    self._keep(data[pos:])
                    return
                self._keep(data[pos:quote])
                self._in_string, pos = True, quote + 1
                continue
            if self._escape_pending:
                self._escape_pending = False
                self._add(data[pos : pos + 1])
                pos += 1
                continue
            # Past DIVERT_BYTES the string goes to the decoder: no need to look further here.
            short_of = min(end, pos + DIVERT_BYTES + 1 - len(self._raw))
            stop = STRING_REST.match(data, pos, short_of).end()  # type: ignore[union-attr]
            self._add(data[pos:stop])
            if stop == end:
                return
            if stop == short_of:  # not closed yet, and now a big string
                pos = stop
                continue
            if data[stop] == _BACKSLASH:  # the piece ends inside an escape
                self._escape_pending = True  # (unless the string goes to the decoder now)
                self._add(b"\\")
                pos = stop + 1
                continue
            self._close_string()
            self._in_string, pos = False, stop + 1

    def finish(self, body_bytes: int) -> SpooledStrings:
        return SpooledStrings(
            _MARK + self._nonce + ":", self._strings, len(self.skeleton), body_bytes, self.problem
        )

    def _add(self, raw: bytes) -> None:
        self._raw += raw
        if len(self._raw) > DIVERT_BYTES and not self.too_large and self.problem is None:
            if self._file is None:
                self._file = SpoolFile()
            self._decoder = _StringDecoder(self._file)
            self._escape_pending = False  # the decoder carries an escape cut short itself
        elif len(self._raw) > DIVERT_BYTES:
            self._raw.clear()  # nothing is kept any more: only the envelope is looked for

    def _feed_decoder(self, data: bytes, pos: int) -> int | None:
        """The big string's bytes from data[pos:] (and first what was read of it before) to
        its decoder; the index just after its closing quote, once found."""
        assert self._decoder is not None
        if self._raw:
            raw_so_far, self._raw = bytes(self._raw), bytearray()
            closed = self._decode_or_problem(raw_so_far, 0)
            if closed is not None:  # not JSON: a big string closed in its first bytes
                self.problem = self.problem or "not JSON (a string ends inside an escape)"
        if self.too_large or self.problem is not None:
            return self._skip_string(data, pos)
        return self._decode_or_problem(data, pos)

    def _decode_or_problem(self, data: bytes, pos: int) -> int | None:
        assert self._decoder is not None
        try:
            return self._decoder.feed(data, pos)
        except NotJson as exc:
            self.problem = str(exc)
            return None

    def _skip_string(self, data: bytes, pos: int) -> int | None:
        """Nothing more is kept: the big string's end found by the regex, as for short ones."""
        while pos < len(data):
            if self._escape_pending:
                self._escape_pending, pos = False, pos + 1
                continue
            stop = STRING_REST.match(data, pos).end()  # type: ignore[union-attr]
            if stop == len(data):
                return None
            if data[stop] == _BACKSLASH:
                self._escape_pending, pos = True, stop + 1
                continue
            return stop + 1
        return None

    def _close_string(self) -> None:
        decoder, self._decoder = self._decoder, None
        if decoder is None:
            self._keep(b'"' + self._raw + b'"')
            self._raw.clear()
            return
        self._raw.clear()
        if self.too_large or self.problem is not None:
            self._keep(b'""')
            return
        placeholder = f"{_MARK[1:]}{self._nonce}:{len(self._strings)}".encode()
        self._keep(b'"\\u0000' + placeholder + b'"')
        self._strings.append(decoder.finish())

    def _keep(self, data: bytes | bytearray) -> None:
        if self.too_large:
            if self.fields.wants_more:
                self.fields.feed(bytes(data))
            return
        self.skeleton += data
        if len(self.skeleton) > self._limit:
            self.too_large = True
            self._strings.clear()
            self.fields.feed(bytes(self.skeleton))
            self.skeleton = bytearray()


class SpooledStrings:
    """The big strings of one body and how to put them back into its parsed skeleton."""

    def __init__(
        self,
        mark: str,
        strings: list[SpooledText],
        skeleton_bytes: int,
        body_bytes: int,
        problem: str | None = None,
    ) -> None:
        self.body_bytes = body_bytes  # the whole body's length, as its frame said
        self.problem = problem  # a big string was not valid JSON text: the body is not JSON
        self._mark = mark
        self._strings = strings
        self._skeleton_bytes = skeleton_bytes

    def __len__(self) -> int:
        return len(self._strings)

    def resolve(self, message: Any, limit: int) -> Any:
        """`message` with every placeholder put back (see the module docstring). Raises
        BodyTooLarge when the skeleton plus the strings read back pass `limit` bytes."""
        left = self._attach_outputs(message)
        if not left:
            return message
        texts = {i: "".join(self._strings[i].pieces()) for i in self._within(left, limit)}
        return self._read_back(message, texts)

    async def resolve_async(self, message: Any, limit: int) -> Any:
        """`resolve`, the strings read back a piece at a time: the event loop serves other
        connections between the pieces."""
        left = self._attach_outputs(message)
        if not left:
            return message
        texts = {}
        for i in self._within(left, limit):
            pieces = []
            for piece in self._strings[i].pieces():
                pieces.append(piece)
                await asyncio.sleep(0)
            texts[i] = "".join(pieces)
        return self._read_back(message, texts)

    def _attach_outputs(self, message: Any) -> list[int]:
        """Tool results' outputs become their SpooledTexts; the strings left to read back."""
        left = set(range(len(self._strings)))
        for part in _append_parts(message):
            index = self._index(part.get("output"))
            if index is not None and part.get("type") == "toolResult":
                part["output"] = self._strings[index]
                left.discard(index)
        return sorted(left)

    def _within(self, left: list[int], limit: int) -> list[int]:
        """`left`, if the skeleton and they fit `limit` bytes; else BodyTooLarge."""
        if self._skeleton_bytes + sum(self._strings[i].utf8_bytes for i in left) > limit:
            raise BodyTooLarge("the message's strings other than tool outputs are too large")
        return left

    def _index(self, value: Any) -> int | None:
        if isinstance(value, str) and value.startswith(self._mark):
            return int(value[len(self._mark) :])
        return None

    def _read_back(self, root: Any, texts: dict[int, str]) -> Any:
        """Every remaining placeholder, in values and keys, replaced by its text (iteratively:
        the skeleton may nest as deep as the JSON parser allowed)."""

        def fix(value: Any) -> Any:
            index = self._index(value)
            if index is None or isinstance(value, SpooledText):
                return value
            return texts[index]

        root = fix(root)
        stack = [root]
        while stack:
            node = stack.pop()
            if isinstance(node, list):
                for i, item in enumerate(node):
                    node[i] = fix(item)
                    stack.append(node[i])
            elif isinstance(node, dict):
                if any(self._index(k) is not None for k in node):
                    items = [(fix(k), v) for k, v in node.items()]
                    node.clear()
                    node.update(items)
                for key, item in node.items():
                    node[key] = fix(item)
                    stack.append(node[key])
        return root


def _append_parts(message: Any) -> list[dict[str, Any]]:
    """The parts of a session/append request, if it is one (else none)."""
    if not isinstance(message, dict) or message.get("method") != "session/append":
        return []
    params = message.get("params")
    inner = params.get("message") if isinstance(params, dict) else None
    parts = inner.get("parts") if isinstance(inner, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
