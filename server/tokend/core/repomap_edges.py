"""The rows of the repo map's file graph: file r's out-edges, derived from its references and
who defines those names (core.repomap says why these weights).

A row's terms are summed in the order of its references (by key), then of its targets (by
row), and rounded to 9 decimals: the same whichever rows are derived with it, so rows derived
again after a change and spliced in (`replaced`) give the table a fresh derivation gives, bit
for bit. Rows are derived ROWS_PER_CHUNK at a time, which bounds the memory of a full pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tokend.core.repomap_store import TagTable, rows_of, splice_column, splice_offsets

MAX_DEFINERS = 20  # a name with more definers says nothing of where to look
ROWS_PER_CHUNK = 4096

Array = Any


@dataclass(slots=True)
class Edges:
    """The file graph as CSR arrays over the table's rows: weights normalized per row."""

    offsets: Array  # int64, rows + 1
    targets: Array  # int32
    weights: Array  # float64, a row's weights over its total
    totals: Array  # float64 per row: the sum of its (rounded) weights


def derive_rows(table: TagTable, rows: Array) -> Edges:
    """The out-edges of `rows` (ascending) as their own CSR table, a chunk of rows at a time."""
    definers = table.definers()
    parts: list[tuple[Array, Array, Array, Array]] = []
    for start in range(0, len(rows), ROWS_PER_CHUNK):
        parts.append(_derive_chunk(table, definers, rows[start : start + ROWS_PER_CHUNK]))
    lengths = [p[0] for p in parts] or [np.zeros(0, dtype=np.int64)]
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(np.concatenate(lengths), out=offsets[1:])

    def joined(i: int, dtype: Any) -> Array:
        return np.concatenate([p[i] for p in parts]) if parts else np.zeros(0, dtype=dtype)

    return Edges(offsets, joined(1, np.int32), joined(2, np.float64), joined(3, np.float64))


def _derive_chunk(
    table: TagTable, definers_of: tuple[Array, Array, Array], rows: Array
) -> tuple[Array, Array, Array, Array]:
    """(entries per row, targets, normalized weights, row totals) of some rows. Each row's
    terms are summed in the order of its references (by key) then its targets (by row): the
    same whichever rows are derived with it."""
    starts, ends = table.r_off[rows], table.r_off[rows + 1]
    counts = ends - starts
    entry = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    source = np.repeat(np.arange(len(rows)), counts)
    ref_keys = table.r_key[entry]
    groups, group_starts, definer_rows = definers_of
    group = np.searchsorted(groups, ref_keys)
    known = group < len(groups)
    known[known] = groups[group[known]] == ref_keys[known]
    group[~known] = len(groups)  # no definers: the empty run at the end
    low = group_starts[group].astype(np.int64)
    definers = np.where(known, group_starts[np.minimum(group + 1, len(groups))] - low, 0)
    del group, known
    keep = (definers >= 1) & (definers <= MAX_DEFINERS)
    low, definers, source = low[keep], definers[keep], source[keep]
    scale = np.where(ref_keys[keep] & np.uint64(1), 0.1, 1.0) / definers
    term = scale * np.sqrt(table.r_count[entry[keep]].astype(np.float64))
    spread = np.repeat(low - np.cumsum(definers) + definers, definers) + np.arange(definers.sum())
    target = definer_rows[spread]
    source = np.repeat(source, definers)
    term = np.repeat(term, definers)
    own = target != rows[source]
    target, source, term = target[own], source[own], term[own]
    order = np.lexsort((target, source))  # stable: a pair's terms stay in reference order
    target, source, term = target[order], source[order], term[order]
    if len(order):
        new = np.ones(len(order), dtype=bool)
        new[1:] = (target[1:] != target[:-1]) | (source[1:] != source[:-1])
        at = np.flatnonzero(new)
        summed = np.round(np.add.reduceat(term, at), 9)
        target, source = target[at], source[at]
    else:
        summed = term
    per_row = np.bincount(source, minlength=len(rows)).astype(np.int64)
    totals = np.zeros(len(rows))
    if len(summed):
        row_at = np.concatenate([[0], np.cumsum(per_row)[:-1]])
        has = per_row > 0
        totals[has] = np.add.reduceat(summed, row_at[has])
    weights = summed / totals[source] if len(summed) else summed
    return per_row, target.astype(np.int32), weights, totals


def renumbered(edges: Edges, remap: Array, rows: int) -> Edges:
    """The rows of the files that stay, renumbered; new files get empty rows; edges to a
    removed file are dropped (their rows are stale: that file's names left)."""
    if len(remap) == rows and np.array_equal(remap, np.arange(rows)):
        return edges
    old_rows = rows_of(edges.offsets)
    keep = (remap[old_rows] >= 0) & (remap[edges.targets] >= 0)
    new_rows = remap[old_rows[keep]]
    offsets = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(new_rows, minlength=rows), out=offsets[1:])
    totals = np.zeros(rows)
    kept = remap >= 0
    totals[remap[kept]] = edges.totals[kept]
    targets = remap[edges.targets[keep]].astype(np.int32)
    return Edges(offsets, targets, edges.weights[keep], totals)


def replaced(edges: Edges, rows: Array, fresh: Edges) -> Edges:
    """`edges` with the given rows (ascending) replaced by those of `fresh`."""
    runs: list[Any] = []
    done = 0
    for k, row in enumerate(rows.tolist()):
        runs.append((done, row))
        a, b = fresh.offsets[k], fresh.offsets[k + 1]
        runs.append((fresh.targets[a:b], fresh.weights[a:b]))
        done = row + 1
    runs.append((done, len(edges.totals)))
    targets = splice_column(edges.offsets, edges.targets, runs, 0)
    edges.targets = None  # the old column goes before the next new one is made
    weights = splice_column(edges.offsets, edges.weights, runs, 1)
    totals = edges.totals.copy()
    totals[rows] = fresh.totals
    return Edges(splice_offsets(edges.offsets, runs), targets, weights, totals)
