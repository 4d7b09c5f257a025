"""core.repomap.columns.splice_in_place: the rows a splice keeps are moved within the column's
buffer and the new rows written there; whatever the runs, the column is the rows laid end to
end (the oracle: a Python list of rows), and a column outgrowing its room is copied."""

from __future__ import annotations

import random

import numpy as np

from tokend.core.repomap.columns import (
    MOVE_BLOCK,
    edited_in_place,
    splice_column,
    splice_in_place,
    splice_offsets,
)


def test_any_splice_in_place_lays_out_the_rows_a_plain_list_would() -> None:
    """Random tables and random runs of kept rows and new rows, spliced again and again in the
    same buffer; the oracle is a Python list of rows."""
    rng = random.Random(22)
    for _ in range(300):
        rows = [[rng.randrange(1000) for _ in range(rng.randrange(6))] for _ in range(12)]
        offsets = np.cumsum([0] + [len(r) for r in rows])
        column = splice_column(offsets, np.array([x for r in rows for x in r]), [(0, 12)], 0)
        for _ in range(4):
            runs: list[object] = []
            want: list[list[int]] = []
            at = 0
            while at < len(rows):
                if rng.random() < 0.5:  # keep a run of old rows
                    end = rng.randrange(at, len(rows)) + 1
                    runs.append((at, end))
                    want.extend(rows[at:end])
                    at = end
                else:  # drop a row, maybe putting new ones in its place
                    at += rng.randrange(2)
                    for _ in range(rng.randrange(3)):
                        new = [rng.randrange(1000) for _ in range(rng.randrange(40))]
                        runs.append((np.array(new, dtype=column.dtype),))
                        want.append(new)
            column = splice_in_place(offsets, column, runs, 0)
            offsets = splice_offsets(offsets, runs)
            rows = want
            assert column.tolist() == [x for r in rows for x in r]
            assert np.diff(offsets).tolist() == [len(r) for r in rows]


def test_rows_moved_farther_than_a_block_in_both_directions() -> None:
    """A kept run longer than MOVE_BLOCK moved right (a new row before it), then left (the row
    gone): moved a block at a time in the order that reads each block before writing it."""
    tail = np.arange(3 * MOVE_BLOCK + 17, dtype=np.int64)
    offsets = np.array([0, 5, 5 + len(tail)])
    column = splice_column(offsets, np.concatenate([np.full(5, -1), tail]), [(0, 2)], 0)
    grown = [(0, 1), (np.full(300, -2),), (1, 2)]
    column = splice_in_place(offsets, column, grown, 0)
    offsets = splice_offsets(offsets, grown)
    assert column.tolist() == [-1] * 5 + [-2] * 300 + tail.tolist()
    shrunk = [(0, 1), (2, 3)]
    column = splice_in_place(offsets, column, shrunk, 0)
    assert column.tolist() == [-1] * 5 + tail.tolist()


def test_any_edit_in_place_is_numpys_delete_then_insert() -> None:
    """edited_in_place against np.insert(np.delete(...)), on columns with and without room."""
    rng = random.Random(24)
    for _ in range(2000):
        size = rng.randrange(30)
        column = np.arange(100, 100 + size, dtype=np.int64)
        if rng.random() < 0.5:  # a column with room, as splice_column leaves it
            column = splice_column(np.array([0, size]), column, [(0, 1)], 0)
        gone = sorted(rng.sample(range(size), rng.randrange(size + 1)))
        at = sorted(rng.randrange(size - len(gone) + 1) for _ in range(rng.randrange(6)))
        values = np.array([rng.randrange(1000) for _ in at], dtype=np.int64)
        want = np.insert(np.delete(column, gone), at, values).tolist()
        got = edited_in_place(
            column, np.array(gone, dtype=np.int64), np.array(at, dtype=np.int64), values
        )
        assert got.tolist() == want
