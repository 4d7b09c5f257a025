"""Big frames, read as they arrive: big strings to a private file, the rest parsed as usual.

A body over frames.SPOOL_ABOVE_BYTES is never held whole. `BodyScanner` reads its bytes piece by
piece: everything outside strings, and every string of at most DIVERT_BYTES raw bytes, is kept
(the "skeleton"); a longer string is decoded as it arrives into a private temporary file (as
UTF-8), its length in characters, its sha256 and its first and last characters taken on the
way, and the skeleton gets a placeholder in its place. The skeleton is then parsed like any
body (dispatch.py), and `SpooledStrings.resolve` (spooled_strings.py) puts each placeholder back:

- a toolResult's `output` in `session/append` becomes a `SpooledText` (a core KeptText): the
  tool-output gate keeps a preview, and the store copies the rest from the file in pieces;
- any other is read back whole, and counts with the skeleton against the limit of a whole frame.

A big string is decoded by bigstrings.StringDecoder (the JSON decoder's own C string scanner, a
piece of about a millisecond per call), which also finds where the string ends; the reader lets
the loop serve other connections between pieces (frames.py), and strings read back are read a
piece at a time the same way (`resolve_async`).
"""

from __future__ import annotations

import secrets

from tokend.daemon.bigstrings import NotJson, SpooledText, SpoolFile, StringDecoder
from tokend.daemon.jsonscan import STRING_REST, TopLevelFields
from tokend.daemon.spooled_strings import BodyTooLarge, SpooledStrings

__all__ = ["BodyScanner", "BodyTooLarge", "SpooledStrings", "SpooledText"]

DIVERT_BYTES = 64 << 10  # a string longer than this (raw JSON bytes) goes to the file
_MARK = "\x00tokend-big-string:"
_BACKSLASH = ord("\\")


def _masked_escaped_quotes(data: bytes) -> bytes:
    """`data`, as long, with every escaped quote made a NUL, so that its quotes are the
    strings' own. The piece starts at a unit boundary (not inside an escape), so pairing its
    backslashes left to right is JSON's own pairing: once the pairs are masked, a backslash
    left before a quote escapes it."""
    if b'\\"' not in data:
        return data
    return data.replace(b"\\\\", b"\x01\x01").replace(b'\\"', b"\x01\x00")


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
        self._decoder: StringDecoder | None = None

    def feed(self, data: bytes) -> None:
        if self._escape_pending and self._decoder is None and data:  # the escaped byte first
            self._escape_pending = False
            self._add(data[:1])
            data = data[1:]
        if self._decoder is None and not self._escape_pending:
            whole = len(data.rstrip(b"\\"))  # trailing backslashes: their escapes may go on
            if self._feed_short(data[:whole] if whole < len(data) else data):
                if whole == len(data):
                    return
                data = data[whole:]
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

    def _feed_short(self, data: bytes) -> bool:
        """A piece whose strings are all short, kept in a few steps (C speed: no Python step per
        string, only one per escaped quote); False, with nothing done, if a string in it may be
        long (or the piece ends inside an escape). Escaped quotes masked, every quote opens or
        closes a string, so the bytes between quotes are by turns a string's content and what
        lies between strings."""
        if data.endswith(b"\\"):
            return False
        quotes = _masked_escaped_quotes(data)
        parts = quotes.split(b'"')
        first = 0 if self._in_string else 1  # the parts that are strings' contents
        if max(map(len, parts[first::2]), default=0) > DIVERT_BYTES or (
            self._in_string and len(self._raw) + len(parts[0]) > DIVERT_BYTES
        ):
            return False
        ends_inside = self._in_string != (len(parts) % 2 == 0)  # an odd number of quotes flips
        if len(parts) == 1:  # no quote: all of it in the string, or all between strings
            if self._in_string:
                self._raw += data
            else:
                self._keep(data)
            return True
        start = 0
        if self._in_string:  # the string that was open closes at the first quote
            self._raw += data[: len(parts[0])]
            self._close_string()
            start = len(parts[0]) + 1
        stop = quotes.rfind(b'"') if ends_inside else len(data)
        self._keep(data[start:stop])
        self._in_string = ends_inside
        if ends_inside:
            self._raw += data[stop + 1 :]
        return True

    def finish(self, body_bytes: int) -> SpooledStrings:
        return SpooledStrings(
            _MARK + self._nonce + ":", self._strings, len(self.skeleton), body_bytes, self.problem
        )

    def _add(self, raw: bytes) -> None:
        self._raw += raw
        if len(self._raw) > DIVERT_BYTES and not self.too_large and self.problem is None:
            if self._file is None:
                self._file = SpoolFile()
            self._decoder = StringDecoder(self._file)
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
