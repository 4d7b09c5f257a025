"""DocumentText applies LSP edits as one string would (core/workspace/document_text.py).

The oracle is written here, independently: the text as one string, lines split at "\\n", "\\r\\n"
and "\\r" only, a position's character converted by encoding the line's prefix."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.workspace import document_text
from tokend.core.workspace.document_text import DocumentText, Edit

BREAKS = re.compile(r"\r\n|\r|\n")
ENCODINGS = ("utf-16", "utf-8", "utf-32")


def _units(text: str, encoding: str) -> int:
    if encoding == "utf-32":
        return len(text)
    data = text.encode("utf-16-le" if encoding == "utf-16" else "utf-8", "surrogatepass")
    return len(data) // 2 if encoding == "utf-16" else len(data)


def _offset(text: str, line: int, character: int, encoding: str) -> int:
    starts = [0] + [m.end() for m in BREAKS.finditer(text)]
    if line >= len(starts):
        return len(text)
    start = starts[line]
    found = BREAKS.search(text, start)
    end = found.start() if found else len(text)
    count = 0  # the fewest characters of the line covering `character` units
    while count < end - start and _units(text[start : start + count], encoding) < character:
        count += 1
    return start + count


def _reference(text: str, edits: list[Edit], encoding: str) -> str:
    for edit in edits:
        if edit.start is None or edit.end is None:
            text = edit.text
            continue
        a = _offset(text, *edit.start, encoding)
        b = _offset(text, *edit.end, encoding)
        a, b = min(a, b), max(a, b)
        text = text[:a] + edit.text + text[b:]
    return text


pieces_of_text = st.lists(
    st.sampled_from(["a", "b", " ", "\n", "\r", "\r\n", "é", "😀", "\u2028", "\x0c"]),
    max_size=40,
).map("".join)
positions = st.tuples(st.integers(0, 12), st.integers(0, 14))
edits = st.lists(
    st.one_of(
        st.builds(Edit, pieces_of_text, positions, positions),
        st.builds(Edit, pieces_of_text),
    ),
    max_size=12,
)


@settings(max_examples=400, deadline=None)
@given(text=pieces_of_text, edits=edits, encoding=st.sampled_from(ENCODINGS))
def test_edits_in_small_pieces_give_what_one_string_gives(
    text: str, edits: list[Edit], encoding: str
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(document_text, "PIECE_CHARS", 4)  # many pieces, edits across them
        document = DocumentText(text, encoding)
        document.apply(edits)
        assert document.text() == _reference(text, edits, encoding)


def test_an_edit_of_a_big_text_touches_its_piece() -> None:
    line = "def handler(request):  # 😀 naïve\r\n"
    text = line * 200_000  # 7 M characters
    document = DocumentText(text)
    edit = Edit("X", (150_000, 27), (150_001, 0))  # the emoji is 2 UTF-16 units
    document.apply([edit])
    assert document.text() == _reference(text, [edit], "utf-16")
