"""A new focus's signals (core.repomap.rank) hold no array the size of the graph or of the
references. The `near` signal of a focus finds the edges into the focus files
with a byte an edge (issue 22: on the kernel it gathered a float per edge of the whole graph,
and a bool beside it, at every new focus: part of a map request's rise above the daemon's
base). Counted by tracemalloc, which sees numpy's arrays: bytes, not time. The scores are
checked against a plain Python reading of the signal."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from tokend.core.repomap.rank import near

FILES, EDGES = 50_000, 2_000_000


def _graph(files: int, edges: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR arrays as core.repomap.edges keeps them: int64 offsets, int32 targets, float64
    weights (each row's over its total)."""
    rng = np.random.default_rng(seed)
    sizes = rng.multinomial(edges, np.ones(files) / files)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    targets = rng.integers(0, files, edges).astype(np.int32)
    weights = rng.random(edges)
    return offsets, targets, weights


def _near_by_hand(offsets, targets, weights, focus: dict[int, float]) -> list[float]:  # type: ignore[no-untyped-def]
    """Each file's weight to and from the focus rows, edge by edge."""
    score = [0.0] * (len(offsets) - 1)
    for row in range(len(offsets) - 1):
        for e in range(int(offsets[row]), int(offsets[row + 1])):
            target = int(targets[e])
            if row in focus:
                score[target] += focus[row] * float(weights[e])
            if focus.get(target, 0.0) > 0:
                score[row] += focus[target] * float(weights[e])
    return score


def test_a_focus_finds_its_edges_without_a_float_per_edge() -> None:
    offsets, targets, weights = _graph(FILES, EDGES, 22)
    focus = {17: 1.0, 4_021: 1.0, 33_333: 0.5}
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        near(offsets, targets, weights, focus)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    # main: 17.9 MiB (share[targets], a float64 an edge, and its bool beside it)
    assert peak < 3 * EDGES, f"{peak / 2**20:.1f} MiB"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_near_is_each_files_weight_to_and_from_the_focus(seed: int) -> None:
    offsets, targets, weights = _graph(300, 3_000, seed)
    focus = {5: 1.0, 77: 0.25, 200: 0.0, 299: 2.0}
    got = near(offsets, targets, weights, focus)
    assert np.allclose(got, _near_by_hand(offsets, targets, weights, focus), rtol=1e-12, atol=0)


def test_the_lexical_sieve_keeps_no_flag_per_reference() -> None:
    """BM25's membership sieve over the kernel's 4 million reference keys (core.repomap.rank:
    the lexical signal of every new focus) holds its buckets and a block's temporaries, not a
    flag per value nor a whole-size block."""
    from tokend.core.repomap.sieve import member

    rng = np.random.default_rng(22)
    keys = rng.integers(0, 2**63, 4_000_000, dtype=np.uint64)
    query = np.unique(np.concatenate([keys[::40_000], rng.integers(0, 2**63, 50, dtype=np.uint64)]))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        found = member(keys, query)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    if found.dtype == bool:  # main's answer: a flag per key
        found = np.flatnonzero(found)
    assert np.array_equal(found, np.flatnonzero(np.isin(keys, query)))
    # main: 8.8 MiB (a flag per key, 3.8 MiB; the buckets, 1 MiB; a block of 2^18 keys' bucket
    # numbers, twice, 4 MiB)
    assert peak < 3 * 2**20, f"{peak / 2**20:.1f} MiB"
