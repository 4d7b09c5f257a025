"""What a file says (core.repomap.tags.text_words, which decides the words), counted faster for
the tag workers, which count every file of a tree (issue 22: the kernel's words took about 219
CPU seconds of theirs): the source's bytes are not decoded, and an identifier whose words are
its underscore-separated parts (`skb`, `dev_priv`, `NETIF_F_HW_CSUM`: most of C's) is split by
bytes methods, not by the regular expression of core.repomap.keys.sub_words, which splits the
rest (`parseHTTPConfig`, `reg32`) on the bytes too. The kept words are given by id (core.repomap.keys.word_id:
the CRC-32 of the word's bytes, taken here on the bytes already lowered). The result is
text_words's, word for word and count for count (tests/unit/test_repomap_text.py holds one
against the other).
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from itertools import islice

from tokend.core.repomap.keys import SUB_WORD_PATTERN

# a file's text words kept (the most frequent): bounds the kernel's word table; 384 chosen on
# the tuning trees (bench.repomap_fit; 256 before: 923 bytes a kernel file, 1,155 at 384). Here,
# not in core.repomap.tags (which reads it from here), so that a word worker, which imports this
# module for its count, loads no dataclasses, inspect or tags (issue 22: 1.6 MiB of a worker).
WORDS_MAX = 384
_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")  # core.repomap.tags's, on bytes (ASCII either way)
_SUB_WORD = re.compile(SUB_WORD_PATTERN.encode("ascii"))  # core.repomap.keys's, on bytes


def count_words(source: bytes) -> dict[int, int]:
    """text_words(source.decode("utf-8", "replace"))."""
    counts: dict[bytes, int] = {}
    get = counts.get
    for token, n in Counter(_IDENT.findall(source)).items():
        if len(token) < 3:  # no word of 3 characters or more in it
            continue
        if token.isalpha() and (token.islower() or token.isupper()):  # one word: `skb`, `NULL`
            word = token.lower()  # (the commonest by far)
            counts[word] = get(word, 0) + n
            continue
        whole = token.lower()
        letters = token.replace(b"_", b"")
        # one case of letters only: its words are its parts between underscores
        if letters.isalpha() and (letters.islower() or letters.isupper()):
            parts = [p for p in whole.split(b"_") if len(p) >= 3]
        else:
            parts = [w.lower() for w in _SUB_WORD.findall(token) if len(w) >= 3]
        for word in parts:
            counts[word] = get(word, 0) + n
        if len(parts) >= 2:  # a compound of two words or more: itself too
            counts[whole] = get(whole, 0) + n
    if len(counts) > WORDS_MAX:  # the WORDS_MAX most frequent, ties: the first said
        cut = sorted(counts.values())[-WORDS_MAX]
        kept = [(w, n) for w, n in counts.items() if n > cut]
        ties = ((w, n) for w, n in counts.items() if n == cut)
        kept += islice(ties, WORDS_MAX - len(kept))
        counts = dict(kept)
    out = dict(zip(map(zlib.crc32, counts), counts.values(), strict=True))
    if len(out) < len(counts):  # two words sharing an id (rare): their counts summed
        out = {}
        for word, n in counts.items():
            key = zlib.crc32(word)
            out[key] = out.get(key, 0) + n
    return out
