"""An editor's buffer kept in pieces, so that an incremental change costs its piece, not the
whole text.

LSP's `textDocument/didChange` sends edits as ranges of (line, character) positions. Applied to
one string (pygls splits the whole text into lines for each one), an edit of an 8.7 MB buffer
cost 249 ms. Here the text is a list of pieces of about PIECE_CHARS characters, each ending
with a line break (the last one excepted), with the line breaks of each counted: a position is
found by walking the pieces' counts, then the lines of one piece, and an edit rebuilds the
pieces it touches.

Positions follow LSP: lines end at "\\n", "\\r\\n" or "\\r" (nothing else); `character` counts
code units of the negotiated encoding ("utf-16" by default, "utf-8" or "utf-32"); a character
past the line's end means its end, a line past the last line means the end of the text, and a
position inside a character (half of a surrogate pair) means the character's end.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

PIECE_CHARS = 64 << 10
LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the text from `start` to `end`, each a (line, character) position, by `text`;
    no range (`start` None): the whole text is `text`."""

    text: str
    start: tuple[int, int] | None = None
    end: tuple[int, int] | None = None


class DocumentText:
    """A buffer's text in pieces; `apply` edits it, `text` joins it."""

    def __init__(self, text: str, encoding: str = "utf-16") -> None:
        self._encoding = encoding
        self._pieces: list[str] = []
        self._breaks: list[int] = []
        self._reset(text)

    def text(self) -> str:
        return "".join(self._pieces)

    def apply(self, edits: Iterable[Edit]) -> None:
        """Apply `edits` in order."""
        for edit in edits:
            if edit.start is None or edit.end is None:
                self._reset(edit.text)
            else:
                self._replace(edit.start, edit.end, edit.text)

    def _reset(self, text: str) -> None:
        self._pieces = _split(text) or [""]
        self._breaks = [_count_breaks(piece) for piece in self._pieces]

    def _replace(self, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
        first, at = self._locate(*start)
        last, until = self._locate(*end)
        if (last, until) < (first, at):  # a reversed range: the same span
            (first, at), (last, until) = (last, until), (first, at)
        merged = self._pieces[first][:at] + text + self._pieces[last][until:]
        if last + 1 < len(self._pieces) and not merged.endswith("\n"):
            last += 1  # every piece but the last ends with a line break: join the next one
            merged += self._pieces[last]
        pieces = _split(merged)
        if not pieces and len(self._pieces) == last - first + 1:
            pieces = [""]
        self._pieces[first : last + 1] = pieces
        self._breaks[first : last + 1] = [_count_breaks(piece) for piece in pieces]

    def _locate(self, line: int, character: int) -> tuple[int, int]:
        """(piece, index in it) of a position, clamped as LSP says."""
        before = 0
        for index, breaks in enumerate(self._breaks):
            if line < before + breaks or index == len(self._breaks) - 1:
                return index, self._in_piece(index, line - before, character)
            before += breaks
        raise AssertionError("a text has at least one piece")

    def _in_piece(self, index: int, line: int, character: int) -> int:
        piece = self._pieces[index]
        start = 0
        for found, match in enumerate(LINE_BREAK.finditer(piece)):
            if found == line:
                return start + _code_points(piece[start : match.start()], character, self._encoding)
            start = match.end()
        if line > self._breaks[index]:  # past the last line: the end of the text
            return len(piece)
        return start + _code_points(piece[start:], character, self._encoding)


def _split(text: str) -> list[str]:
    """`text` in pieces of about PIECE_CHARS, each ending with "\\n" but the last; [] for ""."""
    pieces: list[str] = []
    start = 0
    while len(text) - start > PIECE_CHARS:
        cut = text.find("\n", start + PIECE_CHARS - 1)
        if cut < 0 or cut == len(text) - 1:
            break
        pieces.append(text[start : cut + 1])
        start = cut + 1
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def _count_breaks(piece: str) -> int:
    return piece.count("\n") + piece.count("\r") - piece.count("\r\n")


def _code_points(line: str, units: int, encoding: str) -> int:
    """How many characters of `line` (without its break) `units` code units cover: at most
    the line, and a character `units` ends inside of counts whole."""
    if units <= 0:
        return 0
    if encoding == "utf-32" or line.isascii():
        return min(units, len(line))
    seen = 0
    for index, char in enumerate(line):
        if seen >= units:
            return index
        point = ord(char)
        if encoding == "utf-8":
            seen += 1 if point < 0x80 else 2 if point < 0x800 else 3 if point < 0x10000 else 4
        else:
            seen += 2 if point >= 0x10000 else 1
    return len(line)
