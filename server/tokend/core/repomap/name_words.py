"""The words of the names a file defines, as the tag table keeps them (TagTable's `w` table:
keys and counts a row, core.repomap.packed), given apart from the file's tags by the words'
pass (issue 22: a first build's tag workers leave them out; they were 44-47% of a kernel
file's reference entries, which a map without a focus never reads, yet each was keyed, sent,
spliced and looked up before the first map)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tokend.core.repomap.store import TagTable

ROOM = 64  # entries held ahead for each file whose words are still to come (the words' pass;
# a buffer's pages are resident only once written: the kernel's files hold about 34 a file)

Array = Any
Words = tuple[Array, Array]  # a file's names' words: keys (uint64 ascending), counts (int32)


def changed_rows(table: TagTable, words: Mapping[str, Words]) -> dict[int, Words]:
    """The rows of the files of `words` (path -> its names' words) the table has, whose words
    are not those already: row -> words."""
    rows: dict[int, Words] = {}
    for path, (keys, counts) in words.items():
        row = table.row(path)
        if row is None:
            continue
        span = slice(table.w_off[row], table.w_off[row + 1])
        if np.array_equal(table.w_key[span], keys) and np.array_equal(table.w_count[span], counts):
            continue
        rows[row] = (keys, counts)
    return rows
