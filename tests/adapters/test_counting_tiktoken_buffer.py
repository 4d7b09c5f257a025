"""A long text is counted from a buffer of token ids, not a Python list of them
(adapters/tokenizers.py's BUFFER_MIN_CHARS).

Found by issue 17's fuzz (a trace of the interpreter lock): `context/assemble` with an 8 MB
`system` held every thread of the daemon 40-55 ms while tiktoken's 2.6 million token ids became
a Python list in a worker thread. Judged without a clock: every list of token ids tiktoken
builds is watched, and none may be longer than a short text's.
"""

from __future__ import annotations

from typing import Any

import pytest

from tokend.adapters import tokenizers
from tokend.adapters.tokenizers import BUFFER_MIN_CHARS, TiktokenCounter, load_encoding

TEXT = ("naïve 😀 <|endoftext|> the quick brown fox, 0123456789\n" * 150_000)[: 8 << 20]


def test_a_long_text_builds_no_long_list_of_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    encoding = load_encoding("o200k_base")
    expected = len(encoding.encode_ordinary(TEXT))  # the oracle: tiktoken's own list
    short = "def f(x):\\n    return x + 1\\n" * 10
    longest = [0]

    class Watched:
        def __getattr__(self, name: str) -> Any:
            return getattr(encoding, name)

        def encode_ordinary(self, text: str) -> list[int]:
            tokens = encoding.encode_ordinary(text)
            longest[0] = max(longest[0], len(tokens))
            return tokens

        def encode_ordinary_batch(self, texts: list[str]) -> list[list[int]]:
            batch = encoding.encode_ordinary_batch(texts)
            longest[0] = max([longest[0], *map(len, batch)])
            return batch

    monkeypatch.setattr(tokenizers, "load_encoding", lambda _name: Watched())
    counter = TiktokenCounter("o200k_base")

    assert counter.count(TEXT) == expected
    assert counter.count_many([short, TEXT, short]) == [
        len(encoding.encode_ordinary(short)),
        expected,
        len(encoding.encode_ordinary(short)),
    ]
    print(f"the longest list of token ids built: {longest[0]:,} (the text has {expected:,})")
    assert longest[0] < BUFFER_MIN_CHARS  # the whole text's list: 3.3 million
