"""The repo map's 64-bit keys of names and words (stable across processes: BLAKE2b).

A name's key: bit 63 clear; bit 0 whether it starts with an underscore (weighs a tenth), bit 1
whether it is a compound of two words or more (core.repomap_edges). A word's key (a lowercase
word of a definition's name or a path, `word_key`): bit 63 set, bit 62 clear. A word of a name
a file refers to (`ref_word_key`): bits 63 and 62 set. Words are no name, so no file defines
them; the two kinds of word are apart so that a file focus can leave the words of what a file
merely uses out of its query (core.repomap_rank), while a task's text reads both.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import numpy as np

_SUB_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_NAME_BITS = (1 << 63) - 1 - 3
WORD_BIT = 1 << 63
REF_WORD_BITS = 3 << 62


def sub_words(name: str) -> list[str]:
    """The words of an identifier or a path, lowercase, 3 characters or more:
    `parseHTTPConfig_v2` -> parse, http, config."""
    return [w.lower() for w in _SUB_WORD.findall(name) if len(w) >= 3]


def name_key(name: str) -> int:
    """The key of an identifier (bit 0: a leading underscore, bit 1: a compound of two words
    or more, `parse_config`, `getUserName`; bit 63 clear)."""
    digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    flags = (2 if len(sub_words(name)) >= 2 else 0) | (1 if name.startswith("_") else 0)
    return (int.from_bytes(digest, "little") & _NAME_BITS) | flags


def word_key(word: str) -> int:
    """The key of a lowercase word of a definition's name or of a path."""
    return (name_key("\0" + word) & ~(1 << 62)) | WORD_BIT


def ref_word_key(word: str) -> int:
    """The key of a lowercase word of a name a file refers to."""
    return name_key("\0" + word) | REF_WORD_BITS


def is_ref_word(keys: Any) -> Any:
    """Which of `keys` (a uint64 array) are words of referred names (a bool array)."""
    return (np.asarray(keys, dtype=np.uint64) >> np.uint64(62)) == np.uint64(3)
