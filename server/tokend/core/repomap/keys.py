"""The repo map's 64-bit keys of names and words (stable across processes: BLAKE2b).

A name's key: bit 0 whether it starts with an underscore (weighs a tenth), bit 1 whether it is
a compound of two words or more (core.repomap.edges). A word's key (a lowercase word of a
definition's name or a path, `word_key`) is the key of no name ("\0" is in none), so no file
defines it. The words of what a file says are kept apart, by id (core.repomap.words): a
word's id is its CRC-32 (`word_id`), the same in every process and computed where the word is
read (the tag workers), so no table of words is kept to number them.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import chain, repeat
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:  # numpy is imported by packed_keys alone: a word worker imports this module
    # for its words (core.repomap.text, .tags) and must not load numpy (adapters.word_workers)
    import numpy as np
    from numpy.typing import NDArray

SUB_WORD_PATTERN = r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+"
_SUB_WORD = re.compile(SUB_WORD_PATTERN)
# SUB_WORD_PATTERN's words of 3 characters or more (and "\0"), found by a search for those alone:
# each of its three kinds of word cut at 3 (a run of capitals not followed by a lower case
# letter; a capital and two lower case letters or more; three lower case letters or more; three
# digits or more). A search never starts one inside a word of SUB_WORD_PATTERN's: a word of 3 or
# more is matched from its first character, and the characters after a shorter one's first are
# fewer still, of the same run.
_LONG_WORDS = re.compile(r"[A-Z]{3,}(?![a-z])|[A-Z][a-z]{2,}|[a-z]{3,}|[0-9]{3,}|\0")
_NAMES_WORDS = re.compile(_LONG_WORDS.pattern.removesuffix(r"|\0"))  # (names joined by "\0")
_BITS = (1 << 64) - 1
_NOT_MARKS = bytes(b for b in range(256) if b not in (0, 1))  # (_word_counts's marks: "\0", "\1")
WORD_KEYS_KEPT = 1 << 15  # words whose keys are remembered (a tree's words recur: issue 22)
_word_keys: dict[str, int] = {}


def sub_words(name: str) -> list[str]:
    """The words of an identifier or a path, lowercase, 3 characters or more:
    `parseHTTPConfig_v2` -> parse, http, config."""
    return [w.lower() for w in _SUB_WORD.findall(name) if len(w) >= 3]


def word_id(word: str) -> int:
    """The id of a word of what a file says (lowercase ASCII): its CRC-32, a 32-bit number
    that is the same in every process. Two words sharing an id count as one (about 90 pairs
    among a million words)."""
    return zlib.crc32(word.encode("ascii", "replace"))


def word_ids(words: Mapping[str, int]) -> dict[int, int]:
    """`words` (word -> count) by id, the counts of words sharing an id summed."""
    out: dict[int, int] = {}
    for word, count in words.items():
        key = zlib.crc32(word.encode("ascii", "replace"))
        out[key] = out.get(key, 0) + count
    return out


def _digest(text: str) -> int:
    import hashlib  # (here and in packed_keys: a word worker imports this module for its words,
    # and hashlib's OpenSSL is about 4 MiB of a process that never makes a key)

    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ~3


def name_key(name: str, words: int | None = None) -> int:
    """The key of an identifier (bit 0: a leading underscore, bit 1: a compound of two words
    or more, `parse_config`, `getUserName`); `words`: len(sub_words(name)), when known."""
    count = len(sub_words(name)) if words is None else words
    return _digest(name) | (2 if count >= 2 else 0) | (1 if name.startswith("_") else 0)


def word_key(word: str) -> int:
    """The key of a lowercase word of a definition's name or of a path: the key of the name
    "\0" + word (whose words are the word's), remembered for the next file that says it."""
    key = _word_keys.get(word)
    if key is None:
        key = _digest("\0" + word) | (2 if len(sub_words(word)) >= 2 else 0)
        if len(_word_keys) >= WORD_KEYS_KEPT:
            _word_keys.clear()
        _word_keys[word] = key
    return key


def packed_keys(
    names: Sequence[str], references: Mapping[str, int], words: bool = True
) -> tuple[NDArray[np.uint64], dict[int, int], dict[int, int] | None]:
    """The keys of a file's definitions' `names` (in their order), the count of each key among
    its `references`, and (with `words`; else None) the count of each word of its definitions'
    names (`word_key`s: core.repomap.packed keeps them apart). Each distinct name and word is
    keyed once (the kernel's macros repeat their words: 952,084 words in 1,500 files, 22,359
    distinct), and a file's names are split into words by one pass of the pattern over them
    all, counted and keyed by calls on whole lists (issue 22: the per-name calls were most of a
    tag worker's packing, 16% of its CPU on the kernel)."""
    import hashlib

    import numpy as np  # (here: see the imports)

    distinct = list(dict.fromkeys(chain(names, references)))
    spaced = _spaced_words(distinct) if words else None
    blake2b = hashlib.blake2b
    raw = b"".join([blake2b(n.encode("utf-8", "surrogatepass"), digest_size=8).digest()
                    for n in distinct])  # fmt: skip
    count = len(distinct)
    if spaced is None:
        compound = _word_counts(distinct) >= 2
    else:
        compound = np.fromiter(map(str.count, spaced, repeat(" ")), np.int64, count) > 2
    under = np.fromiter(map(str.startswith, distinct, repeat("_")), bool, count)
    keys = np.frombuffer(raw, "<u8") & np.uint64(~3 & _BITS) | compound.astype(np.uint64) << 1
    key_of = dict(zip(distinct, (keys | under).tolist(), strict=True))
    def_keys = np.fromiter(map(key_of.__getitem__, names), np.uint64, len(names))
    refs = _summed(list(map(key_of.__getitem__, references)), list(references.values()))
    if spaced is None:
        return def_keys, refs, None
    of_name = dict(zip(distinct, spaced, strict=True))
    return def_keys, refs, _counted_words(" ".join(map(of_name.__getitem__, names)))


def name_words(names: Sequence[str]) -> dict[int, int]:
    """packed_keys's words of a file's definitions' `names` alone: each word's key and how
    often the names say it (the words' pass makes them from the cached names, issue 22), by
    one search of the names joined (_spaced_words's pattern, but for "\0")."""
    joined = "\0".join(names)
    if joined.count("\0") != len(names) - 1:  # a name holding "\0": each split alone
        return _counted_words(" ".join(w for name in names for w in sub_words(name)))
    return _counted_words(" ".join(_NAMES_WORDS.findall(joined)).lower())


def _counted_words(spaced: str) -> dict[int, int]:
    """Each word of `spaced` (_spaced_words's, joined) by its key, counted."""
    said = Counter(spaced.split())
    return _summed(_word_keys_of(list(said)), list(said.values()))


def _summed(keys: list[int], counts: list[int]) -> dict[int, int]:
    """key -> count; two keys alike (two names sharing a key) with their counts summed."""
    out = dict(zip(keys, counts, strict=True))
    if len(out) < len(keys):
        out = {}
        for key, n in zip(keys, counts, strict=True):
            out[key] = out.get(key, 0) + n
    return out


def _word_counts(names: list[str]) -> NDArray[np.int64]:
    """How many words (`sub_words`) each name has, for the compound bit alone (a first build's
    keys, without the names' words): each word found in the names joined is replaced by a mark
    and the marks counted by name, where `_spaced_words` made a string of every word (issue 22:
    0.7 of 3.8 CPU s over the kernel's names)."""
    import numpy as np  # (here: see the imports)

    joined = "\0".join(names)
    if joined.count("\0") != len(names) - 1 or "\1" in joined:  # a name holding a mark
        return np.array([len(sub_words(name)) for name in names], np.int64)
    marks = _NAMES_WORDS.sub("\1", joined).encode("utf-8", "surrogatepass")
    parts = marks.translate(None, _NOT_MARKS).split(b"\0")
    return np.fromiter(map(len, parts), np.int64, len(names))


def _spaced_words(names: list[str]) -> list[str]:
    """Each name's words (`sub_words`) as one string, each word between spaces ("" -> " ",
    "parseHTTPConfig" -> " parse http config "): the pattern run once over all the names."""
    joined = "\0".join(names)
    if names and joined.count("\0") == len(names) - 1:
        found = " ".join(_LONG_WORDS.findall(joined)).lower()
        return f" {found} ".split("\0")
    return [f" {' '.join(sub_words(name))} " if name else " " for name in names]


def _word_keys_of(words: list[str]) -> list[int]:
    """`word_key` of each of `words`, those remembered looked up in one call. Each is one word
    of a name (`sub_words`'s, or `_spaced_words`'s: a run of lower case letters or of digits),
    so none is a compound and its key is its digest alone: `word_key` would split it again."""
    keys = list(map(_word_keys.get, words))
    if None in keys:
        return [_one_word_key(w) if k is None else k for w, k in zip(words, keys, strict=True)]
    return cast(list[int], keys)


def _one_word_key(word: str) -> int:
    """`word_key` of a word that is one word (`sub_words(word) == [word]`)."""
    key = _digest("\0" + word)
    if len(_word_keys) >= WORD_KEYS_KEPT:
        _word_keys.clear()
    _word_keys[word] = key
    return key
