"""count_chunks cuts only where tiktoken's own count of the whole is the sum of the pieces'
(the oracle: tiktoken on the whole text), with the cuts forced often by a small piece size."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tokend.adapters.tokenizers import load_encoding
from tokend.core.text_chunks import count_chunks

# Spaces, letters of several scripts and cases, digits, punctuation, apostrophes (contractions),
# line breaks, tabs, combining marks: what the pre-tokenizers' patterns turn on.
_TEXT = st.text(alphabet="  aZqéΩж中ー\u0301019'.,:/-_(\"\n\r\t", min_size=0, max_size=120)


@pytest.mark.parametrize("encoding_name", ["o200k_base", "cl100k_base"])
@settings(max_examples=1500, deadline=None)
@given(text=_TEXT, size=st.integers(min_value=1, max_value=12))
@example(text="a line ends:\n/usr/bin/env", size=5)  # o200k: ":\n/" is one piece
def test_the_pieces_count_as_the_whole(encoding_name: str, text: str, size: int) -> None:
    encoding = load_encoding(encoding_name)
    pieces = list(count_chunks(text, size))
    assert "".join(pieces) == text
    whole = len(encoding.encode_ordinary(text))
    assert sum(len(encoding.encode_ordinary(p)) for p in pieces) == whole, pieces


def test_a_long_line_is_cut_into_pieces() -> None:
    """One 1 MB line (minified JSON, a log without line breaks) is no longer counted whole."""
    line = " ".join(f'{{"key_{i}": "value {i} of the record"}}' for i in range(30_000))
    pieces = list(count_chunks(line))
    assert len(pieces) >= 3 and max(map(len, pieces)) < 2 * (1 << 18)
    encoding = load_encoding("o200k_base")
    assert sum(len(encoding.encode_ordinary(p)) for p in pieces) == len(
        encoding.encode_ordinary(line)
    )
