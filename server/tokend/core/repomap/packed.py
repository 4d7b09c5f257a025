"""One file's tags packed into arrays (PackedTags), the form core.repomap.store's table
takes them in: names as keys (core.repomap.keys), definitions by (line, key); the words of the
definitions' names apart (a map without a focus reads none of them: issue 22)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from tokend.core.repomap.columns import Array
from tokend.core.repomap.keys import name_words, packed_keys
from tokend.core.repomap.tags import FileTags

KEY = np.uint64
NO_WORDS = np.zeros(0, dtype=KEY)  # a file's name words, none (read only: never written)
NO_COUNTS = np.zeros(0, dtype=np.int32)


@dataclass(frozen=True, slots=True)
class PackedTags:
    """One file's tags as arrays: definitions by (line, key), references by key, and the words
    of its definitions' names by key (`word_key`s, which no file defines: they carry no edge,
    only the words BM25 matches a focus with). `words_made` False: the words were not made
    (a first build's tag worker: the words' pass gives them, with what the file says)."""

    def_keys: Array  # uint64
    def_lines: Array  # int32
    ref_keys: Array  # uint64, unique, ascending
    ref_counts: Array  # int32, occurrences of each
    word_keys: Array = field(default_factory=lambda: NO_WORDS)  # uint64, unique, ascending
    word_counts: Array = field(default_factory=lambda: NO_COUNTS)  # int32: how often said
    words_made: bool = True

    @classmethod
    def of(cls, tags: FileTags) -> PackedTags:
        defs = tags.definitions
        return cls.of_parts([d.line for d in defs], [d.name for d in defs], tags.references)

    @classmethod
    def of_parts(
        cls,
        lines: Sequence[int],
        names: Sequence[str],
        references: Mapping[str, int],
        words: bool = True,
    ) -> PackedTags:
        """`of` a file's definitions' lines and names and its references (a tag worker's,
        which makes no FileTags); without `words`, the names' words are not made."""
        def_keys, refs, said = packed_keys(names, references, words)
        def_lines = np.array(lines, dtype=np.int32)
        order = np.lexsort((def_keys, def_lines))  # by (line, key), each pair once
        def_lines, def_keys = def_lines[order], def_keys[order]
        fresh = np.ones(len(order), dtype=bool)
        fresh[1:] = (def_lines[1:] != def_lines[:-1]) | (def_keys[1:] != def_keys[:-1])
        ref_keys, ref_counts = by_key(refs)
        word_keys, word_counts = by_key(said) if said is not None else (NO_WORDS, NO_COUNTS)
        return cls(def_keys[fresh], def_lines[fresh], ref_keys, ref_counts, word_keys,
                   word_counts, said is not None)  # fmt: skip


def by_key(counts: Mapping[int, int]) -> tuple[Array, Array]:
    """key -> count as two arrays, by key (uint64 ascending, int32)."""
    keys = np.fromiter(counts.keys(), dtype=KEY, count=len(counts))
    values = np.fromiter(counts.values(), dtype=np.int32, count=len(counts))
    order = np.argsort(keys)  # (keys are unique: any sort gives one order)
    return keys[order], values[order]


def names_words(names: Sequence[str]) -> tuple[Array, Array]:
    """The words of a file's definitions' `names` as PackedTags keeps them (word_keys,
    word_counts): what the words' pass gives a file its tag worker packed without them."""
    return by_key(name_words(names))
