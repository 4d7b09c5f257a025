"""What a file says (core.repomap.tags.text_words, which decides the words), counted faster for
the tag workers, which count every file of a tree (issue 22: the kernel's words took about 219
CPU seconds of theirs): the source's bytes are not decoded, and an identifier whose words are
its underscore-separated parts (`skb`, `dev_priv`, `NETIF_F_HW_CSUM`: most of C's) is split by
bytes methods, not by the regular expression of core.repomap.keys.sub_words, which splits the
rest (`parseHTTPConfig`, `reg32`) on the bytes too. The kept words are given by id (core.repomap.keys.word_id:
the CRC-32 of the word's bytes, taken here on the bytes already lowered). The result is
text_words's, word for word and count for count (tests/unit/test_repomap_text.py holds one
against the other).

After the words, the same count carries the file's whole tokens (issue 24's sixteenth pass): its
identifiers of 3 characters or more, whole and lowered (`__init__`, `reg32`, `parseconfig`), as
the BM25 baseline reads a file (bench.repomap_eval_baselines.BM25), its WHOLE_MAX most frequent,
each by its WHOLE_SEED id (core.repomap.whole reads them). They follow a MARK entry (its count:
how many follow), so that they travel wherever the words go (the word workers' arrays, the tag
workers' answers, the caches) in the order counted, and core.repomap.words.sections parts them.
A count for a tree that keeps no whole tokens (core.repomap.whole.keeps_whole: more than
LARGE_TREE files, the kernel) is asked `whole=False`: the words alone, no MARK, nothing after it
(the kernel's word workers sent and the cache kept about twice the words' bytes for tokens the
daemon then dropped).
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from itertools import islice, repeat

from tokend.core.repomap.keys import SUB_WORD_PATTERN

# a file's text words kept (the most frequent): bounds the kernel's word table; 384 chosen on
# the tuning trees (bench.repomap_fit; 256 before: 923 bytes a kernel file, 1,155 at 384). Here,
# not in core.repomap.tags (which reads it from here), so that a word worker, which imports this
# module for its count, loads no dataclasses, inspect or tags (issue 22: 1.6 MiB of a worker).
WORDS_MAX = 384
WHOLE_MAX = 1024  # a file's whole tokens sent (the most frequent; the tuning trees' files say
# 46-368 on average: all of them); core.repomap.whole keeps fewer on a large tree
WHOLE_SEED = 0x5A1D  # a whole token's id: the CRC-32 of its bytes from this value (not a word's)
MARK = 0  # between the words and the whole tokens (a word or token with this id: left out)
_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")  # core.repomap.tags's, on bytes (ASCII either way)
_SUB_WORD = re.compile(SUB_WORD_PATTERN.encode("ascii"))  # core.repomap.keys's, on bytes


def count_words(source: bytes, whole: bool = True) -> dict[int, int]:
    """text_words(source.decode("utf-8", "replace")), then MARK, then the whole tokens (without
    `whole`: the words alone)."""
    counts: dict[bytes, int] = {}
    tokens: dict[bytes, int] = {}  # the whole tokens, lowered
    get, got = counts.get, tokens.get
    for token, n in Counter(_IDENT.findall(source)).items():
        if len(token) < 3:  # no word of 3 characters or more in it
            continue
        lowered = token.lower()
        if whole:
            tokens[lowered] = got(lowered, 0) + n
        if token.isalpha() and (token.islower() or token.isupper()):  # one word: `skb`, `NULL`
            counts[lowered] = get(lowered, 0) + n  # (the commonest by far)
            continue
        letters = token.replace(b"_", b"")
        # one case of letters only: its words are its parts between underscores
        if letters.isalpha() and (letters.islower() or letters.isupper()):
            parts = [p for p in lowered.split(b"_") if len(p) >= 3]
        else:
            parts = [w.lower() for w in _SUB_WORD.findall(token) if len(w) >= 3]
        for word in parts:
            counts[word] = get(word, 0) + n
        if len(parts) >= 2:  # a compound of two words or more: itself too
            counts[lowered] = get(lowered, 0) + n
    out = _ids(_most(counts, WORDS_MAX), 0)
    if not whole:
        return out
    # (a token sharing a word's id in this file, rare: left out)
    tail = _ids(_most(tokens, WHOLE_MAX), WHOLE_SEED)
    tail = {key: n for key, n in tail.items() if key not in out}
    out[MARK] = len(tail)
    out.update(tail)
    return out


def _most(counts: dict[bytes, int], most: int) -> dict[bytes, int]:
    """The `most` most frequent of `counts`, ties: the first said."""
    if len(counts) <= most:
        return counts
    cut = sorted(counts.values())[-most]
    kept = [(w, n) for w, n in counts.items() if n > cut]
    ties = ((w, n) for w, n in counts.items() if n == cut)
    kept += islice(ties, most - len(kept))
    return dict(kept)


def _ids(counts: dict[bytes, int], seed: int) -> dict[int, int]:
    """`counts` by id (the CRC-32 from `seed`; two sharing an id, rare: their counts summed;
    one whose id is MARK: left out)."""
    out = dict(zip(map(zlib.crc32, counts, repeat(seed)), counts.values(), strict=True))
    if len(out) < len(counts):
        out = {}
        for word, n in counts.items():
            key = zlib.crc32(word, seed)
            out[key] = out.get(key, 0) + n
    out.pop(MARK, None)
    return out
