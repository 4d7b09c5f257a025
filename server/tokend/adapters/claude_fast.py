"""tokend's own counting path over ctok's vocabulary and rules: the same count, ~10x sooner.

ctok counts a text in two passes, both pure Python: the text becomes a *marked stream* (words
bracketed by boundary markers, case written as markers) and the stream is tiled with the fewest
vocabulary pieces (a shortest-path DP over a trie). This module computes the same number from
the same vocabulary, rules and DP, arranged so that most of the work is looked up, not redone:

1. **Lines.** The normalized text is cut right after a line break that an ASCII letter follows
   (and once the part before holds a character other than a line break). At such a cut the
   marked stream of the whole is the stream of the part before, its trailing line breaks, then
   the stream of the part after: the cut lies between two runs of different classes (space and
   letter), so no run spans it; the run after it is a word, which writes its own boundary marker
   and is no contraction's tail; ctok's seam rewrite needs a space, not a line break, before a
   word. Each part's stream is computed once per distinct part (code and logs repeat lines).
2. **ASCII parts** are streamed by `ascii_stream`, ctok's `stream_norm` written out for the
   four classes ASCII text has after normalization (letters, digits, ASCII punctuation and
   symbols, tab/line break/space); case marking is ctok's own `mark_case`, remembered per word.
   Any other part goes through ctok's `stream_norm` itself.
3. **Segments.** The stream is cut between every two adjacent characters that occur adjacently
   in no vocabulary piece (no piece can span such a cut, and a character alone always has its
   own edge), so the fewest pieces over the whole is the sum over the segments. Segments are
   short (~4 characters on real text) and repeat; each distinct segment is tiled by ctok's
   `min_vocab_tile` once.

Counts are identical to ctok's (tests/adapters/test_counting_claude_fast.py checks the 400 recorded
probes per family, real files and stream equality on every line of them).
"""

from __future__ import annotations

import operator
import re
import string
from collections.abc import Iterator
from hashlib import blake2b
from itertools import compress, islice
from operator import itemgetter
from typing import Any

from ctok.constants import (
    BOW_G,
    CAPS_G,
    CONTRACTION_SUFFIXES,
    EOW_G,
    MARKER_GLYPHS,
    SHIFT_G,
)
from ctok.engine import char_cost, frame_tail, min_vocab_tile
from ctok.normalize import nfc, raw_head_space, stream_norm

_WORD, _DIGIT, _SPACE, _PUNCT = 1, 2, 3, 4
_ASCII_RUN = re.compile(r"[A-Za-z]+|[0-9]+|[\t\n ]+|[!-/:-@\[-`{-~]+")
"""The runs of normalized ASCII text by ctok's classes: control characters other than tab and
line break are gone after normalization, NUL is a space."""
_KIND = {
    **dict.fromkeys(string.ascii_letters, _WORD),
    **dict.fromkeys(string.digits, _DIGIT),
    **dict.fromkeys("\t\n ", _SPACE),
    **dict.fromkeys(string.punctuation, _PUNCT),
}
_SEAM_SPACE = re.compile("(?<=[^\n]" + EOW_G + ") (?=[" + SHIFT_G + CAPS_G + "]*" + BOW_G + ")")
"""ctok's seam: a single space between a word's closing marker and the next one's opening
marker is not written (the markers stand for it)."""
_NOT_STREAMABLE = re.compile(r"[^\t\n -~]")
_LINE_CUT = re.compile(r"(?<=\n)(?=[^\n])")


def _lines(body: str) -> list[tuple[bool, str]]:
    """`body` cut right after each line break a character other than a line break follows, with
    whether each line is the message's head (line breaks alone at the head join the next line)."""
    lines = _LINE_CUT.split(body)
    if len(lines) > 1 and not lines[0].strip("\n"):
        lines[1] = lines[0] + lines[1]
        del lines[0]
    return [(i == 0, line) for i, line in enumerate(lines)]


MEMO_LIMIT = 100_000
"""Entries each memo holds before it starts over (bounds memory on endless distinct text)."""
LINE_MEMO_CHARS = 400
"""Lines up to this long are remembered by their text, longer ones by a hash of it (a 32-character
key for however long a line: a minified file or a base64 blob is one line)."""


def ascii_case(word: str, allcaps_min: int | None) -> str:
    """ctok's `mark_case` for a word of ASCII letters (every one cased, each lowers to another):
    all capitals from `allcaps_min` letters on -> ⟨caps⟩ + lower case; a capital then lower case
    only -> ⟨shift⟩ + lower case; anything else stays as written."""
    if allcaps_min is not None and len(word) >= allcaps_min and word.isupper():
        return str(CAPS_G) + word.lower()
    if word[0].islower():
        return word
    if len(word) == 1 or word[1:].islower():
        return str(SHIFT_G) + word.lower()
    return word


class FastClaude:
    """The count of ctok's `tile(text, model)[0]` for one loaded ctok model. Thread-safe (the
    memos only ever gain correct entries)."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self._frame_bow: bool = bool(model.frame_bow)
        self._caps: int | None = model.allcaps_min
        pairs: set[str] = set()
        for piece in model.vocab:
            pairs.update(map(operator.add, piece, piece[1:]))
        self._pairs = frozenset(pairs)
        self._words: dict[str, tuple[str, str]] = {}
        self._lines: dict[str, int] = {}
        self._segments: dict[str, int] = {}

    def forget(self) -> None:
        """Drop what is remembered (lines, words, segments)."""
        self._words.clear()
        self._lines.clear()
        self._segments.clear()

    def count(self, text: str) -> int:
        return sum(self.count_pieces(text, len(text)))

    def count_pieces(self, text: str, size: int) -> Iterator[int]:
        """ctok's count of `text` in parts that add up to it, one per `size` characters or more
        of whole lines (the last with the frame's tail): a long text's count in steps, cut only
        where the count is a sum anyway (a message of its own would not be: the frame takes in
        a last line break, and a first line is the message's head)."""
        norm = nfc(text, fold_quotes=self._model.fold_quotes)
        body = norm.rstrip("\n")
        tail = len(frame_tail(len(norm) - len(body), self._model))
        head_space = raw_head_space(text)
        start = 0  # the head's own line breaks stay with its first line (_lines)
        cut = _LINE_CUT.search(body, max(size, len(body) - len(body.lstrip("\n")) + 1))
        while cut is not None:
            yield self._body_count(body[start : cut.start()], head_space, at_head=not start)
            start = cut.start()
            cut = _LINE_CUT.search(body, start + size)
        yield self._body_count(body[start:], head_space, at_head=not start) + tail

    def _body_count(self, body: str, head_space: bool, *, at_head: bool) -> int:
        """The tiles of ctok's stream of `body` (normalized, no final line break; the message's
        head when `at_head`, else its lines after a line break), line by line: a line's stream
        is cut from the next one's by a line break, which no piece of more than one character
        holds beside anything but line breaks, so the tiling adds up too."""
        total = 0
        memo = self._lines
        for first, line in _lines(body):
            head = first and at_head
            # The message's head line is streamed apart, with or without its leading space.
            key = ("\1\0"[head_space] + line) if head else line
            if len(key) > LINE_MEMO_CHARS:  # a long line is remembered by its hash
                key = blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
            hit = memo.get(key)
            if hit is None:
                text = line.rstrip("\n")
                hit = self.tile_count(self.line_stream(text, head, head_space))
                if len(text) < len(line):
                    hit += self.tile_count(line[len(text) :])
                if len(memo) >= MEMO_LIMIT:
                    memo.clear()
                memo[key] = hit
            total += hit
        return total

    def stream(self, norm: str, *, head_space: bool) -> str:
        """ctok's `stream_norm(norm, model, raw_head_space=head_space)`, line by line."""
        out: list[str] = []
        for head, line in _lines(norm.rstrip("\n")):
            text = line.rstrip("\n")
            out.append(self.line_stream(text, head, head_space))
            out.append(line[len(text) :])
        return "".join(out) if out else self.line_stream("", True, head_space)

    def line_stream(self, line: str, head: bool, head_space: bool) -> str:
        """ctok's stream of `line` at the message's head, or (not `head`) right after a line
        break: then it is the stream of the line break and the line, less what the line break
        and the frame's marker before it write (the line break's white-space run is the same
        run for the line's first run as the whole text's line breaks and indent are)."""
        if not head:
            prefix = BOW_G + "\n" if self._frame_bow else "\n"
            return self.line_stream("\n" + line, True, False)[len(prefix) :]
        if _NOT_STREAMABLE.search(line):
            return str(stream_norm(line, self._model, raw_head_space=head_space))
        return self.ascii_stream(line, head_space)

    def _cased(self, word: str) -> tuple[str, str]:
        """A word's stream with its opening marker, and glued to a contraction's apostrophe."""
        hit = self._words.get(word)
        if hit is None:
            marked = ascii_case(word, self._caps)
            head = 0
            while marked[head : head + 1] in (SHIFT_G, CAPS_G):
                head += 1  # case markers precede the word's opening marker
            hit = (marked[:head] + BOW_G + marked[head:] + EOW_G, marked + EOW_G)
            if len(self._words) >= MEMO_LIMIT:
                self._words.clear()
            self._words[word] = hit
        return hit

    def ascii_stream(self, norm: str, head_space: bool) -> str:
        """ctok's `stream_norm` for normalized text of tab, line break and printable ASCII."""
        norm = norm.rstrip("\n")
        if self._frame_bow and head_space and norm[:1] == " " and norm[1:2] != " ":
            norm = norm[1:]
        bodies = _ASCII_RUN.findall(norm)
        if not bodies:
            return BOW_G if self._frame_bow else ""
        kinds = list(map(_KIND.__getitem__, map(itemgetter(0), bodies)))
        last = len(bodies) - 1
        first_kind, first_body = kinds[0], bodies[0]
        head_quote = first_body == "'" and last > 0 and kinds[1] == _WORD
        own_bow = not head_quote and (
            first_kind in (_WORD, _PUNCT) or (first_kind == _SPACE and first_body[0] == " ")
        )
        out = [] if own_bow or not self._frame_bow else [" " if head_quote else BOW_G]
        cased = self._cased
        for i, kind in enumerate(kinds):
            body = bodies[i]
            if kind == _WORD:
                # A lone apostrophe before a contraction suffix is the word's opening boundary.
                glued = i and body in CONTRACTION_SUFFIXES and bodies[i - 1] == "'"
                out.append(cased(body)[1 if glued else 0])
            elif kind == _PUNCT:
                if i:
                    bow = kinds[i - 1] == _SPACE and bodies[i - 1][-1] == " "
                else:
                    bow = self._frame_bow
                if bow and body == "'" and i < last and kinds[i + 1] == _WORD:
                    bow = False  # an apostrophe that opens the word after it
                if i < last and kinds[i + 1] == _SPACE:
                    after = bodies[i + 1]
                    eow = after[0] == " " and after[:2] != "  "
                else:
                    eow = False
                out.append((BOW_G if bow else "") + body + (EOW_G if eow else ""))
            else:
                out.append(body)  # ASCII digits and white space take no markers
        return _SEAM_SPACE.sub("", "".join(out))

    # ------------------------------------------------------------------ the tiling

    def tile_count(self, stream: str) -> int:
        """ctok's `min_vocab_tile` cost of `stream`, summed over its segments."""
        glued = map(self._pairs.__contains__, map(operator.add, stream, islice(stream, 1, None)))
        cuts = list(compress(range(1, len(stream)), map(operator.not_, glued)))
        starts = [0, *cuts]
        cuts.append(len(stream))
        segments = list(map(stream.__getitem__, map(slice, starts, cuts)))
        memo = self._segments
        missing = set(segments).difference(memo)
        if missing:
            if len(memo) + len(missing) > MEMO_LIMIT:
                memo.clear()
                missing = set(segments)
            for segment in missing:
                memo[segment] = self._tile(segment)
        return sum(map(memo.__getitem__, segments))

    def _tile(self, segment: str) -> int:
        model = self._model
        if segment in model.vocab:
            return 1  # a piece itself: no tiling of a non-empty text has fewer than one tile

        def unit_floor(at: int) -> int:
            char = segment[at]
            return 1 if char in MARKER_GLYPHS else int(char_cost(model, char))

        return int(min_vocab_tile(segment, model.trie, unit_floor)[0])
