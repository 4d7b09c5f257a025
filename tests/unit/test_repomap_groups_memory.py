"""The first map request turns the table's keys into group columns (core.repomap.store
TagTable.groups): looked up a block at a time, so beside the two int32 columns it makes only a
block's positions are held (issue 22: at once, 21 bytes a reference and 12 a definition more,
on the kernel about 40 MiB at the daemon's peak). Counted by tracemalloc, which sees numpy's
arrays: bytes, not time."""

from __future__ import annotations

import tracemalloc

import numpy as np

from tokend.core.repomap.columns import RENUMBER_BLOCK
from tokend.core.repomap.packed import KEY, PackedTags
from tokend.core.repomap.store import TagTable

FILES = 100
DEFS, REFS = 5_000, 20_000  # a file's: 500,000 definitions and 2,000,000 references in all


def _table() -> tuple[TagTable, dict[str, PackedTags]]:
    rng = np.random.default_rng(22)
    names = np.unique(rng.integers(0, 1 << 62, size=300_000, dtype=np.uint64)).astype(KEY)
    files = {}
    for i in range(FILES):
        defs = rng.choice(names, DEFS)
        refs = np.unique(np.concatenate([rng.choice(names, REFS // 2), rng.integers(
            0, 1 << 62, size=REFS, dtype=np.uint64)]))[:REFS].astype(KEY)  # fmt: skip
        files[f"f{i:03}.c"] = PackedTags(
            defs, np.arange(DEFS, dtype=np.int32), refs, np.ones(len(refs), dtype=np.int32)
        )
    table = TagTable()
    table.apply(files, track=False)
    table.definers()
    return table, files


def test_the_group_columns_are_made_a_block_at_a_time() -> None:
    table, files = _table()
    d_keys = np.concatenate([files[p].def_keys for p in sorted(files)])
    r_keys = np.concatenate([files[p].ref_keys for p in sorted(files)])
    entries = len(d_keys) + len(r_keys)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        groups = table.groups()
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    columns = 4 * entries  # the two int32 columns themselves
    assert peak <= columns + 48 * RENUMBER_BLOCK  # main: 21 bytes a reference more at once
    # the same groups an independent lookup gives (-1: a name nobody defines)
    assert np.array_equal(groups[table.d_group], d_keys)
    defined = np.isin(r_keys, groups)
    assert np.array_equal(table.r_group >= 0, defined)
    assert np.array_equal(groups[table.r_group[defined]], r_keys[defined])
    assert 0 < defined.sum() < len(r_keys)
