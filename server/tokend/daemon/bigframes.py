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

A string is decoded in pieces cut where JSON's own decoder would agree: never inside an escape,
never between the two escapes of a surrogate pair (UTF-8 sequences are joined by an incremental
decoder), so the text, its length and its sha256 are those of `json.loads` on the whole body.
"""

from __future__ import annotations

import codecs
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
DECODE_PIECE_CHARS = 1 << 20  # decoded and written this much at a time
KEEP_EDGE_CHARS = 64 << 10  # the first and last characters kept in memory (previews)
_MAX_ESCAPE = 12  # the longest escape that must not be cut: a surrogate pair, \uD8xx\uDCxx

# Whole units of a JSON string's content from a cut: plain text, a simple escape, a \u escape
# (a high surrogate only with its low partner, or before something that cannot be one). Where
# the match stops is a place both halves decode exactly as the whole would.
_WHOLE_UNITS = re.compile(
    r"""(?:
        [^\\]++
      | \\["\\/bfnrt]
      | \\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}
      | \\u[dD][89abAB][0-9a-fA-F]{2}(?=[^\\]|\\[^u]|\\u(?![dD][c-fC-F])[0-9a-fA-F]{4})
      | \\u(?![dD][89abAB])[0-9a-fA-F]{4}
    )*+""",
    re.VERBOSE,
)
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
    """One big string's raw JSON content in, decoded text out to the file."""

    def __init__(self, file: SpoolFile) -> None:
        self._file = file
        self._utf8 = codecs.getincrementaldecoder("utf-8")("surrogatepass")
        self._pending = ""  # decoded from UTF-8, escapes not yet resolved
        self._sha = hashlib.sha256()
        self._pieces: list[tuple[int, int, int]] = []
        self._head = ""
        self._tail = ""

    def feed(self, raw: bytes | bytearray, final: bool = False) -> None:
        try:
            self._pending += self._utf8.decode(raw, final)
        except UnicodeDecodeError as exc:
            raise NotJson(f"not UTF-8 ({exc.reason})") from None
        while len(self._pending) >= DECODE_PIECE_CHARS + _MAX_ESCAPE or (final and self._pending):
            match = _WHOLE_UNITS.match(self._pending, 0, DECODE_PIECE_CHARS + _MAX_ESCAPE)
            cut = match.end() if match else 0
            if final and len(self._pending) <= DECODE_PIECE_CHARS + _MAX_ESCAPE:
                cut = len(self._pending)
            elif cut < DECODE_PIECE_CHARS:  # an escape JSON does not have: decoding says so
                cut = min(len(self._pending), DECODE_PIECE_CHARS + _MAX_ESCAPE)
            self._write(self._pending[:cut])
            self._pending = self._pending[cut:]

    def _write(self, content: str) -> None:
        try:
            text, _ = _scanstring(content + '"', 0, True)
        except ValueError as exc:
            raise NotJson(f"not JSON ({getattr(exc, 'msg', 'a bad string')})") from None
        data = text.encode("utf-8", "surrogatepass")
        self._sha.update(data)
        self._pieces.append((self._file.append(data), len(data), len(text)))
        if len(self._head) < KEEP_EDGE_CHARS:
            self._head += text[: KEEP_EDGE_CHARS - len(self._head)]
        self._tail = (self._tail + text)[-KEEP_EDGE_CHARS:]

    def finish(self) -> SpooledText:
        self.feed(b"", final=True)
        ref = "sha256:" + self._sha.hexdigest()
        return SpooledText.make(self._file, self._pieces, ref, self._head, self._tail)


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
            stop = STRING_REST.match(data, pos).end()  # type: ignore[union-attr]  # always matches
            self._add(data[pos:stop])
            if stop == end:
                return
            if data[stop] == _BACKSLASH:  # the piece ends inside an escape
                self._add(b"\\")
                self._escape_pending = True
                pos = stop + 1
                continue
            self._close_string()
            self._in_string, pos = False, stop + 1

    def finish(self, body_bytes: int) -> SpooledStrings:
        return SpooledStrings(
            _MARK + self._nonce + ":", self._strings, len(self.skeleton), body_bytes, self.problem
        )

    def _add(self, raw: bytes) -> None:
        if self._decoder is not None:
            self._feed_decoder(raw)
            return
        self._raw += raw
        if len(self._raw) > DIVERT_BYTES and not self.too_large and self.problem is None:
            if self._file is None:
                self._file = SpoolFile()
            self._decoder = _StringDecoder(self._file)
            raw_so_far, self._raw = self._raw, bytearray()
            self._feed_decoder(raw_so_far)
        elif len(self._raw) > DIVERT_BYTES:
            self._raw.clear()  # nothing is kept any more: only the envelope is looked for

    def _feed_decoder(self, raw: bytes | bytearray) -> None:
        assert self._decoder is not None
        if self.too_large or self.problem is not None:
            return
        try:
            self._decoder.feed(raw)
        except NotJson as exc:
            self.problem = str(exc)

    def _close_string(self) -> None:
        decoder, self._decoder = self._decoder, None
        if decoder is None:
            self._keep(b'"' + self._raw + b'"')
            self._raw.clear()
            return
        if self.too_large or self.problem is not None:
            self._keep(b'""')
            return
        try:
            text = decoder.finish()
        except NotJson as exc:
            self.problem = str(exc)
            self._keep(b'""')
            return
        placeholder = f"{_MARK[1:]}{self._nonce}:{len(self._strings)}".encode()
        self._keep(b'"\\u0000' + placeholder + b'"')
        self._strings.append(text)

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
        if not self._strings:
            return message
        left = set(range(len(self._strings)))
        for part in _append_parts(message):
            index = self._index(part.get("output"))
            if index is not None and part.get("type") == "toolResult":
                part["output"] = self._strings[index]
                left.discard(index)
        if left:
            budget = [limit - self._skeleton_bytes]
            message = self._read_back(message, budget)
        return message

    def _index(self, value: Any) -> int | None:
        if isinstance(value, str) and value.startswith(self._mark):
            return int(value[len(self._mark) :])
        return None

    def _read_back(self, root: Any, budget: list[int]) -> Any:
        """Every remaining placeholder, in values and keys, replaced by its text (iteratively:
        the skeleton may nest as deep as the JSON parser allowed)."""

        def fix(value: Any) -> Any:
            index = self._index(value)
            if index is None or isinstance(value, SpooledText):
                return value
            budget[0] -= self._strings[index].utf8_bytes
            if budget[0] < 0:
                raise BodyTooLarge("the message's strings other than tool outputs are too large")
            return "".join(self._strings[index].pieces())

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
