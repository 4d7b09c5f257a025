"""The map's definitions, chosen from the file rank (core.repomap.graph): definitions of a focus
identifier first, then each file's best PER_FILE, files in rank order, then the rest of each
file's; within a file a definition weighs the rank that flows to its name along references
(core.repomap.edges.name_flow); ties fall to position (path, line, name key)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tokend.core.repomap import edges as graph_rows
from tokend.core.repomap.edges import Edges
from tokend.core.repomap.store import TagTable, name_key

RANK_DECIMALS = 12  # scores are rounded so the order does not hang on the last bits
PER_FILE = 1  # definitions a file shows before the next file's come (bench.repomap_eval: 1 shows the most targets)

Array = Any


def chosen_definitions(
    t: TagTable,
    edges: Edges,
    graph_rank: Array,
    order: Array,
    identifiers: frozenset[str],
    focus_rows: list[int],
    limit: int | None,
) -> tuple[list[int], list[int]]:
    """The rows and lines of the definitions to show, best first (the first `limit`), given
    the files in rank order (`order`, focus files left out) and the graph's rank."""
    found = (t.group_of(name_key(i)) for i in identifiers)
    wanted = np.array(sorted({g for g in found if g is not None}), dtype=np.int32)
    place = np.full(len(t.paths), len(order), dtype=np.int64)  # each file's place in the rank
    place[order] = np.arange(len(order))
    counts = (t.d_off[1:] - t.d_off[:-1])[order]
    if limit is not None:  # the files whose first PER_FILE definitions fill `limit`
        enough = np.searchsorted(np.cumsum(np.minimum(counts, PER_FILE)), limit)
        order, counts = order[: enough + 1], counts[: enough + 1]
    starts = t.d_off[order]
    chosen = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    position = np.repeat(np.arange(len(order)), counts)  # the file's place in the rank
    extra = np.zeros(0, dtype=np.int64)
    if len(wanted):  # a focus identifier's definitions in focus files are not shown
        extra = np.setdiff1d(np.flatnonzero(np.isin(t.d_group, wanted)), chosen)
        extra = extra[~np.isin(_file_of(t.d_off, extra), focus_rows)]
    t.groups()  # the group columns (d_group)
    needed = np.unique(t.d_group[np.concatenate([chosen, extra])])  # only their flow
    flow = graph_rows.name_flow(t, edges, graph_rank, needed)
    group_weight: Array = np.round(flow, RANK_DECIMALS)
    weight = group_weight[t.d_group[chosen]]
    within = np.lexsort((chosen, -weight, position))  # by file, best definition first
    nth = np.empty(len(chosen), dtype=np.int64)
    nth[within] = np.arange(len(chosen)) - np.repeat(np.cumsum(counts) - counts, counts)
    hit = np.isin(t.d_group[chosen], wanted)
    if len(extra):
        chosen = np.concatenate([chosen, extra])
        position = np.concatenate([position, place[_file_of(t.d_off, extra)]])
        weight = np.concatenate([weight, group_weight[t.d_group[extra]]])
        nth = np.concatenate([nth, np.zeros(len(extra), dtype=np.int64)])
        hit = np.concatenate([hit, np.ones(len(extra), dtype=bool)])
    later = (nth >= PER_FILE) & ~hit  # a focus identifier's definitions all come first
    ranked = np.lexsort((chosen, -weight, position, later, ~hit))
    if limit is not None:
        ranked = ranked[:limit]
    files, lines = _file_of(t.d_off, chosen[ranked]).tolist(), t.d_line[chosen[ranked]].tolist()
    return files, lines


def _file_of(offsets: Array, positions: Array) -> Array:
    """The row of each entry position of a table whose rows start at `offsets`."""
    return np.searchsorted(offsets, positions, side="right") - 1
