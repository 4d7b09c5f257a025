"""The word table's row totals (BM25's file lengths, asked at the first text focus after each
change) are summed a block of rows at a time: main cast every count to int64 at once, 8 bytes a
word of the table beside it (34 MiB on 25,000 of the kernel's files; issue 22). Counted by
tracemalloc, which sees numpy's arrays: bytes, not time. The sums are checked against each
row's own."""

from __future__ import annotations

import tracemalloc

import numpy as np

from tokend.core.repomap.words import ID, WordTable

ROWS, WORDS = 20_000, 200  # 4,000,000 words (their counts: 4 MB as uint8, 32 MB as int64)


def test_the_totals_are_summed_without_a_wide_copy_of_the_counts() -> None:
    rng = np.random.default_rng(22)
    sizes = rng.integers(0, 2 * WORDS, ROWS)
    sizes[::7] = 0  # files that say nothing
    rows = {
        r: (np.arange(int(size), dtype=ID), rng.integers(1, 256, int(size), dtype=np.uint8))
        for r, size in enumerate(sizes)
    }
    table = WordTable()
    table.apply(None, rows, ROWS)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        totals = table.totals()
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    words = int(sizes.sum())
    assert peak < 2 * words, (peak, words)  # main: 8 bytes a word (the counts as int64)
    assert totals.tolist() == [float(rows[r][1].sum(dtype=np.int64)) for r in range(ROWS)]
