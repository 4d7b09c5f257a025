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


def test_the_hits_of_common_words_are_read_a_small_block_at_a_time() -> None:
    """Every one of 20,000 files says words 0-199, and 0-99 are asked (a focus whose words
    most of the kernel's files say): 2,000,000 hits. Each block's positions, rows, places and
    counts are held while it is read (main: blocks of 262,144 entries, half of them hits)."""
    ids = np.arange(WORDS, dtype=ID)
    table = WordTable()
    table.apply(
        None, {r: (ids, np.full(WORDS, r % 200 + 1, dtype=np.uint8)) for r in range(ROWS)}, ROWS
    )
    asked = np.arange(100, dtype=np.int64)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        per_row = np.zeros(ROWS)
        for rows, at, counts in table.hits(asked):
            np.add.at(per_row, rows, counts * (at + 1))
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    expected = np.array([(r % 200 + 1) * 5050.0 for r in range(ROWS)])  # sum of 1..100
    assert np.array_equal(per_row, expected)
    assert peak < 4 << 20, peak  # main: 9.9 MB (blocks of 262,144 entries); now 3.4
