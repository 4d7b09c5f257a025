"""The map's definitions, chosen from the file rank (core.repomap.graph): definitions of a focus
identifier first, then each file's best PER_FILE, files in rank order, then the rest of each
file's; within a file a definition weighs the rank that flows to its name along references
(core.repomap.edges.name_flow); ties fall to position (path, line, name key).

The files that fill the limit hold hundreds of thousands of definitions on the kernel (a text
focus, on a 25,000-file part of it: 674,000, its big headers'): they are gone through DEFS_BLOCK definitions at a time, and only what can still reach
the limit is kept (issue 22: all of them at once, with a weight per defined name, took 30-58 MiB
on a 25,000-file part of the kernel, 12-15 MiB now, for the same definitions)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from tokend.core.repomap import edges as graph_rows
from tokend.core.repomap.edges import Edges
from tokend.core.repomap.places import Places
from tokend.core.repomap.store import TagTable, name_key

RANK_DECIMALS = 12  # scores are rounded so the order does not hang on the last bits
PER_FILE = 1  # definitions a file shows before the next file's come (bench.repomap_eval: 1 shows the most targets)
DEFS_BLOCK = 1 << 14  # definitions gone through at once (whole files: at least one)

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
    the files in rank order (`order`, focus files left out) and the graph's rank. Three runs,
    each by (file's place in the rank, weight down, position): a focus identifier's
    definitions outside the focus files; each file's best PER_FILE others; the rest."""
    t.groups()  # the group columns (d_group)
    found = (t.group_of(name_key(i)) for i in identifiers)
    wanted = np.array(sorted({g for g in found if g is not None}), dtype=np.int32)
    place = np.full(len(t.paths), len(order), dtype=np.int64)  # each file's place in the rank
    place[order] = np.arange(len(order))
    counts = (t.d_off[1:] - t.d_off[:-1])[order]
    if limit is not None:  # the files whose first PER_FILE definitions fill `limit`
        enough = np.searchsorted(np.cumsum(np.minimum(counts, PER_FILE)), limit)
        order, counts = order[: enough + 1], counts[: enough + 1]
    hits = _hits(t, wanted, focus_rows)
    needed = _needed(t, hits, order, counts)  # the groups weighed, each with its place
    flow: Array = graph_rows.name_flow(t, edges, graph_rank, needed)
    np.round(flow, RANK_DECIMALS, out=flow)  # (in place: a float a needed name, not two)
    firsts, rest = _Run(None), _Run(limit)
    for entries, position in _blocks(t, order, counts):
        weight = flow[needed.place(t.d_group[entries])]
        within = np.lexsort((entries, -weight, position))  # by file, best definition first
        nth = np.empty(len(entries), dtype=np.int64)  # a file's runs: as `position` ascends
        nth[within] = np.arange(len(entries)) - np.searchsorted(position, position)
        other = ~np.isin(t.d_group[entries], wanted)
        first = other & (nth < PER_FILE)
        firsts.add(entries[first], position[first], weight[first])
        if limit is None or len(hits) + len(firsts) < limit:
            later = other & (nth >= PER_FILE)
            rest.add(entries[later], position[later], weight[later])
    top = _Run(None)
    top.add(hits, place[_file_of(t.d_off, hits)], flow[needed.place(t.d_group[hits])])
    ranked = np.concatenate([top.ordered(), firsts.ordered(), rest.ordered()])
    if limit is not None:
        ranked = ranked[:limit]
    return _file_of(t.d_off, ranked).tolist(), t.d_line[ranked].tolist()


class _Run:
    """Definitions (entry, file's place, weight) gathered a block at a time, blocks in the
    files' rank order; with a `cap`, those past the first `cap` of the run are dropped."""

    def __init__(self, cap: int | None) -> None:
        self.cap, self.size = cap, 0
        self.parts: list[tuple[Array, Array, Array]] = []

    def __len__(self) -> int:
        return self.size

    def add(self, entries: Array, position: Array, weight: Array) -> None:
        if self.cap is not None and self.size >= self.cap:
            return  # (a later block's files come later in the rank)
        self.parts.append((entries, position, weight))
        self.size += len(entries)

    def ordered(self) -> Array:
        """The entries by (place, weight down, entry); the first `cap` of them."""
        if not self.parts:
            return np.zeros(0, dtype=np.int64)
        entries, position, weight = (np.concatenate(c) for c in zip(*self.parts, strict=True))
        ranked = entries[np.lexsort((entries, -weight, position))]
        return ranked if self.cap is None else ranked[: self.cap]


def _needed(t: TagTable, hits: Array, order: Array, counts: Array) -> Places:
    """The groups of the definitions `hits` and of the files `order`: the names whose flow the
    choice reads (a bit a group, not a slot of 4 bytes: 8.5 MiB less on the kernel's 2.2
    million names)."""
    flagged = np.zeros(len(t.groups()), dtype=bool)
    flagged[t.d_group[hits]] = True
    for entries, _ in _blocks(t, order, counts):
        flagged[t.d_group[entries]] = True
    return Places(flagged)


def _hits(t: TagTable, wanted: Array, focus_rows: list[int]) -> Array:
    """The definitions of the `wanted` groups outside the focus files, ascending."""
    if not len(wanted):
        return np.zeros(0, dtype=np.int64)
    found = [
        start + np.flatnonzero(np.isin(t.d_group[start : start + DEFS_BLOCK], wanted))
        for start in range(0, len(t.d_group), DEFS_BLOCK)
    ]
    hits = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
    return hits[~np.isin(_file_of(t.d_off, hits), focus_rows)]


def _blocks(t: TagTable, order: Array, counts: Array) -> Iterator[tuple[Array, Array]]:
    """The definitions of the files `order` (in that order; `counts` of each) about DEFS_BLOCK
    at a time, whole files: (their entries, each one's file's place in `order`)."""
    ends = np.cumsum(counts)
    start = 0
    while start < len(order):
        stop = max(int(np.searchsorted(ends, ends[start] - counts[start] + DEFS_BLOCK, "right")),
                   start + 1)  # fmt: skip
        part = counts[start:stop]
        total = int(part.sum())
        firsts = t.d_off[order[start:stop]]
        entries = np.repeat(firsts - np.cumsum(part) + part, part) + np.arange(total)
        yield entries, np.repeat(np.arange(start, stop), part)
        start = stop


def _file_of(offsets: Array, positions: Array) -> Array:
    """The row of each entry position of a table whose rows start at `offsets`."""
    return np.searchsorted(offsets, positions, side="right") - 1
