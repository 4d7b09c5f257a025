"""The repo map's 64-bit keys of names and words (stable across processes: BLAKE2b).

A name's key: bit 0 whether it starts with an underscore (weighs a tenth), bit 1 whether it is
a compound of two words or more (core.repomap.edges). A word's key (a lowercase word of a
definition's name or a path, `word_key`) is the key of no name ("\0" is in none), so no file
defines it. The words of what a file says are kept apart, by id (core.repomap.words): a
word's id is its CRC-32 (`word_id`), the same in every process and computed where the word is
read (the tag workers), so no table of words is kept to number them.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Iterable, Mapping

SUB_WORD_PATTERN = r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+"
_SUB_WORD = re.compile(SUB_WORD_PATTERN)
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
    definitions: Iterable[tuple[int, str]], references: Mapping[str, int]
) -> tuple[list[int], list[int], dict[int, int]]:
    """A file's definitions' lines and keys (in their order), and the count of each key among
    its references and the words of its definitions' names: each distinct name and word keyed
    once (the kernel's macros repeat their words: 952,084 words in 1,500 files, 22,359
    distinct)."""
    known: dict[str, tuple[int, list[str]]] = {}  # name -> its key, its words
    said: dict[str, int] = {}
    lines, keys = [], []
    for line, name in definitions:
        found = known.get(name)
        if found is None:
            words = sub_words(name)
            found = known[name] = (name_key(name, len(words)), words)
        lines.append(line)
        keys.append(found[0])
        for word in found[1]:
            said[word] = said.get(word, 0) + 1
    refs: dict[int, int] = {}
    for name, count in references.items():
        found = known.get(name)
        key = name_key(name) if found is None else found[0]
        refs[key] = refs.get(key, 0) + int(count)
    for word, count in said.items():
        key = word_key(word)
        refs[key] = refs.get(key, 0) + count
    return lines, keys, refs
