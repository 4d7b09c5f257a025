"""The repo map's 64-bit keys of names and words (stable across processes: BLAKE2b).

A name's key: bit 0 whether it starts with an underscore (weighs a tenth), bit 1 whether it is
a compound of two words or more (core.repomap_edges). A word's key (a lowercase word of a
definition's name or a path, `word_key`) is the key of no name ("\0" is in none), so no file
defines it. The words of what a file says are kept apart, by id (core.repomap_words).
"""

from __future__ import annotations

import hashlib
import re

_SUB_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def sub_words(name: str) -> list[str]:
    """The words of an identifier or a path, lowercase, 3 characters or more:
    `parseHTTPConfig_v2` -> parse, http, config."""
    return [w.lower() for w in _SUB_WORD.findall(name) if len(w) >= 3]


def name_key(name: str) -> int:
    """The key of an identifier (bit 0: a leading underscore, bit 1: a compound of two words
    or more, `parse_config`, `getUserName`)."""
    digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    flags = (2 if len(sub_words(name)) >= 2 else 0) | (1 if name.startswith("_") else 0)
    return (int.from_bytes(digest, "little") & ~3) | flags


def word_key(word: str) -> int:
    """The key of a lowercase word of a definition's name or of a path."""
    return name_key("\0" + word)
