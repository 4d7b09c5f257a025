"""One file's tags packed into arrays (PackedTags), the form core.repomap.store's table
takes them in: names as keys (core.repomap.keys), definitions by (line, key)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tokend.core.repomap.columns import Array
from tokend.core.repomap.keys import packed_keys
from tokend.core.repomap.tags import FileTags

KEY = np.uint64


@dataclass(frozen=True, slots=True)
class PackedTags:
    """One file's tags as arrays: definitions by (line, key), references by key."""

    def_keys: Array  # uint64
    def_lines: Array  # int32
    ref_keys: Array  # uint64, unique, ascending
    ref_counts: Array  # int32, occurrences of each

    @classmethod
    def of(cls, tags: FileTags) -> PackedTags:
        """The references include the words of the definitions' names (`word_key`), which no
        file defines: they carry no edge, only the words BM25 matches a task's text with (what
        the file says is kept apart: core.repomap.words)."""
        defs = tags.definitions
        return cls.of_parts([d.line for d in defs], [d.name for d in defs], tags.references)

    @classmethod
    def of_parts(
        cls, lines: Sequence[int], names: Sequence[str], references: Mapping[str, int]
    ) -> PackedTags:
        """`of` a file's definitions' lines and names and its references (a tag worker's,
        which makes no FileTags)."""
        def_keys, refs = packed_keys(names, references)
        def_lines = np.array(lines, dtype=np.int32)
        order = np.lexsort((def_keys, def_lines))  # by (line, key), each pair once
        def_lines, def_keys = def_lines[order], def_keys[order]
        fresh = np.ones(len(order), dtype=bool)
        fresh[1:] = (def_lines[1:] != def_lines[:-1]) | (def_keys[1:] != def_keys[:-1])
        ref_keys = np.fromiter(refs.keys(), dtype=KEY, count=len(refs))
        ref_counts = np.fromiter(refs.values(), dtype=np.int32, count=len(refs))
        by_key = np.argsort(ref_keys)  # (keys are unique: any sort gives one order)
        return cls(def_keys[fresh], def_lines[fresh], ref_keys[by_key], ref_counts[by_key])
