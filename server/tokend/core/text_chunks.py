"""Long texts in pieces: for counting, for storing, and kept out of memory.

`count_chunks` cuts a text for counting: a cut goes right after a line break that is followed by
a character that is neither whitespace nor "/" (o200k_base's punctuation pattern runs on through
line breaks and slashes: ":\n/usr" starts with one piece ":\n/"), or, in a long line, right before a space that follows a
printable ASCII character and precedes an ASCII letter ("word| next"), whichever comes first.
BPE pre-tokenizers (cl100k_base, o200k_base) always start a new piece there (no pattern of theirs
runs from a non-space character into a space, and both give " next" one piece), and merges never
cross pieces, so the counts of the pieces sum to the count of the whole. Checked on 10 MB of real
text (a Claude Code transcript, Python sources, Markdown), and against tiktoken on generated text
(tests/unit/test_counting_chunks.py): identical totals for both vocabularies. A text with neither
(a base64 blob, a line of CJK) stays whole. Without the second rule a 10 MB text of one line
(minified JSON, a log without line breaks) was tokenized in one call, leaving the daemon +52 MiB
that malloc_trim could not give back (fragmentation); counted in pieces, +2 MiB.

`KeptText` is a text too long to hold: the daemon writes a big string of a request to a private
file as it reads it, and hands on a KeptText that knows its length, its content address, its
start and end, and reads its pieces back on demand (the seam: the daemon implements it). Its
`str` value is only a short marker, never the text: code that may meet one uses `text_length`,
`text_head`, `text_tail`, `text_pieces` and `whole_text`, which take plain strings too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_WORD_BREAK = re.compile(r"(?<=[!-~]) (?=[A-Za-z])")  # "word| next": a cut before the space
CHUNK_CHARS = 1 << 18  # pieces of 256 Ki characters: ~1 ms of tokenizing, ~65k token ids each
STORE_PIECE_CHARS = 1 << 20  # pieces of 1 Mi characters when a text is stored in pieces


def count_chunks(text: str, size: int = CHUNK_CHARS) -> Iterator[str]:
    """`text` in order, cut into pieces of at least `size` characters (the last may be shorter)."""
    start, length = 0, len(text)
    while start < length:
        end = start + size
        if end >= length:
            yield text[start:]
            return
        cut = text.find("\n", end)
        while cut != -1 and cut + 1 < length and (text[cut + 1].isspace() or text[cut + 1] == "/"):
            cut = text.find("\n", cut + 1)
        line_cut = length if cut == -1 else cut + 1
        word = _WORD_BREAK.search(text, end, line_cut)
        end = word.start() if word is not None else line_cut
        yield text[start:end]
        start = end


class KeptText(str):
    """A text kept outside memory; its str value is a marker (see the module docstring).

    `chars` is its length in characters and `ref` its content address ("sha256:" and the hex
    digest of its UTF-8 bytes, lone surrogates passed through), both known when it was read.
    """

    chars: int
    ref: str

    def head(self, chars: int) -> str:
        """Its first `chars` characters."""
        raise NotImplementedError

    def tail(self, chars: int) -> str:
        """Its last `chars` characters."""
        raise NotImplementedError

    def pieces(self) -> Iterator[str]:
        """The whole text in order, in pieces of about STORE_PIECE_CHARS characters."""
        raise NotImplementedError


def text_length(text: str) -> int:
    """Characters in `text` (a KeptText's true length, not its marker's)."""
    return text.chars if isinstance(text, KeptText) else len(text)


def text_head(text: str, chars: int) -> str:
    return text.head(chars) if isinstance(text, KeptText) else text[:chars]


def text_tail(text: str, chars: int) -> str:
    if chars <= 0:
        return ""
    return text.tail(chars) if isinstance(text, KeptText) else text[-chars:]


def text_pieces(text: str, size: int = STORE_PIECE_CHARS) -> Iterator[str]:
    """`text` in order, in pieces of at most about `size` characters (never an empty one)."""
    if isinstance(text, KeptText):
        yield from (piece for piece in text.pieces() if piece)
        return
    for start in range(0, len(text), size):
        yield text[start : start + size]


def whole_text(text: str) -> str:
    """`text` as a plain string (a KeptText read back whole: as big as the text)."""
    return "".join(text.pieces()) if isinstance(text, KeptText) else text
