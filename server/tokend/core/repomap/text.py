"""What a file says (core.repomap.tags.text_words, which decides the words), counted faster for
the tag workers, which count every file of a tree (issue 22: the kernel's words took about 219
CPU seconds of theirs): the source's bytes are not decoded, and an identifier whose words are
its underscore-separated parts (`skb`, `dev_priv`, `NETIF_F_HW_CSUM`: most of C's) is split by
bytes methods, not by the regular expression of core.repomap.keys.sub_words, which splits the
rest (`parseHTTPConfig`, `reg32`). The result is text_words's, word for word and count for count
(tests/unit/test_repomap_text.py holds one against the other).
"""

from __future__ import annotations

import re
from collections import Counter

from tokend.core.repomap.keys import sub_words
from tokend.core.repomap.tags import WORDS_MAX

_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")  # core.repomap.tags's, on bytes (ASCII either way)


def count_words(source: bytes) -> dict[str, int]:
    """text_words(source.decode("utf-8", "replace"))."""
    counts: dict[str, int] = {}
    get = counts.get
    for token, n in Counter(_IDENT.findall(source)).items():
        letters = token.replace(b"_", b"")
        # one case of letters only: its words are its parts between underscores
        if letters.isalpha() and (letters.islower() or letters.isupper()):
            for part in token.split(b"_"):
                if len(part) >= 3:
                    word = part.decode("ascii").lower()
                    counts[word] = get(word, 0) + n
        else:
            for word in sub_words(token.decode("ascii")):
                counts[word] = get(word, 0) + n
    if len(counts) <= WORDS_MAX:
        return dict(sorted(counts.items()))
    # the WORDS_MAX most frequent, ties alphabetical: the first of (-count, word) in order
    best = sorted([(-n, word) for word, n in counts.items()])[:WORDS_MAX]
    return {word: -negative for negative, word in sorted(best, key=lambda item: item[1])}
