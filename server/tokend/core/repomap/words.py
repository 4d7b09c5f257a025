"""What each file says, as a task's text is read against it (core.repomap.rank's BM25): the
words of its text (core.repomap.tags.text_words, its WORDS_MAX most frequent), kept compactly.

One vocabulary per graph gives every word an id; a file's words are their ids (uint32,
ascending) and counts (uint16; a count past 65,535 is kept as 65,535) in two flat arrays whose
rows are the files in path order, as core.repomap.store's tables are: 6 bytes a word of a file,
where a dictionary of strings per file takes tens of bytes an entry.

The vocabulary keeps no strings: a word is found by its 64-bit hash (the interpreter's string
hash, fixed within a process) in a sorted array of hashes beside their ids, 12 bytes a word.
Hashes and ids differ from one process to the next, so nothing kept, shown or compared depends
on them (BM25 adds a file's word terms smallest first: the same sums in every process). Two
words sharing a hash (about one pair in 10^7 vocabularies of a million words) count as one. A
word no file says any more keeps its id (12 bytes) until the graph is made again.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from tokend.core.repomap.keys import sub_words
from tokend.core.repomap.store import splice_column, splice_offsets
from tokend.core.repomap.tags import FileTags

ID = np.uint32
COUNT = np.uint16
COUNT_MAX = int(np.iinfo(COUNT).max)
SIEVE_BLOCK = 1 << 18  # entries read at once (bounded temporaries on the kernel)

Array = Any
Words = tuple[Array, Array]  # one file's (ids ascending, counts)


def said(tags: FileTags) -> Mapping[str, int]:
    """The words a file says: its text's, else (tags made without them) its references'."""
    if tags.words:
        return tags.words
    out: dict[str, int] = {}
    for name, count in tags.references.items():
        for word in sub_words(name):
            out[word] = out.get(word, 0) + int(count)
    return out


def _hashes(words: Sequence[str]) -> Array:
    return np.fromiter((hash(w) for w in words), dtype=np.int64, count=len(words)).view(np.uint64)


class Vocabulary:
    """word -> id, by the word's hash (ids 0, 1, 2 ... in the order words came)."""

    def __init__(self) -> None:
        self._hashes = np.zeros(0, dtype=np.uint64)  # sorted
        self._ids = np.zeros(0, dtype=ID)  # the id of each hash

    def __len__(self) -> int:
        return len(self._hashes)

    @property
    def nbytes(self) -> int:
        return int(self._hashes.nbytes + self._ids.nbytes)

    def ids(self, words: Sequence[str]) -> Array:
        """The ids of the words the vocabulary has (int64, in the order given)."""
        found = self._lookup(_hashes(words))
        return found[found >= 0]

    def add(self, hashes: Array) -> Array:
        """The id of each hash (int64), the new ones added."""
        fresh = np.unique(hashes)
        fresh = fresh[self._lookup(fresh) < 0]
        if len(fresh):
            at = np.searchsorted(self._hashes, fresh)
            new_ids = np.arange(len(self), len(self) + len(fresh), dtype=ID)
            self._hashes = np.insert(self._hashes, at, fresh)
            self._ids = np.insert(self._ids, at, new_ids)
        return self._lookup(hashes)

    def _lookup(self, hashes: Array) -> Array:
        found = np.full(len(hashes), -1, dtype=np.int64)
        if not len(self._hashes) or not len(hashes):
            return found
        at = np.minimum(np.searchsorted(self._hashes, hashes), len(self._hashes) - 1)
        hit = self._hashes[at] == hashes
        found[hit] = self._ids[at[hit]]
        return found


class WordTable:
    """Every file's words (rows in path order, as the graph's TagTable's)."""

    def __init__(self) -> None:
        self.vocabulary = Vocabulary()
        self.offsets = np.zeros(1, dtype=np.int64)
        self.ids = np.zeros(0, dtype=ID)
        self.counts = np.zeros(0, dtype=COUNT)

    @property
    def nbytes(self) -> int:
        """Bytes held: the arrays and the vocabulary."""
        arrays = self.offsets.nbytes + self.ids.nbytes + self.counts.nbytes
        return int(arrays + self.vocabulary.nbytes)

    def lengths(self) -> Array:
        """Each row's number of distinct words."""
        return np.diff(self.offsets)

    def changed(
        self, rows: Mapping[str, int | None], files: Mapping[str, Mapping[str, int]]
    ) -> dict[str, Words]:
        """The words of those `files` (path -> word -> count) that are new or differ from their
        row's (`rows`: each path's row now, None for a new file); new words join the
        vocabulary."""
        paths = list(files)
        sizes = np.array([len(files[p]) for p in paths], dtype=np.int64)
        total = int(sizes.sum())
        ids = self.vocabulary.add(_hashes([w for p in paths for w in files[p]]))
        counts = np.fromiter((c for p in paths for c in files[p].values()), np.int64, total)
        owner = np.repeat(np.arange(len(paths)), sizes)
        order = np.lexsort((ids, owner))  # by file, then id
        ids, owner, counts = ids[order], owner[order], counts[order]
        fresh = np.ones(len(ids), dtype=bool)  # two words of a file sharing a hash: one
        fresh[1:] = (ids[1:] != ids[:-1]) | (owner[1:] != owner[:-1])
        at = np.flatnonzero(fresh)
        counts = np.add.reduceat(counts, at) if len(at) else counts
        ids, owner = ids[at].astype(ID), owner[at]
        counts = np.minimum(counts, COUNT_MAX).astype(COUNT)
        bounds = np.searchsorted(owner, np.arange(len(paths) + 1))
        out: dict[str, Words] = {}
        for i, path in enumerate(paths):
            words = (ids[bounds[i] : bounds[i + 1]], counts[bounds[i] : bounds[i + 1]])
            row = rows.get(path)
            if row is None or not self._same(row, words):
                out[path] = words
        return out

    def _same(self, row: int, words: Words) -> bool:
        span = slice(self.offsets[row], self.offsets[row + 1])
        ids, counts = words
        return np.array_equal(self.ids[span], ids) and np.array_equal(self.counts[span], counts)

    def apply(self, remap: Array | None, rows: Mapping[int, Words], n: int) -> None:
        """The table once the graph's rows moved (`remap`: old row -> new row, -1 gone; None:
        none did) and the rows in `rows` (new row -> its words) were given new words; `n` rows
        now. Spliced as the TagTable's columns are: one column at a time."""
        source = np.arange(n, dtype=np.int64)  # new row -> the old row whose words it keeps
        if remap is not None:
            source = np.full(n, -1, dtype=np.int64)
            kept = np.flatnonzero(remap >= 0)
            source[remap[kept]] = kept
        source[np.array(sorted(rows), dtype=np.int64)] = -1
        before = np.concatenate([[-2], source])[:n]
        starts = np.flatnonzero((source != before + 1) | (source < 0) | (before < 0))
        runs: list[Any] = []
        ends = np.append(starts[1:], n) if len(starts) else starts
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
            old = int(source[a])
            runs.append(rows[a] if old < 0 else (old, old + b - a))
        self.ids = splice_column(self.offsets, self.ids, runs, 0)
        self.counts = splice_column(self.offsets, self.counts, runs, 1)
        self.offsets = splice_offsets(self.offsets, runs)

    def hits(self, ids: Array) -> Iterator[tuple[Array, Array, Array]]:
        """Where the words `ids` (unique) are said, whole rows of about SIEVE_BLOCK entries at
        a time (the kernel's common words are said by most of its 78,000 files: their hits at
        once took 100 MiB more): each hit's row, word id and count."""
        wanted = np.zeros(len(self.vocabulary), dtype=bool)
        wanted[ids] = True
        first, n = 0, len(self.offsets) - 1
        while first < n:
            reach = self.offsets[first] + SIEVE_BLOCK
            last = min(n, max(first + 1, int(np.searchsorted(self.offsets, reach, "right")) - 1))
            start, end = self.offsets[first], self.offsets[last]
            at = np.flatnonzero(wanted[self.ids[start:end]]) + start
            rows = np.searchsorted(self.offsets, at, side="right") - 1
            yield rows, self.ids[at].astype(np.int64), self.counts[at].astype(np.float64)
            first = last

    def document_counts(self, ids: Array) -> Array:
        """How many files say each word (indexed by id; counted for `ids` only)."""
        counts = np.zeros(len(self.vocabulary), dtype=np.int64)
        for _, hit, _ in self.hits(ids):
            counts += np.bincount(hit, minlength=len(counts))
        return counts

    def row_ids(self, row: int) -> Array:
        """The ids of the words file `row` says."""
        return self.ids[self.offsets[row] : self.offsets[row + 1]].astype(np.int64)
