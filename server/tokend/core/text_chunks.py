"""Long texts in pieces: for counting, for storing, and kept out of memory.

`count_chunks` cuts a text for counting: a cut goes right after a line break that is followed by
a character that is not whitespace. BPE pre-tokenizers (cl100k_base, o200k_base) always start a
new piece there, and merges never cross pieces, so the counts of the pieces sum to the count of
the whole. Checked on 10 MB of real text (a Claude Code transcript, Python sources, Markdown):
identical totals for both vocabularies. A text with no such line break stays whole.

`KeptText` is a text too long to hold: the daemon writes a big string of a request to a private
file as it reads it, and hands on a KeptText that knows its length, its content address, its
start and end, and reads its pieces back on demand (the seam: the daemon implements it). Its
`str` value is only a short marker, never the text: code that may meet one uses `text_length`,
`text_head`, `text_tail`, `text_pieces` and `whole_text`, which take plain strings too.
"""

from __future__ import annotations

from collections.abc import Iterator

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
        while cut != -1 and cut + 1 < length and text[cut + 1].isspace():
            cut = text.find("\n", cut + 1)
        end = length if cut == -1 else cut + 1
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
