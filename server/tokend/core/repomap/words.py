"""What each file says, as a task's text is read against it (core.repomap.rank's BM25): the
words of its text (core.repomap.tags.text_words, its WORDS_MAX most frequent), kept compactly.

A word is its id, the CRC-32 the tag workers computed (core.repomap.keys.word_id): no vocabulary
is kept to number the words. A file's words are their ids (uint32, ascending) and counts (uint8;
a count past 255 is kept as 255: BM25's term has all but saturated long before) in two flat
arrays whose rows are the files in path order, as core.repomap.store's tables are: 5 bytes a
word of a file, where a dictionary of strings per file takes tens of bytes an entry. The ids
are the same in every process, and BM25 adds a file's word terms smallest first: the same sums
every time.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from typing import Any

import numpy as np

from tokend.core.repomap.columns import splice_in_place, splice_offsets
from tokend.core.repomap.keys import word_ids
from tokend.core.repomap.tags import FileTags, spoken
from tokend.core.repomap.text import MARK

ID = np.uint32
COUNT = np.uint8
COUNT_MAX = int(np.iinfo(COUNT).max)
SIEVE_BLOCK = 1 << 18  # entries read at once (bounded temporaries on the kernel)
BUCKETS = 1 << 20  # of the membership sieve (hits)
TOTALS_ROWS = 1024  # rows summed at once (a file of text words: WORDS_MAX of them at most)

Array = Any
Words = tuple[Array, Array]  # one file's (ids ascending, counts)


class SaidArrays(Mapping[int, int]):
    """A file's words (id -> count) as two arrays of 32-bit integers, in the order counted, as
    the word workers send them (adapters.word_workers): 8 bytes a word, where a dictionary of
    Python ints takes about 70 (issue 22: the words' pass held two chunks of them at each
    landing). Read as a mapping (keys and values as Python ints); WordTable.changed reads
    the arrays."""

    __slots__ = ("counts", "ids")

    def __init__(self, ids: bytes, counts: bytes) -> None:
        self.ids = np.frombuffer(ids, dtype=np.uint32)
        self.counts = np.frombuffer(counts, dtype=np.uint32)

    @classmethod
    def of(cls, ids: Array, counts: Array) -> SaidArrays:
        """From the arrays themselves (uint32 each)."""
        made = cls.__new__(cls)
        made.ids, made.counts = ids, counts
        return made

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[int]:
        return iter(self.ids.tolist())

    def __getitem__(self, word: int) -> int:
        at = np.flatnonzero(self.ids == word)
        if not len(at):
            raise KeyError(word)
        return int(self.counts[at[0]])

    def values(self) -> ValuesView[int]:
        return self._dict().values()

    def items(self) -> ItemsView[int, int]:
        return self._dict().items()

    def _dict(self) -> dict[int, int]:
        return dict(zip(self.ids.tolist(), self.counts.tolist(), strict=True))


def sections(said: Mapping[int, int]) -> tuple[Mapping[int, int], Mapping[int, int]]:
    """A file's words and its whole tokens: what core.repomap.text.count_words counted before
    and after MARK (a count without MARK, the words of a file's references: words alone)."""
    if isinstance(said, SaidArrays):
        at = np.flatnonzero(said.ids == MARK)
        if not len(at):
            return said, {}
        i, ids, counts = int(at[0]), said.ids, said.counts
        return SaidArrays.of(ids[:i], counts[:i]), SaidArrays.of(ids[i + 1 :], counts[i + 1 :])
    if MARK not in said:
        return said, {}
    items = list(said.items())
    i = next(i for i, (key, _) in enumerate(items) if key == MARK)
    return dict(items[:i]), dict(items[i + 1 :])


def said(tags: FileTags) -> Mapping[int, int]:
    """The words a file says: its text's, else (tags made without them) its references'."""
    if tags.words:
        return tags.words
    out: dict[str, int] = {}
    for name, count in tags.references.items():
        for word, n in spoken(name).items():
            out[word] = out.get(word, 0) + n * int(count)
    return word_ids(out)


class WordTable:
    """Every file's words (rows in path order, as the graph's TagTable's)."""

    def __init__(self) -> None:
        self.offsets = np.zeros(1, dtype=np.int64)
        self.ids = np.zeros(0, dtype=ID)
        self.counts = np.zeros(0, dtype=COUNT)
        self._totals: Array | None = None  # totals(), until the rows change
        self._found: tuple[bytes, Array] | None = None  # the last document_counts' ids, counts

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return int(self.offsets.nbytes + self.ids.nbytes + self.counts.nbytes)

    def lengths(self) -> Array:
        """Each row's number of distinct words."""
        return np.diff(self.offsets)

    def totals(self) -> Array:
        """Each row's words counted as often as said (float), summed row by row in place,
        TOTALS_ROWS rows at a time (the counts cast to int64 all at once took 8 bytes a word
        of the table beside it: 34 MiB on 25,000 of the kernel's files, at the first text focus
        after each change)."""
        if self._totals is None:
            n, sizes = len(self.offsets) - 1, self.lengths()
            self._totals = np.zeros(n)
            full = np.flatnonzero(sizes > 0)
            for first in range(0, len(full), TOTALS_ROWS):
                rows = full[first : first + TOTALS_ROWS]
                start, end = self.offsets[rows[0]], self.offsets[rows[-1] + 1]
                part = self.counts[start:end].astype(np.int64)  # (empty rows between: none)
                self._totals[rows] = np.add.reduceat(part, self.offsets[rows] - start)
        return self._totals

    def changed(
        self, rows: Mapping[str, int | None], files: Mapping[str, Mapping[int, int]]
    ) -> dict[str, Words]:
        """The words of those `files` (path -> word id -> count) that are new or differ from
        their row's (`rows`: each path's row now, None for a new file)."""
        paths = list(files)
        sizes = np.array([len(files[p]) for p in paths], dtype=np.int64)
        ids, counts = _flat([files[p] for p in paths], int(sizes.sum()))
        owner = np.repeat(np.arange(len(paths)), sizes)
        order = np.lexsort((ids, owner))  # by file, then id
        ids, owner, counts = ids[order], owner[order], counts[order]
        fresh = np.ones(len(ids), dtype=bool)  # (a file's ids are unique: kept as a guard)
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

    def apply(self, remap: Array | None, rows: Mapping[int, Words], n: int, room: int = 0) -> None:
        """The table once the graph's rows moved (`remap`: old row -> new row, -1 gone; None:
        none did) and the rows in `rows` (new row -> its words) were given new words; `n` rows
        now. Spliced as the TagTable's columns are: in each column's buffer when it fits, else
        in a new one with room for `room` more entries."""
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
        self.ids = splice_in_place(self.offsets, self.ids, runs, 0, room)
        self.counts = splice_in_place(self.offsets, self.counts, runs, 1, room)
        self.offsets = splice_offsets(self.offsets, runs)
        self._totals, self._found = None, None

    def empty(self, n: int) -> None:
        """`n` rows saying nothing (the arrays let go)."""
        self.offsets = np.zeros(n + 1, dtype=np.int64)
        self.ids, self.counts = np.zeros(0, dtype=ID), np.zeros(0, dtype=COUNT)
        self._totals, self._found = None, None

    def hits(self, ids: Array) -> Iterator[tuple[Array, Array, Array]]:
        """Where the words `ids` (ascending, unique) are said, whole rows of about SIEVE_BLOCK
        entries at a time (the kernel's common words are said by most of its 78,000 files:
        their hits at once took 100 MiB more): each hit's row, the word's index in `ids` and
        its count. A bucket table of the ids' low bits sifts the entries; only those in a
        wanted bucket are searched."""
        if not len(ids):
            return
        buckets = np.zeros(BUCKETS, dtype=bool)
        buckets[(ids & (BUCKETS - 1)).astype(np.intp)] = True
        first, n = 0, len(self.offsets) - 1
        while first < n:
            reach = self.offsets[first] + SIEVE_BLOCK
            last = min(n, max(first + 1, int(np.searchsorted(self.offsets, reach, "right")) - 1))
            start, end = self.offsets[first], self.offsets[last]
            part = self.ids[start:end]
            maybe = np.flatnonzero(buckets[part & (BUCKETS - 1)])
            at = np.minimum(np.searchsorted(ids, part[maybe]), len(ids) - 1)
            found = ids[at] == part[maybe]
            where, at = maybe[found] + start, at[found]
            rows = np.searchsorted(self.offsets, where, side="right") - 1
            yield rows, at, self.counts[where].astype(np.float64)
            first = last

    def document_counts(self, ids: Array) -> Array:
        """How many files say each word of `ids` (ascending, unique), in their order; the last
        words asked are remembered (the BM25 signals of one focus ask the same words)."""
        key = np.asarray(ids, dtype=np.int64).tobytes()
        if self._found is None or self._found[0] != key:
            found = np.zeros(len(ids), dtype=np.int64)
            for _, at, _ in self.hits(ids):
                found += np.bincount(at, minlength=len(ids))
            self._found = (key, found)
        return self._found[1]

    def row_ids(self, row: int) -> Array:
        """The ids of the words file `row` says (int64, ascending)."""
        return self.ids[self.offsets[row] : self.offsets[row + 1]].astype(np.int64)


def _flat(files: list[Mapping[int, int]], total: int) -> tuple[Array, Array]:
    """The files' words one after the other: their ids and counts (int64)."""
    arrays = [f for f in files if isinstance(f, SaidArrays)]
    if arrays and len(arrays) == len(files):
        ids = np.concatenate([f.ids for f in arrays]).astype(np.int64)
        return ids, np.concatenate([f.counts for f in arrays]).astype(np.int64)
    ids = np.fromiter((w for f in files for w in f), np.int64, total)
    counts = np.fromiter((c for f in files for c in f.values()), np.int64, total)
    return ids, counts
