"""The rows of the repo map's file graph: file r's out-edges, derived from its references and
who defines those names (core.repomap.graph says why these weights), and from what it imports.

A reference of file r to a name goes to the files defining it; when r's imports reach some of
those files (core.repomap.imports), to those alone (RESOLVED_WEIGHT: an import says which), and
then even a name too common to say anything otherwise (over MAX_DEFINERS definers, up to
MAX_RESOLVED) is kept. A compound name (`parse_config`: the key's second bit) weighs
SPECIFIC_WEIGHT times a one-word one (`get`, `type`, `dict`: names shared by builtins and half
the files). A file also links to each module it imports directly (IMPORT_WEIGHT), so a module
that only re-exports (a package's `__init__.py`, an `index.ts`) has a rank of its own.

A row's terms are summed in the order of its references (by key), then its imports, per target
(by row), and rounded to 9 decimals: the same whichever rows are derived with it, so rows derived
again after a change and spliced in (`replaced`) give the table a fresh derivation gives, bit
for bit. Rows are derived ROWS_PER_CHUNK at a time, which bounds the memory of a full pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from tokend.core.repomap.columns import (
    found_at,
    rows_of,
    splice_in_place,
    splice_offsets,
    with_room,
)
from tokend.core.repomap.packed import PackedTags
from tokend.core.repomap.places import Places
from tokend.core.repomap.store import TagTable

MAX_DEFINERS = 20  # a name with more definers says nothing of where to look
MAX_RESOLVED = 2000  # ... unless an import picks among them (up to this many looked at)
RESOLVED_WEIGHT = 4.0
SPECIFIC_WEIGHT = 4.0
IMPORT_WEIGHT = 1.0
ROWS_PER_CHUNK = 2048  # (two at once when a build warms the graph: 4,096 rows' temporaries)
FLOW_BLOCK = 1 << 15  # references weighed at once (bounds the memory of a rank)
DENSE_PAIRS = 1 << 22  # up to 2,048 files, the pairs an import reaches are flags (4 MiB)

Array = Any
Each = Callable[[Callable[[Array], Any], Iterable[Array]], Iterable[Any]]  # `map`, or a pool's


@dataclass(slots=True)
class Edges:
    """The file graph as CSR arrays over the table's rows: weights normalized per row."""

    offsets: Array  # int64, rows + 1
    targets: Array  # int32
    weights: Array  # float64, a row's weights over its total
    totals: Array  # float64 per row: the sum of its (rounded) weights


@dataclass(frozen=True, slots=True)
class Links:
    """What the rows being derived import: per row, the rows its imports reach (references go
    to those) and the rows it imports directly (an edge each), ascending; and whether compound
    names weigh more. The empty default derives rows from references alone."""

    reach: dict[int, Array] = field(default_factory=dict)  # row -> rows (int64)
    imports: dict[int, tuple[Array, Array]] = field(default_factory=dict)  # row -> (rows, weights)
    specific: bool = False


NO_LINKS = Links()


def derive_rows(table: TagTable, rows: Array, links: Links = NO_LINKS, each: Each = map) -> Edges:
    """The out-edges of `rows` (ascending) as their own CSR table, a chunk of rows at a time
    (`each(derive, chunks)`: a thread pool's `map` derives two at once, numpy letting go of the
    interpreter in its big steps). Deriving every row looks up every reference's group: the
    table keeps them as its column (TagTable.groups: the first map's request searched them
    again, issue 22)."""
    definers = table.definers()
    found = None
    if table.r_group is None and len(rows) == len(table.paths):
        found = with_room(len(table.r_key), np.int32)  # (each chunk writes its own entries)
    derive = partial(_derive_chunk, table, definers, links=links, found=found)
    parts = list(
        each(derive, [rows[s : s + ROWS_PER_CHUNK] for s in range(0, len(rows), ROWS_PER_CHUNK)])
    )
    if found is not None:
        table.r_group = found
    lengths = [p[0] for p in parts] or [np.zeros(0, dtype=np.int64)]
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(np.concatenate(lengths), out=offsets[1:])

    def joined(i: int, dtype: Any) -> Array:  # with room for a change's rows (`replaced`)
        out = with_room(sum(len(p[i]) for p in parts), dtype)
        return np.concatenate([p[i] for p in parts], out=out) if parts else out

    return Edges(offsets, joined(1, np.int32), joined(2, np.float64), joined(3, np.float64))


def _derive_chunk(table: TagTable, definers_of: tuple[Array, Array, Array], rows: Array,
                  links: Links, found: Array | None) -> tuple[Array, Array, Array, Array]:  # fmt: skip
    """(entries per row, targets, normalized weights, row totals) of some rows. Each row's
    terms are summed in the order of its references (by key), then its imports, per target
    (by row): the same whichever rows are derived with it."""
    starts, ends = table.r_off[rows], table.r_off[rows + 1]
    counts = ends - starts
    entry = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    source = np.repeat(np.arange(len(rows)), counts)
    ref_keys = table.r_key[entry]
    groups, group_starts, definer_rows = definers_of
    group, known = _looked_up(groups, ref_keys)
    if found is not None:  # (the references' group column: -1 for a name nobody defines)
        found[entry] = np.where(known, group, -1)
    group[~known] = len(groups)  # no definers: the empty run at the end
    low = group_starts[group].astype(np.int64)
    definers = np.where(known, group_starts[np.minimum(group + 1, len(groups))] - low, 0)
    del group, known
    reach, codes = _reach_codes(links, rows, len(table.paths))
    keep = (definers >= 1) & (
        (definers <= MAX_DEFINERS) | (reach[source] & (definers <= MAX_RESOLVED))
    )
    low, definers, source = low[keep], definers[keep], source[keep]
    keys = ref_keys[keep]
    scale = np.where(keys & np.uint64(1), 0.1, 1.0)
    if links.specific:
        scale *= np.where(keys & np.uint64(2), SPECIFIC_WEIGHT, 1.0)
    base = scale * np.sqrt(table.r_count[entry[keep]].astype(np.float64))
    spread = np.repeat(low - np.cumsum(definers) + definers, definers) + np.arange(definers.sum())
    target = definer_rows[spread]
    of = np.repeat(np.arange(len(definers)), definers)  # each spread entry's reference
    source = source[of]
    code = rows[source].astype(np.int64) * len(table.paths) + target
    chosen, share = _resolved(codes, code, of, definers, len(table.paths))
    term = (base / share)[of]
    target, source, term = target[chosen], source[chosen], term[chosen]
    if links.imports:  # after the references: a pair's import term is summed last
        target, source, term = _with_imports(links, rows, target, source, term)
    own = target != rows[source]
    target, source, term = target[own], source[own], term[own]
    pair = source.astype(np.int64) * len(table.paths) + target  # (source, target) in order
    order = np.argsort(pair, kind="stable")  # stable: a pair's terms stay in reference order
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


def _looked_up(groups: Array, keys: Array) -> tuple[Array, Array]:
    """Where each key is among the sorted `groups`, and whether it is there."""
    group: Array = np.searchsorted(groups, keys)
    known: Array = group < len(groups)
    known[known] = groups[group[known]] == keys[known]
    return group, known


def _resolved(codes: Array, code: Array, of: Array, definers: Array, n: int) -> tuple[Array, Array]:
    """Which (reference, definer) pairs (`code`: row * n + definer, `of`: the reference) stay,
    and each reference's share: its definers, or those its file's imports reach (`codes`,
    sorted), which then weigh RESOLVED_WEIGHT."""
    if not len(codes):
        return np.ones(len(of), dtype=bool), definers
    if n * n <= DENSE_PAIRS:  # a flag for every pair of files: one look each
        reached = np.zeros(n * n, dtype=bool)
        reached[codes] = True
        inside = reached[code]
    else:
        at = np.minimum(np.searchsorted(codes, code), len(codes) - 1)
        inside = codes[at] == code
    hits = np.bincount(of, weights=inside, minlength=len(definers))
    resolved = hits > 0
    chosen = np.where(resolved[of], inside, definers[of] <= MAX_DEFINERS)
    return chosen, np.where(resolved, hits * (1.0 / RESOLVED_WEIGHT), definers)


def _with_imports(
    links: Links, rows: Array, target: Array, source: Array, term: Array
) -> tuple[Array, Array, Array]:
    """The terms with an edge to each module a row imports appended."""
    extra = [(k, links.imports[r]) for k, r in enumerate(rows.tolist()) if r in links.imports]
    if not extra:
        return target, source, term
    return (
        np.concatenate([target, *(t for _, (t, _w) in extra)]),
        np.concatenate([source, *(np.full(len(t), k) for k, (t, _w) in extra)]),
        np.concatenate([term, *(IMPORT_WEIGHT * w for _, (_t, w) in extra)]),
    )


def _reach_codes(links: Links, rows: Array, n: int) -> tuple[Array, Array]:
    """Which of `rows` have imports that reach files (a flag per row), and the (row, reached)
    pairs as sorted codes row * n + reached."""
    flags = np.zeros(len(rows), dtype=bool)
    found: list[Array] = []
    for k, row in enumerate(rows.tolist()):
        reached = links.reach.get(row)
        if reached is not None and len(reached):
            flags[k] = True
            found.append(np.int64(row) * n + reached.astype(np.int64))
    codes = np.sort(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)
    return flags, codes


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
    """`edges` with the given rows (ascending) replaced by those of `fresh`, within the
    columns' buffers where they fit (`edges` shares them: it is not to be read again)."""
    runs: list[Any] = []
    done = 0
    for k, row in enumerate(rows.tolist()):
        runs.append((done, row))
        a, b = fresh.offsets[k], fresh.offsets[k + 1]
        runs.append((fresh.targets[a:b], fresh.weights[a:b]))
        done = row + 1
    runs.append((done, len(edges.totals)))
    targets = splice_in_place(edges.offsets, edges.targets, runs, 0)  # (`edges` is spent)
    edges.targets = None  # (copied when it outgrew its room: the old column goes first)
    weights = splice_in_place(edges.offsets, edges.weights, runs, 1)
    totals = edges.totals.copy()
    totals[rows] = fresh.totals
    return Edges(splice_offsets(edges.offsets, runs), targets, weights, totals)


def name_flow(t: TagTable, edges: Edges, file_rank: Array, needed: Places) -> Array:
    """The rank flowing to the names asked for (`needed`: their groups, each one's figure at
    its place among them) along the references that carry flow: file rank x
    sqrt(occurrences) x the name's scale / the file's total, summed in reference order;
    worked out a block of references at a time at each rank (kept, the weights would hold 23
    MiB on the kernel), into one figure per asked group (rounded after: 2 x 8 bytes for each
    of the kernel's 2.2 million names, issue 22; and no column of places as long as the
    groups, 8.8 MB there)."""
    group_weight = np.zeros(needed.size)
    if not needed.size:
        return group_weight
    starts = t.definers()[1]
    for start in range(0, len(t.r_key), FLOW_BLOCK):
        part = t.r_group[start : start + FLOW_BLOCK]
        hit = needed.has(part)
        at = start + np.flatnonzero(hit)
        rows = np.searchsorted(t.r_off, at, side="right") - 1
        group = part[hit]
        definers = starts[group + 1] - starts[group]  # (every asked group is defined)
        keep = (definers <= MAX_DEFINERS) & (edges.totals[rows] > 0)
        group, at = group[keep], at[keep]
        place = needed.place(group)
        scale = np.where(t.r_key[at] & np.uint64(1), 0.1, 1.0)
        scale /= definers[keep]
        flow = np.sqrt(t.r_count[at].astype(np.float64))
        flow *= scale
        flow /= edges.totals[rows[keep]]
        flow *= file_rank[rows[keep]]
        np.add.at(group_weight, place, flow)
    return group_weight


def same_row(t: TagTable, row: int, new: PackedTags) -> bool:
    """Whether file `row`'s definitions, references and (made: `words_made`) names' words
    are `new`'s."""
    d, r, w = (slice(o[row], o[row + 1]) for o in (t.d_off, t.r_off, t.w_off))
    pairs = [(t.keys_at(d.start, d.stop), new.def_keys), (t.d_line[d], new.def_lines),
             (t.r_key[r], new.ref_keys), (t.r_count[r], new.ref_counts)]  # fmt: skip
    if new.words_made:
        pairs += [(t.w_key[w], new.word_keys), (t.w_count[w], new.word_counts)]
    return all(np.array_equal(a, b) for a, b in pairs)


def referrers(t: TagTable, keys: Array) -> Array:
    """Rows of the files that refer to any of `keys` (none: none)."""
    hits = found_at(t.r_key, keys)
    return np.unique(np.searchsorted(t.r_off, hits, side="right") - 1)
