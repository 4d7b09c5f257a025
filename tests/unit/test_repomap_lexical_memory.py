"""The lexical signal (core.repomap.rank.lexical: BM25 of each file's names and path words
against the focus's keys) gathers its terms a part of the files at a time, in 32-bit columns
(issue 22: gathered at once, each hit's row, key and count in 64-bit columns, sorted and
copied, held 7-11 MiB at the peak of a kernel map request). Counted by tracemalloc, which sees
numpy's arrays: bytes, not time. The scores are checked against BM25 written out plainly."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np

from tokend.core.repomap.keys import sub_words, word_key
from tokend.core.repomap.packed import KEY, PackedTags
from tokend.core.repomap.rank import K1, B, lexical, path_terms
from tokend.core.repomap.store import TagTable


def _tree(files: int, names: int, seed: int) -> tuple[TagTable, list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    keys = np.unique(rng.integers(0, 1 << 62, size=names, dtype=np.uint64)).astype(KEY)
    packed = {}
    for i in range(files):
        defs = np.sort(rng.choice(keys, int(rng.integers(0, 40))))  # (a name twice, at times)
        refs = np.unique(rng.choice(keys, int(rng.integers(0, 150))))
        counts = rng.integers(1, 6, len(refs)).astype(np.int32)
        packed[f"drivers/part{i % 13}/file_{i % 40}_{i}.c"] = PackedTags(
            defs, np.arange(len(defs), dtype=np.int32), refs, counts
        )
    table = TagTable()
    table.apply(packed, track=False)
    return table, sorted(packed), keys


def _plain_bm25(
    table: TagTable, paths: list[str], query: set[int], length: np.ndarray
) -> list[float]:
    """BM25 (k1, b) of each file: its terms are the query's keys among its references (as
    often as they occur), its definitions (once each) and its path's words."""
    n = len(paths)
    groups = table.groups()
    tf: list[dict[int, int]] = []
    for row, path in enumerate(paths):
        mine: dict[int, int] = {}
        for e in range(int(table.r_off[row]), int(table.r_off[row + 1])):
            if int(table.r_key[e]) in query:
                mine[int(table.r_key[e])] = mine.get(int(table.r_key[e]), 0) + int(table.r_count[e])
        for e in range(int(table.d_off[row]), int(table.d_off[row + 1])):
            key = int(groups[table.d_group[e]])
            if key in query:
                mine[key] = mine.get(key, 0) + 1
        for key in {word_key(w) for w in sub_words(path.rsplit(".", 1)[0])}:
            if key in query:
                mine[key] = mine.get(key, 0) + 1
        tf.append(mine)
    df: dict[int, int] = {}
    for mine in tf:
        for key in mine:
            df[key] = df.get(key, 0) + 1
    mean = max(float(np.mean(length)), 1.0)
    scores = []
    for row, mine in enumerate(tf):
        norm = K1 * (1 - B + B * float(length[row]) / mean)
        total = 0.0
        for key, count in mine.items():
            idf = math.log1p((n - df[key] + 0.5) / (df[key] + 0.5))
            total += idf * count * (K1 + 1) / (count + norm)
        scores.append(total)
    return scores


def test_the_lexical_scores_are_bm25() -> None:
    table, paths, keys = _tree(files=700, names=3_000, seed=4)
    terms = path_terms(paths)
    rng = np.random.default_rng(4)
    wanted = np.concatenate([rng.choice(keys, 400), terms.keys[:30]])
    query = np.unique(wanted.astype(KEY))
    length = rng.random(len(paths)) * 300 + 1
    got = lexical(table, terms, query, length)
    want = _plain_bm25(table, paths, {int(k) for k in query}, length)
    assert np.allclose(got, want, rtol=1e-12, atol=0)
    assert (got > 0).sum() > 600


def test_the_terms_are_gathered_a_part_of_the_files_at_a_time() -> None:
    """12,000 files of up to 150 references over 20,000 names; a query of 6,000 of them: about
    230,000 references hit."""
    table, paths, keys = _tree(files=12_000, names=20_000, seed=22)
    terms = path_terms(paths)
    rng = np.random.default_rng(22)
    query = np.unique(rng.choice(keys, 6_000))
    length = rng.random(len(paths)) * 300 + 1
    hits = int(np.isin(table.r_key, query).sum())
    table.groups()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        lexical(table, terms, query, length)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert hits > 200_000
    assert peak < 32 * hits + (1 << 20), (peak, hits)  # main: 21.2 MB (92 a hit); now 6.7
